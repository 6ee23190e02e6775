/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bit operations on unsigned long arrays. Atomic forms are unordered unless
 * they return a value (test_and_*: fully ordered), _lock is acquire and
 * _unlock is release; the __ forms are plain, non-atomic accesses.
 */
#ifndef UK_LINUX_BITOPS_H
#define UK_LINUX_BITOPS_H

#include <strings.h>

#include <uk/linux/barrier.h>
#include <uk/linux/types.h>

#define BIT_MASK(nr) (1UL << ((nr) % BITS_PER_LONG))
#define BIT_WORD(nr) ((nr) / BITS_PER_LONG)
#define BITS_TO_LONGS(nr) (((nr) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define BITS_TO_U32(nr) (((nr) + 31) / 32)

/*
 * x86-64 outside the sanitizers: an atomic operation on a bit whose number is
 * known only at run time is one `lock bts`/`btr`/`btc` with the number in a
 * register, which addresses the whole bitmap, as arch/x86's bitops do; the
 * locked instruction is a full barrier, which covers every ordering below.
 * A constant number, and the sanitizer builds (which see only the
 * builtins), take the builtins.
 */
#if defined(__x86_64__) && !defined(UK_TSAN) && !defined(UK_ASAN)
#define __UK_BITOP_ASM(nr) (!__builtin_constant_p(nr))
#else
#define __UK_BITOP_ASM(nr) false
#endif

#define __UK_BITOP(insn, nr, addr)                    \
	asm volatile("lock " insn "q %1, %0"          \
		     : "+m"(*(volatile long *)(addr)) \
		     : "r"((long)(nr))                \
		     : "memory")

#define __UK_TEST_BITOP(insn, nr, addr)                                       \
	({                                                                    \
		bool __old;                                                   \
		asm volatile("lock " insn "q %2, %1"                          \
			     : "=@ccc"(__old), "+m"(*(volatile long *)(addr)) \
			     : "r"((long)(nr))                                \
			     : "memory");                                     \
		__old;                                                        \
	})

static __always_inline void set_bit(long nr, volatile unsigned long *addr)
{
	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		__UK_BITOP("bts", nr, addr);
	else
		__atomic_fetch_or((unsigned long *)addr + BIT_WORD(nr), BIT_MASK(nr),
				  __ATOMIC_RELAXED);
}

static __always_inline void clear_bit(long nr, volatile unsigned long *addr)
{
	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		__UK_BITOP("btr", nr, addr);
	else
		__atomic_fetch_and((unsigned long *)addr + BIT_WORD(nr), ~BIT_MASK(nr),
				   __ATOMIC_RELAXED);
}

static __always_inline void change_bit(long nr, volatile unsigned long *addr)
{
	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		__UK_BITOP("btc", nr, addr);
	else
		__atomic_fetch_xor((unsigned long *)addr + BIT_WORD(nr), BIT_MASK(nr),
				   __ATOMIC_RELAXED);
}

/* One mask value in each: g++ then emits lock bts/btr/btc, as the kernel's x86. */
static __always_inline bool test_and_set_bit(long nr, volatile unsigned long *addr)
{
	unsigned long mask = BIT_MASK(nr);

	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		return __UK_TEST_BITOP("bts", nr, addr);
	return __atomic_fetch_or((unsigned long *)addr + BIT_WORD(nr), mask, __ATOMIC_SEQ_CST) &
	       mask;
}

static __always_inline bool test_and_clear_bit(long nr, volatile unsigned long *addr)
{
	unsigned long mask = BIT_MASK(nr);

	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		return __UK_TEST_BITOP("btr", nr, addr);
	return __atomic_fetch_and((unsigned long *)addr + BIT_WORD(nr), ~mask, __ATOMIC_SEQ_CST) &
	       mask;
}

static __always_inline bool test_and_change_bit(long nr, volatile unsigned long *addr)
{
	unsigned long mask = BIT_MASK(nr);

	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		return __UK_TEST_BITOP("btc", nr, addr);
	return __atomic_fetch_xor((unsigned long *)addr + BIT_WORD(nr), mask, __ATOMIC_SEQ_CST) &
	       mask;
}

static __always_inline bool test_and_set_bit_lock(long nr, volatile unsigned long *addr)
{
	unsigned long mask = BIT_MASK(nr);

	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		return __UK_TEST_BITOP("bts", nr, addr);
	return __atomic_fetch_or((unsigned long *)addr + BIT_WORD(nr), mask, __ATOMIC_ACQUIRE) &
	       mask;
}

