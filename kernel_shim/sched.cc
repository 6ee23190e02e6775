// SPDX-License-Identifier: GPL-2.0-only
//
// kernel/sched/core.c (the parts a sleeping task meets), kernel/time/timer.c's
// schedule_timeout() and kernel/signal.c's wake-up side, for host threads.
//
// A task blocks in schedule() on a futex over its own __state word. The
// sleeper's side: set_current_state() stores the sleeping state and issues a
// full barrier; schedule() re-reads the state and sleeps only while it is
// not TASK_RUNNING. The waker's side (try_to_wake_up): a cmpxchg moves
// __state from a state matching the wake mask to TASK_RUNNING, then the
// futex is kicked if the sleeper said it is (or is about to be) on it. The
// futex compares against the state it read, so a wake-up between the two
// can never be slept through.
//
// Upstream: kernel/sched/core.c @ v6.12
// Upstream: kernel/time/timer.c @ v6.12
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <uk/linux/jiffies.h>
#include <uk/linux/mm_types.h>
#include <uk/linux/rcu_reader.h>
#include <uk/linux/sched.h>
#include <uk/linux/sched/signal.h>
#include <uk/linux/slab.h>
#include <uk/linux/timer.h>
#include <uk/shim/clock.h>
#include <uk/shim/futex.h>

#include "shim/workqueue_internal.h"

