/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The 32-bit system call ABI of a 64-bit kernel (include/linux/compat.h,
 * arch/x86/include/asm/compat.h, include/vdso/time32.h): the compat types
 * aio's entry points take, compat_ptr(), and COMPAT_SYSCALL_DEFINEn().
 *
 * COMPAT_SYSCALL_DEFINEn(name, ...) defines compat_sys_name(), which runs
 * its body with in_compat_syscall() true for the calling thread, as the
 * kernel's entry from a 32-bit task does: a ring that io_setup() maps then
 * lies below 4 GiB, where a 32-bit pointer reaches it.
 */
#ifndef UK_LINUX_COMPAT_H
#define UK_LINUX_COMPAT_H

#include <uk/linux/syscalls.h>
#include <uk/linux/types.h>

typedef u32 compat_uptr_t;
typedef u32 compat_size_t;
typedef s32 compat_long_t;
typedef u32 compat_aio_context_t;
typedef s32 old_time32_t;

struct compat_iovec {
	compat_uptr_t iov_base;
	compat_size_t iov_len;
};

struct old_timespec32 {
	old_time32_t tv_sec;
	s32 tv_nsec;
};

static inline void __user *compat_ptr(compat_uptr_t uptr)
{
	return (void __user *)(unsigned long)uptr;
}

/* Set while a compat_sys_*() entry point runs on this thread. */
extern thread_local bool uk_compat_syscall;

static inline bool in_compat_syscall(void)
{
	return uk_compat_syscall;
}

struct uk_compat_syscall_scope {
	bool outer;
	uk_compat_syscall_scope() : outer(uk_compat_syscall)
	{
		uk_compat_syscall = true;
	}
	~uk_compat_syscall_scope()
	{
		uk_compat_syscall = outer;
	}
};

#define __UK_SC_ARGS(t, a) a

#define COMPAT_SYSCALL_DEFINE2(name, ...) COMPAT_SYSCALL_DEFINEx(2, _##name, __VA_ARGS__)
#define COMPAT_SYSCALL_DEFINE3(name, ...) COMPAT_SYSCALL_DEFINEx(3, _##name, __VA_ARGS__)
#define COMPAT_SYSCALL_DEFINE6(name, ...) COMPAT_SYSCALL_DEFINEx(6, _##name, __VA_ARGS__)

#define COMPAT_SYSCALL_DEFINEx(x, name, ...)                                                 \
	static inline long __do_compat_sys##name(__UK_SC_MAP(x, __UK_SC_DECL, __VA_ARGS__)); \
	asmlinkage long compat_sys##name(__UK_SC_MAP(x, __UK_SC_DECL, __VA_ARGS__))          \
	{                                                                                    \
		struct uk_compat_syscall_scope scope;                                        \
		return __do_compat_sys##name(__UK_SC_MAP(x, __UK_SC_ARGS, __VA_ARGS__));     \
	}                                                                                    \
	static inline long __do_compat_sys##name(__UK_SC_MAP(x, __UK_SC_DECL, __VA_ARGS__))

struct io_event;
struct __compat_aio_sigset;
struct __aio_sigset;
struct __kernel_timespec;

/* fs/aio.c's entry points for 32-bit tasks and 32-bit time. */
asmlinkage long compat_sys_io_setup(unsigned nr_events, u32 __user *ctx32p);
asmlinkage long compat_sys_io_submit(compat_aio_context_t ctx_id, int nr,
				     compat_uptr_t __user *iocbpp);
asmlinkage long compat_sys_io_pgetevents(compat_aio_context_t ctx_id, compat_long_t min_nr,
					 compat_long_t nr, struct io_event __user *events,
					 struct old_timespec32 __user *timeout,
					 const struct __compat_aio_sigset __user *usig);
asmlinkage long compat_sys_io_pgetevents_time64(compat_aio_context_t ctx_id, compat_long_t min_nr,
						compat_long_t nr, struct io_event __user *events,
						struct __kernel_timespec __user *timeout,
						const struct __compat_aio_sigset __user *usig);
asmlinkage long sys_io_getevents_time32(__u32 ctx_id, __s32 min_nr, __s32 nr,
					struct io_event __user *events,
					struct old_timespec32 __user *timeout);
asmlinkage long sys_io_pgetevents_time32(unsigned long ctx_id, long min_nr, long nr,
					 struct io_event __user *events,
					 struct old_timespec32 __user *timeout,
					 const struct __aio_sigset __user *usig);

#endif /* UK_LINUX_COMPAT_H */
