/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-CPU areas (include/linux/percpu.h, percpu-defs.h).
 *
 * As in the kernel, every CPU has a unit of the same layout, and a percpu
 * pointer is an address in unit 0: CPU n's copy lies n units further on.
 * Units are NR_CPUS x 16 MiB of reserved, demand-zero address space, so
 * copies of one variable never share a cacheline across CPUs.
 *
 * Single this_cpu_*() operations are relaxed atomic read-modify-writes on
 * the current CPU's copy: outside preempt/irq-disabled sections another
 * thread may be running on the same virtual CPU. Multi-step sequences on
 * this_cpu_ptr() data belong inside local_irq_save() or preempt_disable(),
 * which make the CPU exclusively the caller's, as the kernel requires.
 *
 * The one exception is memory allocated with __GFP_PCPU_COUNTER, which
 * lies in the upper half of each unit (PERCPU_COUNTER_BIT set): there
 * this_cpu_add() and friends are the kernel's single non-atomic add, done
 * as a restartable sequence on the host CPU's copy (<uk/shim/rseq.h>).
 */
#ifndef UK_LINUX_PERCPU_H
#define UK_LINUX_PERCPU_H

#include <new>

#include <uk/linux/compiler.h>
#include <uk/linux/gfp.h>
#include <uk/linux/smp.h>
#include <uk/linux/types.h>
#include <uk/shim/rseq.h>

#define PERCPU_UNIT_SHIFT 24
/* Set in the unit-0 address of __GFP_PCPU_COUNTER memory. */
#define PERCPU_COUNTER_BIT (1UL << (PERCPU_UNIT_SHIFT - 1))

namespace uk
{

void *percpu_alloc(size_t size, size_t align, gfp_t gfp);
void percpu_free(void *ptr);
/* Bytes of percpu memory handed out and not yet freed (one CPU's unit). */
size_t percpu_bytes_in_use();

template <typename T> T *percpu_define(size_t align = alignof(T))
{
	/* Lives as long as the program; every CPU's copy starts zeroed. */
	return static_cast<T *>(percpu_alloc(sizeof(T), align, 0));
}

static __always_inline void *percpu_cpu_addr(const void *ptr, int cpu)
{
	return (char *)ptr + ((size_t)cpu << PERCPU_UNIT_SHIFT);
}

/*
 * this_cpu_add(): a restartable add on the host CPU's copy for counter
 * memory, else an atomic add on the current CPU's copy.
 */
template <typename T> static __always_inline void this_cpu_add_op(T *pcp, T val)
{
	__uk_explore("this_cpu_add");
	if constexpr (sizeof(T) == sizeof(long)) {
		if (likely((uintptr_t)pcp & PERCPU_COUNTER_BIT)) {
			rseq_percpu_add((long *)pcp, (long)val);
			return;
		}
	}
	__atomic_fetch_add((T *)percpu_cpu_addr(pcp, current_cpu()), val, __ATOMIC_RELAXED);
}

} // namespace uk

static_assert(PERCPU_UNIT_SHIFT == ::uk::kRseqUnitShift);

#define DECLARE_PER_CPU(type, name) extern __typeof__(type) &name
#define DEFINE_PER_CPU(type, name) __typeof__(type) &name = *::uk::percpu_define<__typeof__(type)>()
#define DEFINE_PER_CPU_ALIGNED(type, name) \
	__typeof__(type) &name = *::uk::percpu_define<__typeof__(type)>(SMP_CACHE_BYTES)
#define DEFINE_PER_CPU_SHARED_ALIGNED(type, name) DEFINE_PER_CPU_ALIGNED(type, name)
#define DECLARE_PER_CPU_SHARED_ALIGNED(type, name) DECLARE_PER_CPU(type, name)

#define __alloc_percpu(size, align) \
	(::uk::any_ptr{ ::uk::percpu_alloc((size), (align), GFP_KERNEL) })
#define __alloc_percpu_gfp(size, align, gfp) \
	(::uk::any_ptr{ ::uk::percpu_alloc((size), (align), (gfp)) })
#define alloc_percpu(type) \
	((__typeof__(type) *)::uk::percpu_alloc(sizeof(type), alignof(type), GFP_KERNEL))
#define alloc_percpu_gfp(type, gfp) \
	((__typeof__(type) *)::uk::percpu_alloc(sizeof(type), alignof(type), (gfp)))
#define free_percpu(ptr) ::uk::percpu_free((void *)(ptr))