namespace uk
{

__thread struct task_struct *tls_current __attribute__((tls_model("initial-exec"))) = nullptr;
void (*sched_flush_plug_hook)(struct task_struct *tsk) = nullptr;

namespace
{

std::atomic<long> live_tasks{ 0 };
std::atomic<uint64_t> task_serials{ 0 };
pthread_key_t task_key;
pthread_once_t task_key_once = PTHREAD_ONCE_INIT;

// Runs at thread exit (after C++ thread_local destructors, which may still
// use current). A task recreated by a later destructor is released by
// pthread's next destructor round.
void task_exit(void *arg)
{
	struct task_struct *p = static_cast<struct task_struct *>(arg);
	p->flags |= PF_EXITING;
	if (tls_current == p)
		tls_current = nullptr;
	put_task_struct(p);
}

void task_key_init()
{
	pthread_key_create(&task_key, task_exit);
}

inline uint32_t *state_word(struct task_struct *p)
{
	return reinterpret_cast<uint32_t *>(&p->__state);
}

long futex_wait_word(uint32_t *w, uint32_t val)
{
	return syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, nullptr, nullptr, 0);
}

long futex_wake_word(uint32_t *w)
{
	return syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// uk_wake_lock guards uk_wake_fd: a waker writes to the eventfd while holding
// it, so that once host_sleep_end() has cleared the fd under it no write is
// still on its way. Held for one eventfd write at most.
void wake_fd_lock(struct task_struct *p)
{
	while (__atomic_exchange_n(&p->uk_wake_lock, 1u, __ATOMIC_ACQUIRE) != 0)
		sched_yield();
}

void wake_fd_unlock(struct task_struct *p)
{
	__atomic_store_n(&p->uk_wake_lock, 0u, __ATOMIC_RELEASE);
}

// try_to_wake_up()'s kick for a task in a host sleep.
void host_sleep_kick(struct task_struct *p)
{
	uint64_t one = 1;

	wake_fd_lock(p);
	if (p->uk_wake_fd >= 0 && write(p->uk_wake_fd, &one, sizeof(one)) < 0) {
		// An eventfd write fails only on counter overflow, and the
		// sleeper drains the counter after every sleep.
	}
	wake_fd_unlock(p);
}

} // namespace

/* Zero-initialized: an unlocked spinlock, no AIO table, empty list and tree. */
struct mm_struct process_mm;

struct task_struct *task_create_current(void)
{
	pthread_once(&task_key_once, task_key_init);
	struct task_struct *p = new task_struct();
	p->__state = TASK_RUNNING;
	p->pid = static_cast<pid_t>(syscall(SYS_gettid));
	p->tgid = getpid();
	atomic_set(&p->usage, 1);
	p->timer_slack_ns = 50000;
	p->mm = &process_mm;
	p->uk_serial = task_serials.fetch_add(1, std::memory_order_relaxed) + 1;
	p->uk_wake_fd = -1;
	if (pthread_getname_np(pthread_self(), p->comm, sizeof(p->comm)) != 0)
		snprintf(p->comm, sizeof(p->comm), "task-%d", p->pid);
	live_tasks.fetch_add(1, std::memory_order_relaxed);
	tls_current = p;
	pthread_setspecific(task_key, p);
	return p;
}

bool wait_task_blocked(const struct task_struct *p, int timeout_ms)
{
	const uint64_t deadline = host_clock_ns() + static_cast<uint64_t>(timeout_ms) * 1000000ULL;
	while (!task_is_blocked(p)) {
		if (host_clock_ns() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

long nr_tasks(void)
{
	return live_tasks.load(std::memory_order_relaxed);
}

void task_exit_current(void)
{
	struct task_struct *p = tls_current;

	if (p) {
		pthread_setspecific(task_key, nullptr);
		task_exit(p);
	}
	rcu_unregister_thread();
	slab_flush_thread();
}

} // namespace uk

void __put_task_struct(struct task_struct *t)
{
	WARN_ON(!(t->flags & PF_EXITING));
	uk::live_tasks.fetch_sub(1, std::memory_order_relaxed);
	delete t;
}

void set_task_comm(struct task_struct *t, const char *name)
{
	strncpy(t->comm, name, TASK_COMM_LEN - 1);
	t->comm[TASK_COMM_LEN - 1] = '\0';
}

/*
 * try_to_wake_up(): if @p sleeps in a state in @state, make it runnable.
 * Returns 1 if this call changed its state. The caller guarantees @p is
 * alive on entry; the reference taken here keeps it so until the futex kick
 * is done, even if @p runs and exits meanwhile.
 */
int try_to_wake_up(struct task_struct *p, unsigned int state, int wake_flags)
{
	unsigned int cur;
	uint32_t sleeping;
	int success = 0;

	(void)wake_flags;
	get_task_struct(p);
	/* Full barrier: orders the caller's condition store before the
	 * __state load; pairs with the one in set_current_state(). */
	cur = __atomic_load_n(&p->__state, __ATOMIC_SEQ_CST);
	while (cur & state) {
		/* seq_cst cmpxchg: release for the woken task's acquire load of
		 * __state in schedule(), and ordered before the uk_sleeping load */
		if (__atomic_compare_exchange_n(&p->__state, &cur, TASK_RUNNING, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			success = 1;
			/* pairs with the seq_cst store of uk_sleeping in schedule()
			 * and in uk::host_sleep_begin() */
			sleeping = __atomic_load_n(&p->uk_sleeping, __ATOMIC_SEQ_CST);
			if (sleeping == UK_SLEEP_FUTEX)
				uk::futex_wake_word(uk::state_word(p));
			else if (sleeping == UK_SLEEP_HOST)
				uk::host_sleep_kick(p);
			break;
		}
	}
	put_task_struct(p);
	return success;
}

int wake_up_process(struct task_struct *p)
{
	return try_to_wake_up(p, TASK_NORMAL, 0);
}

int wake_up_state(struct task_struct *p, unsigned int state)
{
	return try_to_wake_up(p, state, 0);
}

static void sched_submit_work(struct task_struct *tsk)
{
	if (tsk->plug && uk::sched_flush_plug_hook)
		uk::sched_flush_plug_hook(tsk);
}

void schedule(void)
{
	struct task_struct *p = get_current();
	unsigned int state;

	if (unlikely(preempt_count() != 0 || irqs_disabled())) {
		fprintf(stderr, "ukern: BUG: scheduling while atomic: %s/%d/0x%08x\n", p->comm,
			p->pid, preempt_count());
		WARN_ON(1);
	}
	uk::sched_point("schedule");

	state = READ_ONCE(p->__state);
	if (state == TASK_RUNNING) {
		/* a preemption point: nothing to wait for */
		return;
	}
	sched_submit_work(p);
	if (signal_pending_state(state, p)) {
		WRITE_ONCE(p->__state, TASK_RUNNING);
		return;
	}

	if (p->flags & PF_WQ_WORKER)
		wq_worker_sleeping(p);

	/* Announce the futex sleep; pairs with the uk_sleeping load in
	 * try_to_wake_up() (both seq_cst, Dekker style). */
	__atomic_store_n(&p->uk_sleeping, UK_SLEEP_FUTEX, __ATOMIC_SEQ_CST);
	for (;;) {
		/* acquire pairs with the waker's cmpxchg to TASK_RUNNING */
		state = __atomic_load_n(&p->__state, __ATOMIC_SEQ_CST);
		if (state == TASK_RUNNING)
			break;
		if (unlikely(uk::sched_block_hook != nullptr))
			uk::sched_block_hook("schedule", uk::state_word(p), ~0u);
		else
			uk::futex_wait_word(uk::state_word(p), state);
	}
	__atomic_store_n(&p->uk_sleeping, 0, __ATOMIC_RELAXED);
	p->uk_nvcsw++;

	if (p->flags & PF_WQ_WORKER)
		wq_worker_running(p);
}

bool uk::host_sleep_begin(int efd)
{
	struct task_struct *p = get_current();

	wake_fd_lock(p);
	p->uk_wake_fd = efd;
	wake_fd_unlock(p);
	/* Announce the host sleep; pairs with the uk_sleeping load in
	 * try_to_wake_up() (both seq_cst, Dekker style). */
	__atomic_store_n(&p->uk_sleeping, UK_SLEEP_HOST, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&p->__state, __ATOMIC_SEQ_CST) != TASK_RUNNING)
		return true;
	uk::host_sleep_end();
	return false;
}

void uk::host_sleep_end(void)
{
	struct task_struct *p = get_current();

	__atomic_store_n(&p->uk_sleeping, 0u, __ATOMIC_SEQ_CST);
	wake_fd_lock(p);
	p->uk_wake_fd = -1;
	wake_fd_unlock(p);
}

void uk::host_block_begin(void)
{
	struct task_struct *p = get_current();

	if (p->flags & PF_WQ_WORKER)
		wq_worker_sleeping(p);
}

void uk::host_block_end(void)
{
	struct task_struct *p = get_current();

	if (p->flags & PF_WQ_WORKER)
		wq_worker_running(p);
}

void schedule_preempt_disabled(void)
{
	preempt_enable();
	schedule();
	preempt_disable();
}

void yield(void)
{
	sched_yield();
}

int io_schedule_prepare(void)
{
	struct task_struct *p = get_current();
	int old_iowait = p->in_iowait;

	p->in_iowait = 1;
	if (p->plug && uk::sched_flush_plug_hook)
		uk::sched_flush_plug_hook(p);
	return old_iowait;
}

void io_schedule_finish(int token)
{
	current->in_iowait = token;
}

long __sched io_schedule_timeout(long timeout)
{
	int token;
	long ret;

	token = io_schedule_prepare();
	ret = schedule_timeout(timeout);
	io_schedule_finish(token);

	return ret;
}

void __sched io_schedule(void)
{
	int token;

	token = io_schedule_prepare();
	schedule();
	io_schedule_finish(token);
}

struct process_timer {
	struct timer_list timer;
	struct task_struct *task;
};

static void process_timeout(struct timer_list *t)
{
	struct process_timer *timeout = from_timer(timeout, t, timer);

	wake_up_process(timeout->task);
}

/*
 * Sleep in the state the caller set until woken or until @timeout jiffies
 * pass; returns the jiffies left (0 when the timer fired).
 */
long schedule_timeout(long timeout)
{
	struct process_timer timer;
	unsigned long expire;

	if (timeout == MAX_SCHEDULE_TIMEOUT) {
		schedule();
		return timeout;
	}
	if (timeout < 0) {
		pr_err("schedule_timeout: wrong timeout value %lx\n", (unsigned long)timeout);
		WARN_ON(1);
		__set_current_state(TASK_RUNNING);
		return 0;
	}

	expire = timeout + jiffies;
	timer.task = get_current();
	timer_setup(&timer.timer, process_timeout, 0);
	mod_timer(&timer.timer, expire);
	schedule();
	del_timer_sync(&timer.timer);

	timeout = (long)(expire - jiffies);
	return timeout < 0 ? 0 : timeout;
}

long schedule_timeout_interruptible(long timeout)
{
	__set_current_state(TASK_INTERRUPTIBLE);
	return schedule_timeout(timeout);
}

long schedule_timeout_killable(long timeout)
{
	__set_current_state(TASK_KILLABLE);
	return schedule_timeout(timeout);
}

long schedule_timeout_uninterruptible(long timeout)
{
	__set_current_state(TASK_UNINTERRUPTIBLE);
	return schedule_timeout(timeout);
}

long schedule_timeout_idle(long timeout)
{
	__set_current_state(TASK_IDLE);
	return schedule_timeout(timeout);
}

/* Signals (kernel/signal.c, reduced to what sleepers observe). */

namespace uk
{

int task_send_signal(struct task_struct *p, int sig)
{
	u64 bit;

	if (sig < 1 || sig > 64)
		return -EINVAL;
	bit = __UK_SIGMASK(sig);
	/* seq_cst RMW: the pending bit is visible before the __state load in
	 * try_to_wake_up(); pairs with set_current_state() + the
	 * signal_pending_state() check in prepare_to_wait_event()/schedule(). */
	__atomic_fetch_or(&p->uk_sigpending, bit, __ATOMIC_SEQ_CST);
	if (sig == SIGKILL)
		wake_up_state(p, TASK_INTERRUPTIBLE | TASK_WAKEKILL);
	else if (!(READ_ONCE(p->uk_sigblocked) & bit))
		wake_up_state(p, TASK_INTERRUPTIBLE);
	return 0;
}

void task_clear_signals(struct task_struct *p)
{
	__atomic_store_n(&p->uk_sigpending, 0, __ATOMIC_RELEASE);
}

void task_clear_signal(struct task_struct *p, int sig)
{
	if (sig < 1 || sig > 64)
		return;
	__atomic_fetch_and(&p->uk_sigpending, ~__UK_SIGMASK(sig), __ATOMIC_RELEASE);
}

int task_sigprocmask(int how, const sigset_t *set, sigset_t *oldset)
{
	struct task_struct *p = get_current();
	u64 old = READ_ONCE(p->uk_sigblocked);
	u64 mask, neu;

	if (oldset) {
		sigemptyset(oldset);
		oldset->__val[0] = old;
	}
	if (!set)
		return 0;
	mask = set->__val[0];
	switch (how) {
	case SIG_BLOCK:
		neu = old | mask;
		break;
	case SIG_UNBLOCK:
		neu = old & ~mask;
		break;
	case SIG_SETMASK:
		neu = mask;
		break;
	default:
		return -EINVAL;
	}
	WRITE_ONCE(p->uk_sigblocked, neu & ~(u64)__UK_SIG_UNBLOCKABLE);
	return 0;
}

u64 task_blocked_mask(const struct task_struct *p)
{
	return READ_ONCE(p->uk_sigblocked);
}

u64 task_pending_mask(const struct task_struct *p)
{
	return __atomic_load_n(&p->uk_sigpending, __ATOMIC_ACQUIRE);
}

const sigset_t *host_sleep_sigmask(sigset_t *buf)
{
	struct task_struct *p = get_current();

	if (!p->uk_restore_sigmask)
		return NULL;
	sigemptyset(buf);
	buf->__val[0] = READ_ONCE(p->uk_sigblocked);
	return buf;
}

} // namespace uk

/*
 * The mask is a program's pointer, which may be wild: it is read with
 * process_vm_readv() on this process, so that a bad address is the host
 * kernel's EFAULT rather than a fault here (the shim has no usercopy of its
 * own; only io_pgetevents-style calls come this way).
 */
static int read_user_sigmask(u64 *mask, const sigset_t *umask)
{
	struct iovec local = { .iov_base = mask, .iov_len = sizeof(*mask) };
	struct iovec remote = { .iov_base = const_cast<sigset_t *>(umask),
				.iov_len = sizeof(*mask) };

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(*mask))
		return -EFAULT;
	return 0;
}

int set_user_sigmask(const sigset_t *umask, size_t sigsetsize)
{
	struct task_struct *p = get_current();
	u64 mask;

	if (!umask)
		return 0;
	if (sigsetsize != sizeof(u64))
		return -EINVAL;
	if (read_user_sigmask(&mask, umask))
		return -EFAULT;
	p->uk_saved_sigmask = READ_ONCE(p->uk_sigblocked);
	p->uk_restore_sigmask = true;
	WRITE_ONCE(p->uk_sigblocked, mask & ~(u64)__UK_SIG_UNBLOCKABLE);
	return 0;
}

void restore_saved_sigmask(void)
{
	struct task_struct *p = get_current();

	if (p->uk_restore_sigmask) {
		p->uk_restore_sigmask = false;
		WRITE_ONCE(p->uk_sigblocked, p->uk_saved_sigmask);
	}
}

void restore_saved_sigmask_unless(bool interrupted)
{
	/* No return-to-user signal delivery here: always put the mask back. */
	(void)interrupted;
	restore_saved_sigmask();
}
