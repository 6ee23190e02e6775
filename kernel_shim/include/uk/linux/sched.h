/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tasks (include/linux/sched.h): every thread that touches `current` gets a
 * struct task_struct, created lazily and released when the thread exits.
 *
 * Sleeping follows the kernel's protocol: the sleeper publishes its state
 * with set_current_state() (a full barrier), re-checks its condition, then
 * calls schedule(); a waker moves __state from a matching sleeping state to
 * TASK_RUNNING (try_to_wake_up) and kicks the sleeper's futex. schedule()
 * only blocks while __state is not TASK_RUNNING, so a wake-up arriving after
 * set_current_state() but before schedule() cannot be missed.
 *
 * Upstream: include/linux/sched.h @ v6.12
 */
#ifndef UK_LINUX_SCHED_H
#define UK_LINUX_SCHED_H

#include <climits>
#include <cstdint>
#include <sys/types.h>

#include <uk/linux/atomic.h>
#include <uk/linux/barrier.h>
#include <uk/linux/compiler.h>
#include <uk/linux/kernel.h>
#include <uk/linux/list.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>
#include <uk/linux/types.h>

/* Task states (the __state word). */
#define TASK_RUNNING 0x00000000
#define TASK_INTERRUPTIBLE 0x00000001
#define TASK_UNINTERRUPTIBLE 0x00000002
#define __TASK_STOPPED 0x00000004
#define __TASK_TRACED 0x00000008
#define EXIT_DEAD 0x00000010
#define EXIT_ZOMBIE 0x00000020
#define TASK_PARKED 0x00000040
#define TASK_DEAD 0x00000080
#define TASK_WAKEKILL 0x00000100
#define TASK_WAKING 0x00000200
#define TASK_NOLOAD 0x00000400
#define TASK_NEW 0x00000800

#define TASK_KILLABLE (TASK_WAKEKILL | TASK_UNINTERRUPTIBLE)
#define TASK_STOPPED (TASK_WAKEKILL | __TASK_STOPPED)
#define TASK_IDLE (TASK_UNINTERRUPTIBLE | TASK_NOLOAD)
#define TASK_NORMAL (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)

#define task_is_running(task) (READ_ONCE((task)->__state) == TASK_RUNNING)

/* Per-task flags (task_struct::flags). */
#define PF_IDLE 0x00000002
#define PF_EXITING 0x00000004
#define PF_IO_WORKER 0x00000010
#define PF_WQ_WORKER 0x00000020
#define PF_MEMALLOC 0x00000800
#define PF_NOFREEZE 0x00008000
#define PF_MEMALLOC_NOIO 0x00080000
#define PF_KTHREAD 0x00200000
#define PF_BLOCK_TS 0x20000000 /* the plug holds a time stamp (cur_ktime) */

#define TASK_COMM_LEN 16

#define MAX_SCHEDULE_TIMEOUT LONG_MAX

struct bio_list;
struct blk_plug;
struct mm_struct;
struct worker;
struct wait_queue_entry;

/* task_struct.uk_sleeping: how the task sleeps, if it does */
#define UK_SLEEP_FUTEX 1u /* in schedule(), on the futex over __state */
#define UK_SLEEP_HOST 2u  /* in a host call, on an eventfd (host_sleep_begin) */

struct task_struct {
	/* Sleeping state; read/written with READ_ONCE/WRITE_ONCE/cmpxchg. */
	unsigned int __state;
	unsigned int flags;	  /* PF_* */
	pid_t pid;		  /* gettid() */
	pid_t tgid;		  /* getpid() */
	char comm[TASK_COMM_LEN]; /* pthread name at creation */
	atomic_t usage;		  /* get_task_struct/put_task_struct */
	int in_iowait;		  /* inside io_schedule() */
	u64 timer_slack_ns;

	/*
	 * Signals for tests: bit (sig - 1) of a 64-bit mask, as in the kernel's
	 * sigset_t. Written with atomic RMW ops; see <uk/linux/sched/signal.h>.
	 */
	u64 uk_sigpending;
	u64 uk_sigblocked;
	u64 uk_saved_sigmask;
	bool uk_restore_sigmask;
	/*
	 * A host signal's handler ran while this task slept in a host call
	 * (see uk::host_sleep_interrupted()): signal_pending() holds until
	 * uk::host_signal_delivered() says the system call has returned.
	 */
	bool uk_host_sigpending;

	struct mm_struct *mm;	  /* uk::process_mm (<uk/linux/mm_types.h>) */
	struct blk_plug *plug;	  /* blk_start_plug(), flushed by schedule() */
	struct worker *uk_worker; /* workqueue worker that runs on this task */
	void *journal_info;
	/* submit_bio_noacct_nocheck(): the bios a ->submit_bio submits */
	struct bio_list *bio_list;
	/* 2.6 retry-based AIO: the iocb's wait entry while a retry runs */
	struct wait_queue_entry *io_wait;

	/* Shim internals. */
	/* UK_SLEEP_FUTEX in schedule(), UK_SLEEP_HOST in a host call */
	uint32_t uk_sleeping;
	int uk_wake_fd; /* the eventfd of a host sleep, under uk_wake_lock */
	uint32_t uk_wake_lock;
	uint64_t uk_nvcsw;  /* schedule() calls that slept */
	uint64_t uk_serial; /* unique over the process's life, from 1 */
};

namespace uk
{
/* __thread, not thread_local: no TLS wrapper call on the fast path */
extern __thread struct task_struct *tls_current __attribute__((tls_model("initial-exec")));
struct task_struct *task_create_current(void);
} // namespace uk

static __always_inline struct task_struct *get_current(void)
{
	struct task_struct *p = ::uk::tls_current;

	if (likely(p))
		return p;
	return ::uk::task_create_current();
}

