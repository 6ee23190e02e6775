/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Compiler helpers under their kernel names.
 *
 * READ_ONCE/WRITE_ONCE are relaxed atomic accesses, not volatile ones, so
 * ThreadSanitizer sees them as the marked accesses they are in the kernel.
 */
#ifndef UK_LINUX_COMPILER_H
#define UK_LINUX_COMPILER_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SANITIZE_THREAD__)
#define UK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UK_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define UK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UK_ASAN 1
#endif
#endif

/*
 * __uk_hidden: a shim global that the inline fast paths read. The static
 * layers are built -fPIC (libukern_aio.so links them), so a default-
 * visibility variable is reached through its GOT entry, which the link turns
 * into a lea: one instruction more at every access. A hidden one is
 * addressed from %rip. No symbol that anything resolves changes: a program
 * links one copy of the static layers, and libukern_aio.so exports none of
 * their symbols (libukern_aio.map).
 */
#define __uk_hidden __attribute__((visibility("hidden")))

#ifdef UK_TSAN
extern "C" {
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
}
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define barrier() __asm__ __volatile__("" : : : "memory")

/*
 * __uk_explore(what): a scheduling point for the explore preset
 * (docs/explore.md). With UKERN_EXPLORE every marked access, atomic
 * operation and barrier calls the test scheduler's hook (<uk/shim/cpu.h>);
 * in every other build it is nothing. A name that starts with '~' marks a
 * spin-wait iteration (cpu_relax()), where the scheduler lets others run.
 */
#ifdef UKERN_EXPLORE
namespace uk
{
using SchedHook = void (*)(const char *where);
extern SchedHook sched_hook __uk_hidden;
} // namespace uk
#define __uk_explore(what) \
	(__builtin_expect(::uk::sched_hook != nullptr, 0) ? ::uk::sched_hook(what) : (void)0)
#else
#define __uk_explore(what) ((void)0)
#endif

/*
 * __uk_explore_lock(lock, op): a lock taken (UK_LOCK_ACQUIRE), taken by a
 * trylock (UK_LOCK_TRY) or about to be released (UK_LOCK_RELEASE), for the
 * explorer's lock-order and interrupt-safety checks (docs/explore.md). Only
 * exclusive holds are reported: spinlocks, write locks and mutexes. Nothing
 * outside the explore preset.
 */
#define UK_LOCK_ACQUIRE 0
#define UK_LOCK_TRY 1
#define UK_LOCK_RELEASE 2
#ifdef UKERN_EXPLORE
namespace uk
{
using LockHook = void (*)(const void *lock, int op);
extern LockHook lock_hook;
} // namespace uk
#define __uk_explore_lock(lock, op) \
	(__builtin_expect(::uk::lock_hook != nullptr, 0) ? ::uk::lock_hook((lock), (op)) : (void)0)
#else
#define __uk_explore_lock(lock, op) ((void)0)
#endif

#undef __always_inline /* glibc's <sys/cdefs.h> has its own */
#define __always_inline inline __attribute__((__always_inline__))
#define noinline __attribute__((__noinline__))
#define __noreturn __attribute__((__noreturn__))
#define __must_check __attribute__((__warn_unused_result__))
#define __maybe_unused __attribute__((__unused__))
#define __used __attribute__((__used__))
#define __cold __attribute__((__cold__))
#define __aligned(x) __attribute__((__aligned__(x)))
#define __packed __attribute__((__packed__))
#define __printf(a, b) __attribute__((__format__(printf, a, b)))
#define fallthrough __attribute__((__fallthrough__))

/* sparse annotations: documentation only */
#define __user
#define __kernel
#define __iomem
#define __percpu
#define __rcu
#define __force
#define __bitwise
#define __must_hold(x)
#define __acquires(x)
#define __releases(x)
#define __cond_acquires(x)

#define L1_CACHE_SHIFT 6
#define L1_CACHE_BYTES (1 << L1_CACHE_SHIFT)
#define SMP_CACHE_BYTES L1_CACHE_BYTES
/* include/linux/cache.h: the coherency unit the allocator pads to. */
#define cache_line_size() L1_CACHE_BYTES
#define ____cacheline_aligned __attribute__((__aligned__(SMP_CACHE_BYTES)))
#define ____cacheline_aligned_in_smp ____cacheline_aligned
#define __cacheline_aligned ____cacheline_aligned
#define __cacheline_aligned_in_smp ____cacheline_aligned
/* include/linux/cache.h: no section of read-mostly data here. */
#define __read_mostly

