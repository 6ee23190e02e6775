/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Scope-based cleanup (include/linux/cleanup.h), written the kernel's way by
 * the code that uses it:
 *
 *	guard(spinlock_irqsave)(&q->lock);
 *	scoped_guard(mutex, &dev->lock) { ... }
 *	struct foo *p __free(kfree) = kmalloc(sizeof(*p), GFP_KERNEL);
 *	return_ptr(p);
 *
 * The kernel builds its classes on the compiler's cleanup attribute. Here a
 * class is a C++ object: its constructor takes the lock (or computes the
 * value), its destructor runs the unlock (the exit statement) when the
 * object goes out of scope, in reverse order of declaration, on every way
 * out of the scope: falling off the end, return, break, goto out of it.
 * Copies are deleted, so one lock is released once. The names the kernel's
 * macros generate (class_NAME_t, class_NAME_constructor, ..._lock_ptr,
 * ..._is_conditional) are the same, so ported code may name them.
 *
 * A CLASS() variable is that object, not the bare value as in C; it
 * converts to a reference to the value wherever one is wanted.
 *
 * __free() stays on the cleanup attribute: it decorates a variable of the
 * user's own type (`struct foo *p __free(kfree)`), which no wrapper class
 * can replace without changing the declaration. GCC and clang honour the
 * attribute in C++ as in C.
 *
 * As in the kernel, a jump into the scope of a guard or of a __free()
 * variable is an error (C++ refuses to skip the initialisation), and
 * `guard` is a function-like macro: `guard(x)` cannot name anything else in
 * a file that includes this header.
 */
#ifndef UK_LINUX_CLEANUP_H
#define UK_LINUX_CLEANUP_H

#include <uk/linux/compiler.h>

#ifndef __cleanup
#define __cleanup(func) __attribute__((__cleanup__(func)))
#endif

/*
 * DEFINE_FREE(name, type, free): __free(name) on a variable of @type runs
 * @free with the variable's value in _T when the variable goes out of scope.
 */
#define DEFINE_FREE(_name, _type, _free)                          \
	static inline __maybe_unused void __free_##_name(void *p) \
	{                                                         \
		_type _T = *(_type *)p;                           \
		_free;                                            \
	}

#define __free(_name) __cleanup(__free_##_name)

/* Reads @p and leaves @nullvalue behind, so that its cleanup does nothing. */
#define __get_and_null(p, nullvalue) \
	({                           \
		auto *__ptr = &(p);  \
		auto __val = *__ptr; \
		*__ptr = nullvalue;  \
		__val;               \
	})

/* The pointer no_free_ptr() hands out must be taken by someone. */
template <typename T> [[nodiscard]] static inline T __must_check_fn(T val)
{
	return val;
}

/* Takes ownership away from a __free() variable: its cleanup sees NULL. */
#define no_free_ptr(p) __must_check_fn(__get_and_null(p, NULL))
#define return_ptr(p) return no_free_ptr(p)

/* For a callee that took ownership on success: drop ours, ignore the value. */
#define retain_and_null_ptr(p) ((void)__get_and_null(p, NULL))

/*
 * DEFINE_CLASS(name, type, exit, init, init_args...): CLASS(name, var)(args)
 * declares @var holding init(args), and runs @exit with the value in _T at
 * the end of @var's scope.
 */
#define DEFINE_CLASS(_name, _type, _exit, _init, _init_args...)                              \
	struct class_##_name##_t {                                                           \
		using value_type = _type;                                                    \
		value_type val;                                                              \
		explicit __always_inline class_##_name##_t(value_type v) : val(v) {}         \
		class_##_name##_t(const class_##_name##_t &) = delete;                       \
		class_##_name##_t &operator=(const class_##_name##_t &) = delete;            \
		__always_inline ~class_##_name##_t()                                         \
		{                                                                            \
			value_type _T __maybe_unused = val;                                  \
			_exit;                                                               \
		}                                                                            \
		__always_inline operator value_type &()                                      \
		{                                                                            \
			return val;                                                          \
		}                                                                            \
	};                                                                                   \
	static __always_inline __maybe_unused class_##_name##_t class_##_name##_constructor( \
		_init_args)                                                                  \
	{                                                                                    \
		return class_##_name##_t(_init);                                             \
	}