/*
 * `current`: an object, not a macro, so it cannot clash with identifiers
 * named current in C++ library headers. It converts to struct task_struct *
 * and supports current->field, *current, ==, passing as an argument.
 */
struct uk_current_task {
	__always_inline operator struct task_struct *() const
	{
		return get_current();
	}
	__always_inline struct task_struct *operator->() const
	{
		return get_current();
	}
	__always_inline struct task_struct &operator*() const
	{
		return *get_current();
	}
};
inline constexpr uk_current_task current{};

#define get_current_state() READ_ONCE(get_current()->__state)

/* Sleep-state setters; set_current_state() orders the store before later loads. */
#define __set_current_state(state_value) WRITE_ONCE(get_current()->__state, (state_value))
#define set_current_state(state_value) smp_store_mb(get_current()->__state, (state_value))
#define __set_special_state(p, state_value) WRITE_ONCE((p)->__state, (state_value))

static inline unsigned int task_state_read(const struct task_struct *p)
{
	return READ_ONCE(p->__state);
}

static inline struct task_struct *get_task_struct(struct task_struct *t)
{
	atomic_inc(&t->usage);
	return t;
}

void __put_task_struct(struct task_struct *t);

static inline void put_task_struct(struct task_struct *t)
{
	if (atomic_dec_and_test(&t->usage))
		__put_task_struct(t);
}

static inline pid_t task_pid_nr(struct task_struct *t)
{
	return t->pid;
}

#define task_pid_vnr(t) task_pid_nr(t)
#define task_tgid_nr(t) ((t)->tgid)

static inline char *get_task_comm(char *buf, struct task_struct *t)
{
	memcpy(buf, t->comm, TASK_COMM_LEN);
	return buf;
}

void set_task_comm(struct task_struct *t, const char *name);

/* Scheduling. */
void schedule(void);
void io_schedule(void);
/*
 * include/linux/sched/sysctl.h without CONFIG_DETECT_HUNG_TASK: there is no
 * hung-task detector, and its period reads as 0.
 */
enum { sysctl_hung_task_timeout_secs = 0 };
long schedule_timeout(long timeout);
long schedule_timeout_interruptible(long timeout);
long schedule_timeout_killable(long timeout);
long schedule_timeout_uninterruptible(long timeout);
long schedule_timeout_idle(long timeout);
long io_schedule_timeout(long timeout);
int io_schedule_prepare(void);
void io_schedule_finish(int token);
void schedule_preempt_disabled(void);
int wake_up_process(struct task_struct *p);
int wake_up_state(struct task_struct *p, unsigned int state);
int try_to_wake_up(struct task_struct *p, unsigned int state, int wake_flags);
void yield(void);

/*
 * Linux places the functions a task sleeps in into .sched.text, so that
 * wchan can skip them; nothing here reads a task's wait channel.
 */
#define __sched

#define WF_SYNC 0x10
/* A hint to wake the task on the waker's CPU; tasks here are host threads. */
#define WF_CURRENT_CPU 0x40

namespace uk
{

/*
 * Called by schedule() when current has a plug (blk sets it; the shim does
 * not link blk). Mirrors sched_submit_work()'s blk_flush_plug().
 */
extern void (*sched_flush_plug_hook)(struct task_struct *tsk);

/*
 * True while `p` is blocked inside schedule() (on its futex) or in a host
 * sleep (host_sleep_begin()). For tests.
 */
static inline bool task_is_blocked(const struct task_struct *p)
{
	return __atomic_load_n(&p->uk_sleeping, __ATOMIC_ACQUIRE) != 0 &&
	       READ_ONCE(p->__state) != TASK_RUNNING;
}

/*
 * Waits (yielding the host CPU) until `p` is blocked in schedule(): lets a
 * test advance a virtual clock only once the sleeper armed its timer.
 * Returns false if that did not happen within `timeout_ms` of host time.
 */
bool wait_task_blocked(const struct task_struct *p, int timeout_ms = 10000);

/*
 * A host system call that can block for long (fsync(), ...) is a sleep to
 * the kernel code around it, yet it never passes through schedule().
 * host_block_begin() and host_block_end() bracket such a call: on a
 * workqueue worker they tell its pool what schedule() would
 * (wq_worker_sleeping(), wq_worker_running()), so that a concurrency-managed
 * pool starts another worker for the items queued behind the blocked one.
 * Elsewhere they do nothing.
 */
void host_block_begin(void);
void host_block_end(void);

/*
 * A task that sleeps in a host call where the kernel's would call schedule()
 * (ppoll() on an eventfd of its own, under a signal mask) is woken by
 * try_to_wake_up() like any other: with its sleeping state set, it names the
 * eventfd with host_sleep_begin() just before the call, and try_to_wake_up()
 * writes 1 to it where it would wake the futex. host_sleep_begin() returns
 * false when the task was woken already: then it skips the call, as
 * schedule() returns at once. host_sleep_end(), right after the call, takes
 * the eventfd back: no waker writes to it once it returns, so the caller may
 * drain it and close it afterwards. The task stays in its sleeping state;
 * the caller loops, as after schedule().
 */
bool host_sleep_begin(int efd);
void host_sleep_end(void);

/* Number of live task_structs (leak checks). */
long nr_tasks(void);

/*
 * Does for the calling thread what its exit does in the shim: ends its task
 * (its next use of current starts a new one), takes it out of the RCU
 * reader registry and empties its slab magazines. For a host thread that
 * runs one task after another (the explorer's workers): each task meets the
 * shim as a new thread would.
 */
void task_exit_current(void);

} // namespace uk

#endif /* UK_LINUX_SCHED_H */
