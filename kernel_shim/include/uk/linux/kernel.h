/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_KERNEL_H
#define UK_LINUX_KERNEL_H

#include <climits>
#include <cstdio>

#include <uk/linux/build_bug.h>
#include <uk/linux/compiler.h>
#include <uk/linux/container_of.h>
#include <uk/linux/err.h>
#include <uk/linux/log2.h>
#include <uk/linux/minmax.h>
#include <uk/linux/printk.h>
#include <uk/linux/types.h>

#define ARRAY_SIZE(arr) (sizeof(arr) / sizeof((arr)[0]))

#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define DIV_ROUND_UP_ULL(ll, d) DIV_ROUND_UP((unsigned long long)(ll), (d))
#define DIV_ROUND_CLOSEST(x, d) (((x) + ((d) / 2)) / (d))
#define __round_mask(x, y) ((__typeof__(x))((y)-1))
#define round_up(x, y) ((((x)-1) | __round_mask(x, y)) + 1)
#define round_down(x, y) ((x) & ~__round_mask(x, y))
/*
 * Statement expressions, as in include/linux/math.h: each argument is read
 * once, and a call whose value is dropped draws no unused-value warning.
 */
#define roundup(x, y)                                                    \
	({                                                               \
		__typeof__(y) __roundup_y = (y);                         \
		(((x) + (__roundup_y - 1)) / __roundup_y) * __roundup_y; \
	})
#define rounddown(x, y)                                \
	({                                             \
		__typeof__(x) __rounddown_x = (x);     \
		__rounddown_x - (__rounddown_x % (y)); \
	})
#define ALIGN(x, a) (((x) + ((__typeof__(x))(a)-1)) & ~((__typeof__(x))(a)-1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a)-1))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a)-1)) == 0)
#define PTR_ALIGN(p, a) ((__typeof__(p))ALIGN((unsigned long)(p), (a)))
#define BIT(nr) (1UL << (nr))
#define BIT_ULL(nr) (1ULL << (nr))
#define GENMASK(h, l) (((~0UL) - (1UL << (l)) + 1) & (~0UL >> (BITS_PER_LONG - 1 - (h))))
#define upper_32_bits(n) ((u32)(((n) >> 16) >> 16))
#define lower_32_bits(n) ((u32)((n)&0xffffffff))

#define U8_MAX ((u8)~0U)
#define U16_MAX ((u16)~0U)
#define U32_MAX ((u32)~0U)
#define U64_MAX ((u64)~0ULL)
#define S32_MAX ((s32)(U32_MAX >> 1))
#define S64_MAX ((s64)(U64_MAX >> 1))

/* The data direction of an I/O, as the kernel's generic code spells it. */
#define READ 0
#define WRITE 1

#define SZ_1K 0x00000400
#define SZ_4K 0x00001000
#define SZ_64K 0x00010000
#define SZ_1M 0x00100000
#define SZ_1G 0x40000000

#define might_sleep() ::uk::might_sleep_check(__FILE__, __LINE__)
#define might_sleep_if(cond)           \
	do {                           \
		if (cond)              \
			might_sleep(); \
	} while (0)
#define cond_resched() ::uk::cond_resched_impl()

namespace uk
{
void might_sleep_check(const char *file, int line);
int cond_resched_impl();
} // namespace uk

#endif /* UK_LINUX_KERNEL_H */
