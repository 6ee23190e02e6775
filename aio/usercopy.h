/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-memory access for the aio port (arch/x86/include/asm/uaccess.h):
 * access_ok() against the x86-64 TASK_SIZE_MAX, and copies that return the
 * number of bytes NOT copied (0 on success) instead of crashing.
 */
#ifndef UK_AIO_USERCOPY_H
#define UK_AIO_USERCOPY_H

#include <uk/linux/compiler.h>

#define __user
#define TASK_SIZE_MAX 0x00007ffffffff000UL

namespace uk::aio
{
void usercopy_init();
}

static inline bool access_ok(const void *addr, unsigned long size)
{
	unsigned long a = (unsigned long)addr;

	return size <= TASK_SIZE_MAX && a <= TASK_SIZE_MAX - size;
}

unsigned long copy_from_user(void *to, const void __user *from, unsigned long n);
unsigned long copy_to_user(void __user *to, const void *from, unsigned long n);

#define get_user(x, ptr)                                                                   \
	({                                                                                 \
		__typeof__(*(ptr)) __gu_v;                                                 \
		int __gu_e = copy_from_user(&__gu_v, (ptr), sizeof(__gu_v)) ? -EFAULT : 0; \
		(x) = __gu_e ? (__typeof__(*(ptr)))0 : __gu_v;                             \
		__gu_e;                                                                    \
	})

#define put_user(x, ptr)                                                    \
	({                                                                  \
		__typeof__(*(ptr)) __pu_v = (x);                            \
		copy_to_user((ptr), &__pu_v, sizeof(__pu_v)) ? -EFAULT : 0; \
	})

#endif /* UK_AIO_USERCOPY_H */
