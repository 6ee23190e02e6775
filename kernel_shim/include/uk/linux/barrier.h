/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory barriers (asm/barrier.h). They map onto C++ fences and atomic
 * accesses so that both the compiler and ThreadSanitizer see them.
 * Fences on their own are invisible to ThreadSanitizer: code whose ordering
 * rests on smp_wmb()/smp_rmb() pairs alone should also use the acquire/
 * release forms (smp_load_acquire/smp_store_release) where the kernel
 * allows it, or annotate.
 */
#ifndef UK_LINUX_BARRIER_H
#define UK_LINUX_BARRIER_H

#include <uk/linux/compiler.h>

#define mb() (__uk_explore("mb"), __atomic_thread_fence(__ATOMIC_SEQ_CST))
#define rmb() (__uk_explore("rmb"), __atomic_thread_fence(__ATOMIC_ACQUIRE))
#define wmb() (__uk_explore("wmb"), __atomic_thread_fence(__ATOMIC_RELEASE))
#define smp_mb() (__uk_explore("smp_mb"), __atomic_thread_fence(__ATOMIC_SEQ_CST))
#define smp_rmb() (__uk_explore("smp_rmb"), __atomic_thread_fence(__ATOMIC_ACQUIRE))
#define smp_wmb() (__uk_explore("smp_wmb"), __atomic_thread_fence(__ATOMIC_RELEASE))
/*
 * On x86 every atomic read-modify-write is a locked instruction, hence a full
 * barrier, so these only need to stop the compiler, as in the kernel's x86
 * definitions. (ThreadSanitizer models no fences either way.)
 */
#if defined(__x86_64__) || defined(__i386__)
#define smp_mb__before_atomic() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define smp_mb__after_atomic() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define smp_mb__before_atomic() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_mb__after_atomic() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
#define smp_mb__after_spinlock() \
	(__uk_explore("smp_mb__after_spinlock"), __atomic_thread_fence(__ATOMIC_SEQ_CST))
#define smp_mb__after_unlock_lock() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_acquire__after_ctrl_dep() __atomic_thread_fence(__ATOMIC_ACQUIRE)

#define smp_store_mb(var, value)                                     \
	do {                                                         \
		__uk_explore("smp_store_mb");                        \
		__atomic_store_n(&(var), (value), __ATOMIC_RELAXED); \
		smp_mb();                                            \
	} while (0)

#define smp_load_acquire(p) \
	(__uk_explore("smp_load_acquire"), __atomic_load_n((p), __ATOMIC_ACQUIRE))
#define smp_store_release(p, v) \
	(__uk_explore("smp_store_release"), __atomic_store_n((p), (v), __ATOMIC_RELEASE))

#define cpu_relax() (__uk_explore("~cpu_relax"), __builtin_ia32_pause())

#endif /* UK_LINUX_BARRIER_H */