static __always_inline void clear_bit_unlock(long nr, volatile unsigned long *addr)
{
	__uk_explore("bitop");
	if (__UK_BITOP_ASM(nr))
		__UK_BITOP("btr", nr, addr);
	else
		__atomic_fetch_and((unsigned long *)addr + BIT_WORD(nr), ~BIT_MASK(nr),
				   __ATOMIC_RELEASE);
}

/* Release store of the whole word: only the lock holder writes the word. */
static __always_inline void __clear_bit_unlock(long nr, volatile unsigned long *addr)
{
	unsigned long *p = (unsigned long *)addr + BIT_WORD(nr);
	__uk_explore("bitop"),
		__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) & ~BIT_MASK(nr),
				 __ATOMIC_RELEASE);
}

static __always_inline bool test_bit(long nr, const volatile unsigned long *addr)
{
	return 1UL &
	       (__atomic_load_n((const unsigned long *)addr + BIT_WORD(nr), __ATOMIC_RELAXED) >>
		(nr & (BITS_PER_LONG - 1)));
}

static __always_inline bool test_bit_acquire(long nr, const volatile unsigned long *addr)
{
	return 1UL &
	       (__atomic_load_n((const unsigned long *)addr + BIT_WORD(nr), __ATOMIC_ACQUIRE) >>
		(nr & (BITS_PER_LONG - 1)));
}

static __always_inline void __set_bit(long nr, volatile unsigned long *addr)
{
	((unsigned long *)addr)[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static __always_inline void __clear_bit(long nr, volatile unsigned long *addr)
{
	((unsigned long *)addr)[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static __always_inline void __change_bit(long nr, volatile unsigned long *addr)
{
	((unsigned long *)addr)[BIT_WORD(nr)] ^= BIT_MASK(nr);
}

static __always_inline bool __test_and_set_bit(long nr, volatile unsigned long *addr)
{
	unsigned long *p = (unsigned long *)addr + BIT_WORD(nr);
	unsigned long old = *p;
	*p = old | BIT_MASK(nr);
	return old & BIT_MASK(nr);
}

static __always_inline bool __test_and_clear_bit(long nr, volatile unsigned long *addr)
{
	unsigned long *p = (unsigned long *)addr + BIT_WORD(nr);
	unsigned long old = *p;
	*p = old & ~BIT_MASK(nr);
	return old & BIT_MASK(nr);
}

static __always_inline bool __test_and_change_bit(long nr, volatile unsigned long *addr)
{
	unsigned long *p = (unsigned long *)addr + BIT_WORD(nr);
	unsigned long old = *p;
	*p = old ^ BIT_MASK(nr);
	return old & BIT_MASK(nr);
}

/* __ffs: index of the lowest set bit; undefined for 0. */
static __always_inline unsigned long __ffs(unsigned long word)
{
	return __builtin_ctzl(word);
}

/* __fls: index of the highest set bit; undefined for 0. */
static __always_inline unsigned long __fls(unsigned long word)
{
	return BITS_PER_LONG - 1 - __builtin_clzl(word);
}

/* ffz: index of the lowest clear bit; undefined for ~0UL. */
static __always_inline unsigned long ffz(unsigned long word)
{
	return __ffs(~word);
}

/* fls: 1-based, 0 when no bit is set (ffs() is the C library's). */

static __always_inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

static __always_inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

static __always_inline unsigned int fls_long(unsigned long l)
{
	return fls64(l);
}

static __always_inline unsigned int hweight8(unsigned int w)
{
	return __builtin_popcount(w & 0xff);
}

static __always_inline unsigned int hweight16(unsigned int w)
{
	return __builtin_popcount(w & 0xffff);
}

static __always_inline unsigned int hweight32(unsigned int w)
{
	return __builtin_popcount(w);
}

static __always_inline unsigned long hweight64(u64 w)
{
	return __builtin_popcountll(w);
}

static __always_inline unsigned long hweight_long(unsigned long w)
{
	return __builtin_popcountl(w);
}

static __always_inline u32 rol32(u32 word, unsigned int shift)
{
	return (word << (shift & 31)) | (word >> ((-shift) & 31));
}

static __always_inline u32 ror32(u32 word, unsigned int shift)
{
	return (word >> (shift & 31)) | (word << ((-shift) & 31));
}

#include <uk/linux/find.h>

#define for_each_set_bit(bit, addr, size) \
	for ((bit) = 0; (bit) = find_next_bit((addr), (size), (bit)), (bit) < (size); (bit)++)

#define for_each_set_bit_from(bit, addr, size) \
	for (; (bit) = find_next_bit((addr), (size), (bit)), (bit) < (size); (bit)++)

#define for_each_clear_bit(bit, addr, size) \
	for ((bit) = 0; (bit) = find_next_zero_bit((addr), (size), (bit)), (bit) < (size); (bit)++)

#endif /* UK_LINUX_BITOPS_H */
