/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Explicit access checks (include/linux/instrumented.h): the helpers that
 * code the compiler cannot instrument (asm, such as the user copies of
 * aio/usercopy.cc and the get_user()/put_user() movs) calls around each
 * access, so that the sanitizers see it.
 *
 * The kernel maps them to KASAN, KCSAN and KMSAN; here KASAN is ASan
 * (__asan_region_is_poisoned(), then a report as for an instrumented
 * access), KCSAN is TSan (__tsan_read_range()/__tsan_write_range()), and
 * outside the sanitizer builds every helper is empty. KMSAN's hooks are
 * where the kernel handles the user side of a copy; user memory is process
 * memory here, shadowed like the rest, so ukern checks it there with ASan
 * and TSan: the user bytes a copy or a get_user()/put_user() touched, after
 * the access (when they are known to be mapped).
 */
#ifndef UK_LINUX_INSTRUMENTED_H
#define UK_LINUX_INSTRUMENTED_H

#include <stddef.h>
#include <stdint.h>

#include <uk/linux/compiler.h>

#ifdef UK_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if defined(UK_TSAN) && defined(__clang__)
/* In both runtimes; GCC knows them as built-ins, LLVM 14's header lacks them. */
extern "C" {
void __tsan_read_range(void *addr, unsigned long size);
void __tsan_write_range(void *addr, unsigned long size);
}
#endif

/*
 * kasan_check_read()/kasan_check_write(): an ASan report on a poisoned byte.
 * A user pointer may name memory that ASan does not shadow (its own shadow
 * and the gap around it, where a program's made-up context id can land):
 * __asan_region_is_poisoned() calls every such byte bad, but no object of
 * the program lives there, so the check leaves those ranges out.
 */
#ifdef UK_ASAN
static inline bool uk_kasan_shadowed(uintptr_t a, size_t n)
{
	size_t scale, offset;

	__asan_get_shadow_mapping(&scale, &offset);
	/* [offset, end of the high shadow]: ASan's shadow and shadow gap */
	return a + n <= offset || a > (0x00007fffffffffffUL >> scale) + offset;
}

#define uk_kasan_check(v, size, is_write)                                                      \
	do {                                                                                   \
		size_t __kc_size = (size);                                                     \
		void *__kc_bad;                                                                \
		if (__kc_size && uk_kasan_shadowed((uintptr_t)(v), __kc_size) &&               \
		    (__kc_bad = __asan_region_is_poisoned((void *)(uintptr_t)(v), __kc_size))) \
			__asan_report_error(                                                   \
				__builtin_return_address(0), __builtin_frame_address(0),       \
				__builtin_frame_address(0), __kc_bad, (is_write), __kc_size);  \
	} while (0)
#else
#define uk_kasan_check(v, size, is_write) ((void)(v), (void)(size))
#endif

/* kcsan_check_read()/kcsan_check_write(): a TSan range access. */
#ifdef UK_TSAN
#define uk_kcsan_check(v, size, is_write)                                              \
	do {                                                                           \
		size_t __kc_size = (size);                                             \
		if (__kc_size) {                                                       \
			if (is_write)                                                  \
				__tsan_write_range((void *)(uintptr_t)(v), __kc_size); \
			else                                                           \
				__tsan_read_range((void *)(uintptr_t)(v), __kc_size);  \
		}                                                                      \
	} while (0)
#else
#define uk_kcsan_check(v, size, is_write) ((void)(v), (void)(size))
#endif

static __always_inline void instrument_read(const volatile void *v, size_t size)
{
	uk_kasan_check(v, size, false);
	uk_kcsan_check(v, size, false);
}

static __always_inline void instrument_write(const volatile void *v, size_t size)
{
	uk_kasan_check(v, size, true);
	uk_kcsan_check(v, size, true);
}

static __always_inline void instrument_read_write(const volatile void *v, size_t size)
{
	uk_kasan_check(v, size, true);
	uk_kcsan_check(v, size, true);
}

/*
 * copy_to_user(): before the copy, the kernel source is read; after it, the
 * user bytes written (n - left of them).
 */
static __always_inline void instrument_copy_to_user(void __user *to, const void *from,
						    unsigned long n)
{
	instrument_read(from, n);
}

static __always_inline void instrument_copy_to_user_after(void __user *to, const void *from,
							  unsigned long n, unsigned long left)
{
	instrument_write(to, n - left);
}

/* copy_from_user(): the kernel destination before, the user bytes read after. */
static __always_inline void
instrument_copy_from_user_before(const void *to, const void __user *from, unsigned long n)
{
	instrument_write(to, n);
}

static __always_inline void instrument_copy_from_user_after(const void *to, const void __user *from,
							    unsigned long n, unsigned long left)
{
	instrument_read(from, n - left);
}

static __always_inline void instrument_memcpy_before(void *to, const void *from, unsigned long n)
{
	instrument_write(to, n);
	instrument_read(from, n);
}

/*
 * get_user()/put_user(): after a load from (a store to) user memory that
 * did not fault. The kernel's instrument_get_user(to) takes only the value
 * (KMSAN unpoisons it); ours also takes the user pointer, to check it.
 */
#define instrument_get_user(to, ptr, size) instrument_read((ptr), (size))
#define instrument_put_user(from, ptr, size) instrument_write((ptr), (size))

#endif /* UK_LINUX_INSTRUMENTED_H */