#define per_cpu_ptr(ptr, cpu) ((__typeof__(ptr))::uk::percpu_cpu_addr((ptr), (cpu)))
#define raw_cpu_ptr(ptr) per_cpu_ptr(ptr, raw_smp_processor_id())
#define this_cpu_ptr(ptr) raw_cpu_ptr(ptr)
#define per_cpu(var, cpu) (*per_cpu_ptr(&(var), (cpu)))
#define get_cpu_var(var)              \
	(*({                          \
		preempt_disable();    \
		this_cpu_ptr(&(var)); \
	}))
#define put_cpu_var(var) preempt_enable()
#define get_cpu_ptr(var)           \
	({                         \
		preempt_disable(); \
		this_cpu_ptr(var); \
	})
#define put_cpu_ptr(var) preempt_enable()

#define __uk_pcp(pcp) (this_cpu_ptr(&(pcp)))

#define this_cpu_read(pcp) (::uk::read_once(*__uk_pcp(pcp)))
#define this_cpu_write(pcp, val) (::uk::write_once(*__uk_pcp(pcp), (val)))
#define this_cpu_add(pcp, val) \
	(::uk::this_cpu_add_op<__typeof__(pcp)>(&(pcp), (__typeof__(pcp))(val)))
#define this_cpu_sub(pcp, val) \
	(::uk::this_cpu_add_op<__typeof__(pcp)>(&(pcp), -(__typeof__(pcp))(val)))
#define this_cpu_inc(pcp) this_cpu_add(pcp, 1)
#define this_cpu_dec(pcp) this_cpu_sub(pcp, 1)
#define this_cpu_and(pcp, val)                \
	((void)(__uk_explore("this_cpu_and"), \
		__atomic_fetch_and(__uk_pcp(pcp), (val), __ATOMIC_RELAXED)))
#define this_cpu_or(pcp, val)                \
	((void)(__uk_explore("this_cpu_or"), \
		__atomic_fetch_or(__uk_pcp(pcp), (val), __ATOMIC_RELAXED)))
#define this_cpu_add_return(pcp, val)         \
	(__uk_explore("this_cpu_add_return"), \
	 __atomic_add_fetch(__uk_pcp(pcp), (__typeof__(pcp))(val), __ATOMIC_RELAXED))
#define this_cpu_sub_return(pcp, val)         \
	(__uk_explore("this_cpu_sub_return"), \
	 __atomic_sub_fetch(__uk_pcp(pcp), (__typeof__(pcp))(val), __ATOMIC_RELAXED))
#define this_cpu_inc_return(pcp) this_cpu_add_return(pcp, 1)
#define this_cpu_dec_return(pcp) this_cpu_sub_return(pcp, 1)
#define this_cpu_xchg(pcp, nval)        \
	(__uk_explore("this_cpu_xchg"), \
	 __atomic_exchange_n(__uk_pcp(pcp), (nval), __ATOMIC_RELAXED))
#define this_cpu_cmpxchg(pcp, oval, nval)                                                         \
	({                                                                                        \
		__typeof__(pcp) __o = (oval);                                                     \
		__uk_explore("this_cpu_cmpxchg");                                                 \
		__atomic_compare_exchange_n(__uk_pcp(pcp), &__o, (nval), false, __ATOMIC_RELAXED, \
					    __ATOMIC_RELAXED);                                    \
		__o;                                                                              \
	})
#define this_cpu_try_cmpxchg(pcp, ovalp, nval)                                                \
	(__uk_explore("this_cpu_try_cmpxchg"),                                                \
	 __atomic_compare_exchange_n(__uk_pcp(pcp), (ovalp), (nval), false, __ATOMIC_RELAXED, \
				     __ATOMIC_RELAXED))

/* The __this_cpu and raw_cpu forms: same operations (see the note above). */
#define __this_cpu_read this_cpu_read
#define __this_cpu_write this_cpu_write
#define __this_cpu_add this_cpu_add
#define __this_cpu_sub this_cpu_sub
#define __this_cpu_inc this_cpu_inc
#define __this_cpu_dec this_cpu_dec
#define __this_cpu_add_return this_cpu_add_return
#define __this_cpu_inc_return this_cpu_inc_return
#define __this_cpu_dec_return this_cpu_dec_return
#define __this_cpu_xchg this_cpu_xchg
#define __this_cpu_cmpxchg this_cpu_cmpxchg
#define raw_cpu_read this_cpu_read
#define raw_cpu_write this_cpu_write
#define raw_cpu_add this_cpu_add
#define raw_cpu_sub this_cpu_sub
#define raw_cpu_inc this_cpu_inc
#define raw_cpu_dec this_cpu_dec
#define raw_cpu_add_return this_cpu_add_return
#define raw_cpu_xchg this_cpu_xchg
#define raw_cpu_cmpxchg this_cpu_cmpxchg

#endif /* UK_LINUX_PERCPU_H */
