/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_TYPES_H
#define UK_LINUX_TYPES_H

#include <cstdint>
#include <linux/types.h> /* the host's UAPI __u8..__u64, __s8..__s64 */
#include <sys/types.h>

#include <uk/linux/compiler.h>

/* As in the kernel: u64 is unsigned long long, so %llu prints it. */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

typedef unsigned int gfp_t;
typedef u64 sector_t;
typedef unsigned long kernel_ulong_t;
typedef long long __kernel_loff_t;
typedef s64 ktime_t;

#define BITS_PER_LONG 64
#define BITS_PER_LONG_LONG 64
#define BITS_PER_BYTE 8

#ifndef PAGE_SHIFT
#define PAGE_SHIFT 12
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#endif
#ifndef PAGE_MASK
#define PAGE_MASK (~(PAGE_SIZE - 1))
#endif

#endif /* UK_LINUX_TYPES_H */
