/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * 64-bit division helpers (include/linux/math64.h and the 64-bit form of
 * asm-generic/div64.h).
 */
#ifndef UK_LINUX_MATH64_H
#define UK_LINUX_MATH64_H

#include <uk/linux/types.h>

/*
 * do_div(n, base): divides the u64 lvalue @n by the 32-bit @base in place
 * and yields the remainder. @n is evaluated more than once, as in Linux.
 */
#define do_div(n, base)                                  \
	({                                               \
		u32 __do_div_base = (base);              \
		u32 __do_div_rem;                        \
		__do_div_rem = (u64)(n) % __do_div_base; \
		(n) = (u64)(n) / __do_div_base;          \
		__do_div_rem;                            \
	})

/* The u64 quotient of @dividend by the 32-bit @divisor. */
static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

#endif /* UK_LINUX_MATH64_H */
