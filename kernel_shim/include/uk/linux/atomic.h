/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * atomic_t, atomic_long_t and atomic64_t with the kernel's operation set and
 * ordering rules (Documentation/atomic_t.txt): plain RMW ops and the
 * _relaxed forms are unordered, value-returning ops are fully ordered, and
 * _acquire/_release are what they say. Everything goes through the
 * compiler's __atomic builtins so ThreadSanitizer sees each access.
 */
#ifndef UK_LINUX_ATOMIC_H
#define UK_LINUX_ATOMIC_H

#include <type_traits>

#include <uk/linux/barrier.h>
#include <uk/linux/types.h>

typedef struct {
	int counter;
} atomic_t;

typedef struct {
	s64 counter;
} atomic64_t;

typedef struct {
	long counter;
} atomic_long_t;

/* clang-format off */
#define ATOMIC_INIT(i) { (i) }
#define ATOMIC64_INIT(i) { (i) }
#define ATOMIC_LONG_INIT(i) { (i) }
/* clang-format on */

#define __UK_RLX __ATOMIC_RELAXED
#define __UK_ACQ __ATOMIC_ACQUIRE
#define __UK_REL __ATOMIC_RELEASE
#define __UK_FULL __ATOMIC_SEQ_CST

/* One block of operations for one atomic type. */
/*
 * Counter arithmetic wraps, as the kernel's does (it builds with
 * -fno-strict-overflow): percpu_ref's biased count passes LONG_MAX.
 */
template <typename T> static __always_inline T __uk_wrap_add(T a, T b)
{
	using U = std::make_unsigned_t<T>;
	return (T)((U)a + (U)b);
}

