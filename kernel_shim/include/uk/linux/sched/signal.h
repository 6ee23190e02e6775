/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Signals as the kernel's sleeping code sees them (include/linux/sched/
 * signal.h): a task has a pending mask and a blocked mask; signal_pending()
 * is "pending & ~blocked", SIGKILL can never be blocked and makes
 * fatal_signal_pending() true. Tests deliver signals with
 * uk::task_send_signal(). Host signals reach it only through the sleeps
 * that take them (the uk::host_* functions below).
 *
 * Masks are 64-bit words with bit (sig - 1), the layout of both the kernel's
 * and glibc's sigset_t first word, so a host sigset_t converts directly.
 */
#ifndef UK_LINUX_SCHED_SIGNAL_H
#define UK_LINUX_SCHED_SIGNAL_H

#include <signal.h>

#include <uk/linux/sched.h>

#define __UK_SIGMASK(sig) (1ULL << ((sig)-1))
/* Signals that cannot be blocked. */
#define __UK_SIG_UNBLOCKABLE (__UK_SIGMASK(SIGKILL) | __UK_SIGMASK(SIGSTOP))

static inline u64 __uk_sig_pending_word(const struct task_struct *p)
{
	return __atomic_load_n(&p->uk_sigpending, __ATOMIC_ACQUIRE);
}

static inline int task_sigpending(const struct task_struct *p)
{
	return (__uk_sig_pending_word(p) & ~READ_ONCE(p->uk_sigblocked)) != 0;
}

static inline int signal_pending(const struct task_struct *p)
{
	return task_sigpending(p) || READ_ONCE(p->uk_host_sigpending);
}

static inline int __fatal_signal_pending(const struct task_struct *p)
{
	return (__uk_sig_pending_word(p) & __UK_SIGMASK(SIGKILL)) != 0;
}

static inline int fatal_signal_pending(const struct task_struct *p)
{
	return __fatal_signal_pending(p);
}

/* Whether a task about to sleep in `state` must not (kernel's check in __schedule). */
static inline int signal_pending_state(unsigned int state, const struct task_struct *p)
{
	if (!(state & (TASK_INTERRUPTIBLE | TASK_WAKEKILL)))
		return 0;
	if (!signal_pending(p))
		return 0;
	return (state & TASK_INTERRUPTIBLE) || __fatal_signal_pending(p);
}

/* The kernel's sigset helpers that glibc lacks; glibc's sigaddset() etc. work as-is. */
static inline void sigaddsetmask(sigset_t *set, unsigned long mask)
{
	set->__val[0] |= mask;
}

static inline void sigdelsetmask(sigset_t *set, unsigned long mask)
{
	set->__val[0] &= ~mask;
}

static inline int sigtestsetmask(sigset_t *set, unsigned long mask)
{
	return (set->__val[0] & mask) != 0;
}

#undef sigmask /* glibc's returns int */
#define sigmask(sig) (1UL << ((sig)-1))

/*
 * set_user_sigmask(): what io_pgetevents()/epoll_pwait() do with the mask a
 * caller passes: save current's blocked mask, install the new one. The
 * kernel ABI size is 8 bytes (_NSIG / 8); any other size is -EINVAL.
 * restore_saved_sigmask_unless(interrupted) puts the saved mask back (in the
 * kernel a signal being delivered keeps it until return to user space;
 * here it is always restored).
 */
int set_user_sigmask(const sigset_t *umask, size_t sigsetsize);
void restore_saved_sigmask_unless(bool interrupted);
void restore_saved_sigmask(void);

/*
 * A 32-bit task's compat_sigset_t: two 32-bit words which, on little-endian
 * x86, lie as the 64-bit mask does, so it is read as one.
 */
static inline int set_compat_user_sigmask(const void __user *umask, size_t sigsetsize)
{
	return set_user_sigmask((const sigset_t __user *)umask, sigsetsize);
}

namespace uk
{

/*
 * Makes `sig` (1..64) pending on `p` and, unless blocked, wakes it if it
 * sleeps interruptibly (or killably, for SIGKILL), as signal_wake_up()
 * does. Returns -EINVAL for a bad signal number.
 */
int task_send_signal(struct task_struct *p, int sig);

/* Clears every pending signal of `p` (tests "handle" signals this way). */
void task_clear_signals(struct task_struct *p);

/* Clears one pending signal. */
void task_clear_signal(struct task_struct *p, int sig);

/*
 * sigprocmask() on current's blocked mask: how is SIG_BLOCK, SIG_UNBLOCK or
 * SIG_SETMASK; SIGKILL/SIGSTOP stay unblocked. Either pointer may be null.
 * Returns 0 or -EINVAL.
 */
int task_sigprocmask(int how, const sigset_t *set, sigset_t *oldset);

/* Blocked/pending masks as words (bit sig - 1). */
u64 task_blocked_mask(const struct task_struct *p);
u64 task_pending_mask(const struct task_struct *p);

/*
 * Sleeping in a host call that a host signal may interrupt (ppoll()):
 * host_sleep_sigmask() gives the host mask to sleep under, the one a
 * set_user_sigmask() of this system call installed, or NULL for the
 * thread's own; host_sleep_interrupted() records that the sleep ended in
 * EINTR (the handler has run), which signal_pending(current) then reports;
 * host_signal_delivered() forgets it, at the system call's return to the
 * program and before a new sleep.
 */
const sigset_t *host_sleep_sigmask(sigset_t *buf);

static inline void host_sleep_interrupted(void)
{
	WRITE_ONCE(get_current()->uk_host_sigpending, true);
}

static inline void host_signal_delivered(void)
{
	struct task_struct *p = get_current();

	if (p->uk_host_sigpending)
		WRITE_ONCE(p->uk_host_sigpending, false);
}

} // namespace uk

#endif /* UK_LINUX_SCHED_SIGNAL_H */