/* Another constructor for an existing class: same value, same exit. */
#define EXTEND_CLASS(_name, ext, _init, _init_args...)                                            \
	typedef class_##_name##_t class_##_name##ext##_t;                                         \
	static __always_inline __maybe_unused class_##_name##_t class_##_name##ext##_constructor( \
		_init_args)                                                                       \
	{                                                                                         \
		return class_##_name##_t(_init);                                                  \
	}

/*
 * The object is initialised from the constructor's return value directly
 * (C++17 guaranteed elision), so the deleted copy is never needed.
 */
#define CLASS(_name, var) class_##_name##_t var = class_##_name##_constructor

/* Runs the statement that follows once, with @var alive around it. */
#define __scoped_class(_name, var, _label, args...)        \
	for (CLASS(_name, var)(args);; ({ goto _label; })) \
		if (0) {                                   \
_label:                                                    \
			break;                             \
		} else

#define scoped_class(_name, var, args...) __scoped_class(_name, var, __UNIQUE_ID(label), args)

/*
 * Guards. A conditional guard (a trylock) may come out of its constructor
 * not holding the lock; its lock pointer is then NULL and the destructor
 * does nothing.
 */
#define __DEFINE_CLASS_IS_CONDITIONAL(_name, _is_cond) \
	static constexpr bool class_##_name##_is_conditional __maybe_unused = _is_cond

/* DEFINE_GUARD(name, type, lock, unlock): a guard over a pointer value _T. */
#define DEFINE_GUARD(_name, _type, _lock, _unlock)                            \
	__DEFINE_CLASS_IS_CONDITIONAL(_name, false);                          \
	DEFINE_CLASS(                                                         \
		_name, _type, if (_T) { _unlock; }, ({                        \
			_lock;                                                \
			_T;                                                   \
		}),                                                           \
		_type _T)                                                     \
	static __always_inline __maybe_unused void *class_##_name##_lock_ptr( \
		class_##_name##_t *_T)                                        \
	{                                                                     \
		return (void *)(__force unsigned long)_T->val;                \
	}

/* A trylock form of guard @name: the value is NULL when @condlock failed. */
#define DEFINE_GUARD_COND(_name, _ext, _condlock)                                   \
	__DEFINE_CLASS_IS_CONDITIONAL(_name##_ext, true);                           \
	EXTEND_CLASS(_name, _ext, ({                                                \
			     class_##_name##_t::value_type _t = _T;                 \
			     if (_T && !(_condlock))                                \
				     _t = NULL;                                     \
			     _t;                                                    \
		     }),                                                            \
		     class_##_name##_t::value_type _T);                             \
	static __always_inline __maybe_unused void *class_##_name##_ext##_lock_ptr( \
		class_##_name##_t *_T)                                              \
	{                                                                           \
		return class_##_name##_lock_ptr(_T);                                \
	}

#define guard(_name) CLASS(_name, __UNIQUE_ID(guard))

#define __guard_ptr(_name) class_##_name##_lock_ptr
#define __is_cond_ptr(_name) class_##_name##_is_conditional

/*
 * scoped_guard(name, args...) { ... }: the block runs once with the lock
 * held, and not at all when a conditional guard did not get it. break and
 * continue leave the block (releasing the lock), as does return.
 */
#define __scoped_guard(_name, _label, args...)                                               \
	for (CLASS(_name, scope)(args); __guard_ptr(_name)(&scope) || !__is_cond_ptr(_name); \
	     ({ goto _label; }))                                                             \
		if (0) {                                                                     \
_label:                                                                                      \
			break;                                                               \
		} else

#define scoped_guard(_name, args...) __scoped_guard(_name, __UNIQUE_ID(label), args)

/*
 * scoped_cond_guard(name, fail, args...) { ... }: for conditional guards
 * only; runs @fail (typically a return) when the lock was not taken.
 */
#define __scoped_cond_guard(_name, _fail, _label, args...)                              \
	for (CLASS(_name, scope)(args); true; ({ goto _label; }))                       \
		if (!__guard_ptr(_name)(&scope)) {                                      \
			static_assert(__is_cond_ptr(_name), "not a conditional guard"); \
			_fail;                                                          \
_label:                                                                                 \
			break;                                                          \
		} else

#define scoped_cond_guard(_name, _fail, args...) \
	__scoped_cond_guard(_name, _fail, __UNIQUE_ID(label), args)

/*
 * Lock guards over a lock pointer and optional extra state (the saved irq
 * flags): _T points at the guard object in @lock and @unlock, so they say
 * _T->lock and _T->flags. The constructor runs @init on the new object;
 * the destructor runs @unlock unless ->lock is NULL.
 */
#define __DEFINE_UNLOCK_GUARD(_name, _type, _unlock, ...)                         \
	struct class_##_name##_t {                                                \
		_type *lock;                                                      \
		__VA_OPT__(__VA_ARGS__;)                                          \
		template <typename Init>                                          \
		__always_inline class_##_name##_t(_type *l, Init init) : lock(l)  \
		{                                                                 \
			init(this);                                               \
		}                                                                 \
		class_##_name##_t(const class_##_name##_t &) = delete;            \
		class_##_name##_t &operator=(const class_##_name##_t &) = delete; \
		__always_inline ~class_##_name##_t()                              \
		{                                                                 \
			class_##_name##_t *_T = this;                             \
			if (_T->lock) {                                           \
				_unlock;                                          \
			}                                                         \
		}                                                                 \
	};                                                                        \
	static __always_inline __maybe_unused void *class_##_name##_lock_ptr(     \
		class_##_name##_t *_T)                                            \
	{                                                                         \
		return (void *)(__force unsigned long)_T->lock;                   \
	}

#define __DEFINE_LOCK_GUARD_1(_name, _type, _lock)                                           \
	static __always_inline __maybe_unused class_##_name##_t class_##_name##_constructor( \
		_type *l)                                                                    \
	{                                                                                    \
		return class_##_name##_t(l, [](class_##_name##_t *_T) { _lock; });           \
	}