#define __UK_ATOMIC_OPS(pfx, atype, T)                                                           \
	static __always_inline T pfx##_read(const atype *v)                                      \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_load_n(&v->counter, __UK_RLX);           \
	}                                                                                        \
	static __always_inline T pfx##_read_acquire(const atype *v)                              \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_load_n(&v->counter, __UK_ACQ);           \
	}                                                                                        \
	static __always_inline void pfx##_set(atype *v, T i)                                     \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_store_n(&v->counter, i, __UK_RLX);              \
	}                                                                                        \
	static __always_inline void pfx##_set_release(atype *v, T i)                             \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_store_n(&v->counter, i, __UK_REL);              \
	}                                                                                        \
	__UK_ATOMIC_ARITH(pfx, atype, T, add, +)                                                 \
	__UK_ATOMIC_ARITH(pfx, atype, T, sub, -)                                                 \
	__UK_ATOMIC_BITOP(pfx, atype, T, and, and)                                               \
	__UK_ATOMIC_BITOP(pfx, atype, T, or, or)                                                 \
	__UK_ATOMIC_BITOP(pfx, atype, T, xor, xor)                                               \
	static __always_inline void pfx##_andnot(T i, atype *v)                                  \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_fetch_and(&v->counter, ~i, __UK_RLX);           \
	}                                                                                        \
	static __always_inline T pfx##_fetch_andnot(T i, atype *v)                               \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_fetch_and(&v->counter, ~i, __UK_FULL);   \
	}                                                                                        \
	static __always_inline T pfx##_fetch_andnot_relaxed(T i, atype *v)                       \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_fetch_and(&v->counter, ~i, __UK_RLX);    \
	}                                                                                        \
	static __always_inline T pfx##_fetch_andnot_acquire(T i, atype *v)                       \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_fetch_and(&v->counter, ~i, __UK_ACQ);    \
	}                                                                                        \
	static __always_inline T pfx##_fetch_andnot_release(T i, atype *v)                       \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_fetch_and(&v->counter, ~i, __UK_REL);    \
	}                                                                                        \
	static __always_inline void pfx##_inc(atype *v)                                          \
	{                                                                                        \
		pfx##_add(1, v);                                                                 \
	}                                                                                        \
	static __always_inline void pfx##_dec(atype *v)                                          \
	{                                                                                        \
		pfx##_sub(1, v);                                                                 \
	}                                                                                        \
	static __always_inline T pfx##_inc_return(atype *v)                                      \
	{                                                                                        \
		return pfx##_add_return(1, v);                                                   \
	}                                                                                        \
	static __always_inline T pfx##_inc_return_relaxed(atype *v)                              \
	{                                                                                        \
		return pfx##_add_return_relaxed(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_inc_return_acquire(atype *v)                              \
	{                                                                                        \
		return pfx##_add_return_acquire(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_inc_return_release(atype *v)                              \
	{                                                                                        \
		return pfx##_add_return_release(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_dec_return(atype *v)                                      \
	{                                                                                        \
		return pfx##_sub_return(1, v);                                                   \
	}                                                                                        \
	static __always_inline T pfx##_dec_return_relaxed(atype *v)                              \
	{                                                                                        \
		return pfx##_sub_return_relaxed(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_dec_return_acquire(atype *v)                              \
	{                                                                                        \
		return pfx##_sub_return_acquire(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_dec_return_release(atype *v)                              \
	{                                                                                        \
		return pfx##_sub_return_release(1, v);                                           \
	}                                                                                        \
	static __always_inline T pfx##_fetch_inc(atype *v)                                       \
	{                                                                                        \
		return pfx##_fetch_add(1, v);                                                    \
	}                                                                                        \
	static __always_inline T pfx##_fetch_inc_relaxed(atype *v)                               \
	{                                                                                        \
		return pfx##_fetch_add_relaxed(1, v);                                            \
	}                                                                                        \
	static __always_inline T pfx##_fetch_dec(atype *v)                                       \
	{                                                                                        \
		return pfx##_fetch_sub(1, v);                                                    \
	}                                                                                        \
	static __always_inline T pfx##_fetch_dec_relaxed(atype *v)                               \
	{                                                                                        \
		return pfx##_fetch_sub_relaxed(1, v);                                            \
	}                                                                                        \
	static __always_inline bool pfx##_sub_and_test(T i, atype *v)                            \
	{                                                                                        \
		return pfx##_sub_return(i, v) == 0;                                              \
	}                                                                                        \
	static __always_inline bool pfx##_dec_and_test(atype *v)                                 \
	{                                                                                        \
		return pfx##_dec_return(v) == 0;                                                 \
	}                                                                                        \
	static __always_inline bool pfx##_inc_and_test(atype *v)                                 \
	{                                                                                        \
		return pfx##_inc_return(v) == 0;                                                 \
	}                                                                                        \
	static __always_inline bool pfx##_add_negative(T i, atype *v)                            \
	{                                                                                        \
		return pfx##_add_return(i, v) < 0;                                               \
	}                                                                                        \
	static __always_inline T pfx##_xchg(atype *v, T n)                                       \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_exchange_n(&v->counter, n, __UK_FULL);   \
	}                                                                                        \
	static __always_inline T pfx##_xchg_relaxed(atype *v, T n)                               \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_exchange_n(&v->counter, n, __UK_RLX);    \
	}                                                                                        \
	static __always_inline T pfx##_xchg_acquire(atype *v, T n)                               \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_exchange_n(&v->counter, n, __UK_ACQ);    \
	}                                                                                        \
	static __always_inline T pfx##_xchg_release(atype *v, T n)                               \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_exchange_n(&v->counter, n, __UK_REL);    \
	}                                                                                        \
	/* cmpxchg is fully ordered only when it succeeds, as in the kernel. */                  \
	static __always_inline T pfx##_cmpxchg(atype *v, T old, T n)                             \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_compare_exchange_n(&v->counter, &old, n, false, \
								    __UK_FULL, __UK_RLX);        \
		return old;                                                                      \
	}                                                                                        \
	static __always_inline T pfx##_cmpxchg_relaxed(atype *v, T old, T n)                     \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_compare_exchange_n(&v->counter, &old, n, false, \
								    __UK_RLX, __UK_RLX);         \
		return old;                                                                      \
	}                                                                                        \
	static __always_inline T pfx##_cmpxchg_acquire(atype *v, T old, T n)                     \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_compare_exchange_n(&v->counter, &old, n, false, \
								    __UK_ACQ, __UK_RLX);         \
		return old;                                                                      \
	}                                                                                        \
	static __always_inline T pfx##_cmpxchg_release(atype *v, T old, T n)                     \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_compare_exchange_n(&v->counter, &old, n, false, \
								    __UK_REL, __UK_RLX);         \
		return old;                                                                      \
	}                                                                                        \
	static __always_inline bool pfx##_try_cmpxchg(atype *v, T *old, T n)                     \
	{                                                                                        \
		return __uk_explore("atomic"),                                                   \
		       __atomic_compare_exchange_n(&v->counter, old, n, false, __UK_FULL,        \
						   __UK_RLX);                                    \
	}                                                                                        \
	static __always_inline bool pfx##_try_cmpxchg_relaxed(atype *v, T *old, T n)             \
	{                                                                                        \
		return __uk_explore("atomic"),                                                   \
		       __atomic_compare_exchange_n(&v->counter, old, n, false, __UK_RLX,         \
						   __UK_RLX);                                    \
	}                                                                                        \
	static __always_inline bool pfx##_try_cmpxchg_acquire(atype *v, T *old, T n)             \
	{                                                                                        \
		return __uk_explore("atomic"),                                                   \
		       __atomic_compare_exchange_n(&v->counter, old, n, false, __UK_ACQ,         \
						   __UK_RLX);                                    \
	}                                                                                        \
	static __always_inline bool pfx##_try_cmpxchg_release(atype *v, T *old, T n)             \
	{                                                                                        \
		return __uk_explore("atomic"),                                                   \
		       __atomic_compare_exchange_n(&v->counter, old, n, false, __UK_REL,         \
						   __UK_RLX);                                    \
	}                                                                                        \
	/* Add @a unless the counter is @u; return the old value. */                             \
	static __always_inline T pfx##_fetch_add_unless(atype *v, T a, T u)                      \
	{                                                                                        \
		T c = pfx##_read(v);                                                             \
		do {                                                                             \
			if (unlikely(c == u))                                                    \
				break;                                                           \
		} while (!pfx##_try_cmpxchg(v, &c, __uk_wrap_add<T>(c, a)));                     \
		return c;                                                                        \
	}                                                                                        \
	static __always_inline bool pfx##_add_unless(atype *v, T a, T u)                         \
	{                                                                                        \
		return pfx##_fetch_add_unless(v, a, u) != u;                                     \
	}                                                                                        \
	static __always_inline bool pfx##_inc_not_zero(atype *v)                                 \
	{                                                                                        \
		return pfx##_add_unless(v, 1, 0);                                                \
	}                                                                                        \
	static __always_inline bool pfx##_dec_not_zero(atype *v)                                 \
	{                                                                                        \
		return pfx##_add_unless(v, -1, 0);                                               \
	}                                                                                        \
	static __always_inline bool pfx##_inc_unless_negative(atype *v)                          \
	{                                                                                        \
		T c = pfx##_read(v);                                                             \
		do {                                                                             \
			if (unlikely(c < 0))                                                     \
				return false;                                                    \
		} while (!pfx##_try_cmpxchg(v, &c, __uk_wrap_add<T>(c, 1)));                     \
		return true;                                                                     \
	}                                                                                        \
	static __always_inline bool pfx##_dec_unless_positive(atype *v)                          \
	{                                                                                        \
		T c = pfx##_read(v);                                                             \
		do {                                                                             \
			if (unlikely(c > 0))                                                     \
				return false;                                                    \
		} while (!pfx##_try_cmpxchg(v, &c, __uk_wrap_add<T>(c, -1)));                    \
		return true;                                                                     \
	}                                                                                        \
	static __always_inline T pfx##_dec_if_positive(atype *v)                                 \
	{                                                                                        \
		T dec, c = pfx##_read(v);                                                        \
		do {                                                                             \
			dec = __uk_wrap_add<T>(c, -1);                                           \
			if (unlikely(dec < 0))                                                   \
				break;                                                           \
		} while (!pfx##_try_cmpxchg(v, &c, dec));                                        \
		return dec;                                                                      \
	}

#define __UK_ATOMIC_ARITH(pfx, atype, T, op, sym)                                                \
	static __always_inline void pfx##_##op(T i, atype *v)                                    \
	{                                                                                        \
		__uk_explore("atomic"), __atomic_fetch_##op(&v->counter, i, __UK_RLX);           \
	}                                                                                        \
	static __always_inline T pfx##_##op##_return(T i, atype *v)                              \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_##op##_fetch(&v->counter, i, __UK_FULL); \
	}                                                                                        \
	static __always_inline T pfx##_##op##_return_relaxed(T i, atype *v)                      \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_##op##_fetch(&v->counter, i, __UK_RLX);  \
	}                                                                                        \
	static __always_inline T pfx##_##op##_return_acquire(T i, atype *v)                      \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_##op##_fetch(&v->counter, i, __UK_ACQ);  \
	}                                                                                        \
	static __always_inline T pfx##_##op##_return_release(T i, atype *v)                      \
	{                                                                                        \
		return __uk_explore("atomic"), __atomic_##op##_fetch(&v->counter, i, __UK_REL);  \
	}                                                                                        \
	__UK_ATOMIC_FETCH(pfx, atype, T, op)

#define __UK_ATOMIC_BITOP(pfx, atype, T, op, bop)                                       \
	static __always_inline void pfx##_##op(T i, atype *v)                           \
	{                                                                               \
		__uk_explore("atomic"), __atomic_fetch_##bop(&v->counter, i, __UK_RLX); \
	}                                                                               \
	__UK_ATOMIC_FETCH(pfx, atype, T, op)

#define __UK_ATOMIC_FETCH(pfx, atype, T, op)                                                   \
	static __always_inline T pfx##_fetch_##op(T i, atype *v)                               \
	{                                                                                      \
		return __uk_explore("atomic"), __atomic_fetch_##op(&v->counter, i, __UK_FULL); \
	}                                                                                      \
	static __always_inline T pfx##_fetch_##op##_relaxed(T i, atype *v)                     \
	{                                                                                      \
		return __uk_explore("atomic"), __atomic_fetch_##op(&v->counter, i, __UK_RLX);  \
	}                                                                                      \
	static __always_inline T pfx##_fetch_##op##_acquire(T i, atype *v)                     \
	{                                                                                      \
		return __uk_explore("atomic"), __atomic_fetch_##op(&v->counter, i, __UK_ACQ);  \
	}                                                                                      \
	static __always_inline T pfx##_fetch_##op##_release(T i, atype *v)                     \
	{                                                                                      \
		return __uk_explore("atomic"), __atomic_fetch_##op(&v->counter, i, __UK_REL);  \
	}

__UK_ATOMIC_OPS(atomic, atomic_t, int)
__UK_ATOMIC_OPS(atomic64, atomic64_t, s64)
__UK_ATOMIC_OPS(atomic_long, atomic_long_t, long)

#define atomic_cond_read_acquire(v, c) smp_cond_load_acquire(&(v)->counter, (c))
#define atomic_cond_read_relaxed(v, c) smp_cond_load_relaxed(&(v)->counter, (c))

/*
 * smp_cond_load_{relaxed,acquire}(ptr, cond_expr): spin until cond_expr,
 * which may use VAL, the value just loaded, holds.
 */
#define smp_cond_load_relaxed(ptr, cond_expr)                             \
	({                                                                \
		__typeof__(ptr) __PTR = (ptr);                            \
		__typeof__(*ptr) VAL;                                     \
		for (;;) {                                                \
			VAL = (__uk_explore("smp_cond_load"),             \
			       __atomic_load_n(__PTR, __ATOMIC_RELAXED)); \
			if (cond_expr)                                    \
				break;                                    \
			cpu_relax();                                      \
		}                                                         \
		VAL;                                                      \
	})
#define smp_cond_load_acquire(ptr, cond_expr)                             \
	({                                                                \
		__typeof__(ptr) __PTR = (ptr);                            \
		__typeof__(*ptr) VAL;                                     \
		for (;;) {                                                \
			VAL = (__uk_explore("smp_cond_load"),             \
			       __atomic_load_n(__PTR, __ATOMIC_ACQUIRE)); \
			if (cond_expr)                                    \
				break;                                    \
			cpu_relax();                                      \
		}                                                         \
		VAL;                                                      \
	})

/* cmpxchg()/xchg() and friends on plain words (fully ordered unless named). */
#define xchg(ptr, x) (__uk_explore("xchg"), __atomic_exchange_n((ptr), (x), __ATOMIC_SEQ_CST))
#define xchg_relaxed(ptr, x) \
	(__uk_explore("xchg"), __atomic_exchange_n((ptr), (x), __ATOMIC_RELAXED))
#define xchg_acquire(ptr, x) \
	(__uk_explore("xchg"), __atomic_exchange_n((ptr), (x), __ATOMIC_ACQUIRE))
#define xchg_release(ptr, x) \
	(__uk_explore("xchg"), __atomic_exchange_n((ptr), (x), __ATOMIC_RELEASE))
#define __uk_cmpxchg(ptr, o, n, s)                                                             \
	({                                                                                     \
		__typeof__(*(ptr)) __old = (o);                                                \
		__uk_explore("atomic"), __atomic_compare_exchange_n((ptr), &__old, (n), false, \
								    (s), __ATOMIC_RELAXED);    \
		__old;                                                                         \
	})
#define cmpxchg(ptr, o, n) __uk_cmpxchg(ptr, o, n, __ATOMIC_SEQ_CST)
#define cmpxchg_relaxed(ptr, o, n) __uk_cmpxchg(ptr, o, n, __ATOMIC_RELAXED)
#define cmpxchg_acquire(ptr, o, n) __uk_cmpxchg(ptr, o, n, __ATOMIC_ACQUIRE)
#define cmpxchg_release(ptr, o, n) __uk_cmpxchg(ptr, o, n, __ATOMIC_RELEASE)
#define cmpxchg64(ptr, o, n) cmpxchg(ptr, o, n)
#define try_cmpxchg(ptr, po, n)  \
	(__uk_explore("atomic"), \
	 __atomic_compare_exchange_n((ptr), (po), (n), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
#define try_cmpxchg_relaxed(ptr, po, n) \
	(__uk_explore("atomic"),        \
	 __atomic_compare_exchange_n((ptr), (po), (n), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
#define try_cmpxchg_acquire(ptr, po, n) \
	(__uk_explore("atomic"),        \
	 __atomic_compare_exchange_n((ptr), (po), (n), false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
#define try_cmpxchg_release(ptr, po, n) \
	(__uk_explore("atomic"),        \
	 __atomic_compare_exchange_n((ptr), (po), (n), false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))

#endif /* UK_LINUX_ATOMIC_H */
