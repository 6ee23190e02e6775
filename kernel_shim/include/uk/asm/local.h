/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * local_t (arch/x86/include/asm/local.h): a counter that one CPU updates
 * and any CPU may read. On x86 an update is a single instruction, atomic
 * against interrupts on the same CPU; here a relaxed atomic read-modify-
 * write gives the same guarantee against the interrupt work of a virtual
 * CPU, which may run on another host thread.
 */
#ifndef UK_ASM_LOCAL_H
#define UK_ASM_LOCAL_H

#include <uk/linux/compiler.h>

typedef struct {
	long a;
} local_t;

static __always_inline long local_read(const local_t *l)
{
	return __atomic_load_n(&l->a, __ATOMIC_RELAXED);
}

static __always_inline void local_add(long i, local_t *l)
{
	__atomic_fetch_add(&l->a, i, __ATOMIC_RELAXED);
}

static __always_inline void local_sub(long i, local_t *l)
{
	__atomic_fetch_sub(&l->a, i, __ATOMIC_RELAXED);
}

static __always_inline void local_inc(local_t *l)
{
	local_add(1, l);
}

static __always_inline void local_dec(local_t *l)
{
	local_sub(1, l);
}

#endif /* UK_ASM_LOCAL_H */