#define __DEFINE_LOCK_GUARD_0(_name, _lock)                                                       \
	static __always_inline __maybe_unused class_##_name##_t class_##_name##_constructor(void) \
	{                                                                                         \
		return class_##_name##_t((void *)1,                                               \
					 [](class_##_name##_t *_T __maybe_unused) { _lock; });    \
	}

/* A guard over a lock of @type: guard(name)(&lock). */
#define DEFINE_LOCK_GUARD_1(_name, _type, _lock, _unlock, ...)    \
	__DEFINE_CLASS_IS_CONDITIONAL(_name, false);              \
	__DEFINE_UNLOCK_GUARD(_name, _type, _unlock, __VA_ARGS__) \
	__DEFINE_LOCK_GUARD_1(_name, _type, _lock)

/* A guard over something with no object (preemption, RCU): guard(name)(). */
#define DEFINE_LOCK_GUARD_0(_name, _lock, _unlock, ...)          \
	__DEFINE_CLASS_IS_CONDITIONAL(_name, false);             \
	__DEFINE_UNLOCK_GUARD(_name, void, _unlock, __VA_ARGS__) \
	__DEFINE_LOCK_GUARD_0(_name, _lock)

/* The trylock form of a lock guard: ->lock is NULL when @condlock failed. */
#define DEFINE_LOCK_GUARD_1_COND(_name, _ext, _condlock)                                           \
	__DEFINE_CLASS_IS_CONDITIONAL(_name##_ext, true);                                          \
	typedef class_##_name##_t class_##_name##_ext##_t;                                         \
	static __always_inline __maybe_unused class_##_name##_t class_##_name##_ext##_constructor( \
		decltype(class_##_name##_t::lock) l)                                               \
	{                                                                                          \
		return class_##_name##_t(l, [](class_##_name##_t *_T) {                            \
			if (_T->lock && !(_condlock))                                              \
				_T->lock = NULL;                                                   \
		});                                                                                \
	}                                                                                          \
	static __always_inline __maybe_unused void *class_##_name##_ext##_lock_ptr(                \
		class_##_name##_t *_T)                                                             \
	{                                                                                          \
		return class_##_name##_lock_ptr(_T);                                               \
	}

#endif /* UK_LINUX_CLEANUP_H */