#define __stringify_1(x...) #x
#define __stringify(x...) __stringify_1(x)
#define __UNIQUE_ID(p) __PASTE(__PASTE(__uk_, p), __COUNTER__)
#define ___PASTE(a, b) a##b
#define __PASTE(a, b) ___PASTE(a, b)

namespace uk
{

/*
 * C converts void * to any object pointer implicitly; C++ does not. Kernel
 * functions that return void * (kmalloc, ERR_PTR, ...) return this instead
 * so that ported code keeps its C shape: `ctx = kzalloc(sizeof(*ctx), ...)`.
 */
struct any_ptr {
	void *p;
	template <typename T> constexpr operator T *() const noexcept
	{
		return static_cast<T *>(p);
	}
	explicit constexpr operator bool() const noexcept
	{
		return p != nullptr;
	}
	friend constexpr bool operator==(any_ptr a, std::nullptr_t) noexcept
	{
		return a.p == nullptr;
	}
};

/*
 * READ_ONCE()/WRITE_ONCE() as one atomic access: for sizes the hardware
 * moves in one go, and only when aligned to that size (an under-aligned
 * 8-byte struct would not be one access, and clang's -Watomic-alignment
 * says so). Anything else goes through memcpy() between compiler barriers.
 */
template <typename T>
inline constexpr bool kOnceScalar = std::is_trivially_copyable_v<T> &&
				    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 ||
				     sizeof(T) == 8) &&
				    alignof(T) >= sizeof(T);

template <typename T> __always_inline T read_once(const T &x)
{
	__uk_explore("READ_ONCE");
	if constexpr (kOnceScalar<T>) {
		if constexpr (std::is_scalar_v<T>) {
			return __atomic_load_n(const_cast<T *>(&x), __ATOMIC_RELAXED);
		} else {
			/* a small struct: the generic builtin takes it */
			std::remove_cv_t<T> v;
			__atomic_load(const_cast<T *>(&x), &v, __ATOMIC_RELAXED);
			return v;
		}
	} else {
		T v;
		barrier();
		std::memcpy((void *)&v, (const void *)&x, sizeof(T));
		barrier();
		return v;
	}
}

template <typename T, typename V> __always_inline void write_once(T &x, V v)
{
	__uk_explore("WRITE_ONCE");
	if constexpr (std::is_pointer_v<T> && std::is_integral_v<V>) {
		/* WRITE_ONCE(p, NULL): NULL is an integer once passed in here */
		__atomic_store_n(&x, reinterpret_cast<T>(v), __ATOMIC_RELAXED);
	} else if constexpr (kOnceScalar<T> && std::is_scalar_v<T>) {
		__atomic_store_n(&x, static_cast<T>(v), __ATOMIC_RELAXED);
	} else if constexpr (kOnceScalar<T>) {
		T t = v;
		__atomic_store(&x, &t, __ATOMIC_RELAXED);
	} else {
		T t = v;
		barrier();
		std::memcpy((void *)&x, (const void *)&t, sizeof(T));
		barrier();
	}
}

} // namespace uk

#define READ_ONCE(x) (::uk::read_once(x))
#define WRITE_ONCE(x, val) (::uk::write_once((x), (val)))

/*
 * data_race(expr): an intentionally racy plain access. ThreadSanitizer is
 * told to look away for the duration of the expression.
 */
#ifdef UK_TSAN
namespace uk
{
struct DataRaceScope {
	DataRaceScope()
	{
		__tsan_ignore_thread_begin();
	}
	~DataRaceScope()
	{
		__tsan_ignore_thread_end();
	}
};
} // namespace uk
/* The scope object ends the ignore after the value is taken; void is fine. */
#define data_race(expr)                      \
	({                                   \
		::uk::DataRaceScope __uk_dr; \
		expr;                        \
	})
#else
#define data_race(expr) ({ expr; })
#endif

/*
 * uk_tsan_release/uk_tsan_acquire: tell ThreadSanitizer about an ordering
 * the code gets from a fence plus a relaxed atomic, which TSan does not
 * model. Each use names the fence it stands for and its pair.
 */
#ifdef UK_TSAN
#define uk_tsan_release(addr) __tsan_release((void *)(addr))
#define uk_tsan_acquire(addr) __tsan_acquire((void *)(addr))
#else
#define uk_tsan_release(addr) \
	do {                  \
	} while (0)
#define uk_tsan_acquire(addr) \
	do {                  \
	} while (0)
#endif

#define __same_type(a, b) (std::is_same_v<__typeof__(a), __typeof__(b)>)

#endif /* UK_LINUX_COMPILER_H */
