/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Retry-based AIO as Linux 2.6 had it (2.6.8 to 3.9): include/linux/aio.h
 * and the internals of fs/aio.c of that era, in user mode. A request that
 * cannot finish at once returns -EIOCBRETRY from its ki_retry method after
 * queueing its own wait-queue entry (ki_wait) where it would have slept;
 * the wake-up kicks it onto its context's run list, and whoever runs the
 * list next (io_submit, io_getevents, the aio_wq worker) calls ki_retry
 * again. docs/aio-v26.md describes the engine and its switches.
 *
 * The contexts share the ring ABI (struct aio_ring, struct io_event) and
 * the ukern_io_*() entry points with aio.cc; the engine is chosen per
 * context at io_setup time by the parameter aio.engine=current|v26.
 *
 * Everything lives in namespace uk::aio26: its struct kiocb, kioctx and
 * file are the 2.6 ones, distinct from aio.cc's.
 */
#ifndef UK_LINUX_AIO_V26_H
#define UK_LINUX_AIO_V26_H

#include <sys/types.h>

#include <uk/linux/atomic.h>
#include <uk/linux/list.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/types.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

struct io_event;
struct iocb;
struct mm_struct;

/* "aio_complete() will be called later" / "kick_iocb() will be called later". */
#define EIOCBQUEUED 529
#define EIOCBRETRY 530

namespace uk::aio26
{

/* aio.engine: which fs/aio.c a context created by io_setup() runs. */
enum class Engine { kCurrent = 0, kV26 = 1 };
/*
 * aio.v26_retry, the three states of "AIO workqueue context switch
 * reduction" (2004):
 *  kBefore:  io_submit runs a request once and queue_work()s every retry;
 *            io_getevents never runs retries.
 *  kAfter:   io_submit drains the run list, io_getevents runs it when no
 *            event is ready, kicks start the worker with queue_delayed_work.
 *  kRunning: kAfter plus ctx->running: two tasks never run one context's
 *            run list at once.
 */
enum class RetryMode { kBefore = 0, kAfter = 1, kRunning = 2 };

extern Engine aio_engine;
extern RetryMode aio_retry_mode;
/* aio.v26_stall_fix: waiter-aware delay (1 jiffy / HZ/10) and aio_run_all_iocbs(). */
extern bool aio_stall_fix;
/* aio.v26_put_cancel: cancel_delayed_work(&ctx->wq) in __put_ioctx(). */
extern bool aio_put_cancel;

/* ---- struct file of the engine (2.6's ->aio_read/->aio_write) ---- */
struct file;
struct kiocb;
struct kioctx;

struct file_operations {
	/*
	 * Bytes done, -errno, -EIOCBRETRY (ki_wait was queued where the call
	 * would sleep: current->io_wait) or -EIOCBQUEUED (aio_complete later).
	 */
	ssize_t (*aio_read)(struct kiocb *iocb, char __user *buf, size_t count, loff_t pos);
	ssize_t (*aio_write)(struct kiocb *iocb, const char __user *buf, size_t count, loff_t pos);
	int (*aio_fsync)(struct kiocb *iocb, int datasync);
	/* Synchronous read/write for the program's read()/write(). */
	ssize_t (*read)(struct file *file, char __user *buf, size_t count);
	ssize_t (*write)(struct file *file, const char __user *buf, size_t count);
	/* The last reference went. */
	int (*release)(struct file *file);
};

struct file {
	const struct file_operations *f_op;
	unsigned int f_mode;  /* FMODE_READ | FMODE_WRITE */
	unsigned int f_flags; /* O_NONBLOCK ... */
	bool f_fifo;	      /* S_ISFIFO: a short read completes the request */
	int f_fd;	      /* host descriptor for host files, else -1 */
	atomic_long_t f_count;
	void *private_data;
};

/*
 * fget(): the engine's own files (ukern pipes) by descriptor, else a host
 * file over @fd (dup'ed). NULL for a bad descriptor. fput() drops a
 * reference; the last one calls ->release.
 */
struct file *fget(unsigned int fd);
void fput(struct file *file);
/*
 * Registers @file under descriptor @fd, a host descriptor that holds the
 * number (one reference moves to the table).
 */
int fd_install(int fd, struct file *file);
/* Takes @fd out of the table, closes it and drops the reference; -EBADF if unknown. */
int fd_close(int fd);
bool fd_is_ours(int fd);

/* ---- requests ---- */
#define KIF_LOCKED 0
#define KIF_KICKED 1
#define KIF_CANCELLED 2

struct kiocb {
	struct list_head ki_run_list; /* on ctx->run_list; NULL links: retry in flight */
	unsigned long ki_flags;	      /* KIF_* bits */
	int ki_users;		      /* under ctx_lock */
	unsigned ki_key;

	struct file *ki_filp;
	struct kioctx *ki_ctx;
	int (*ki_cancel)(struct kiocb *iocb, struct io_event *res);
	ssize_t (*ki_retry)(struct kiocb *iocb);

	struct list_head ki_list; /* on ctx->active_reqs */
	struct iocb __user *ki_obj_user;
	__u64 ki_user_data;
	loff_t ki_pos;
	unsigned short ki_opcode;
	char __user *ki_buf; /* progress of a partial transfer */
	size_t ki_left;
	size_t ki_nbytes;
	wait_queue_entry_t ki_wait; /* ->func is aio_wake_function */

	/* debugging counters, updated lock-free */
	long ki_retried;
	long ki_kicked;
	long ki_queued;

	void *private_; /* for the file's aio methods */
};

#define kiocbSetKicked(iocb) set_bit(KIF_KICKED, &(iocb)->ki_flags)
#define kiocbClearKicked(iocb) clear_bit(KIF_KICKED, &(iocb)->ki_flags)
#define kiocbTryKick(iocb) test_and_set_bit(KIF_KICKED, &(iocb)->ki_flags)
#define kiocbIsKicked(iocb) test_bit(KIF_KICKED, &(iocb)->ki_flags)
#define kiocbSetCancelled(iocb) set_bit(KIF_CANCELLED, &(iocb)->ki_flags)
#define kiocbIsCancelled(iocb) test_bit(KIF_CANCELLED, &(iocb)->ki_flags)

/* Retried more than once: a method may tell a first call from a retry. */
static inline bool is_retried_kiocb(const struct kiocb *iocb)
{
	return __atomic_load_n(&iocb->ki_retried, __ATOMIC_RELAXED) > 1;
}

/*
 * current->io_wait: NULL for synchronous I/O, the iocb's ki_wait while a
 * retry runs. An entry with no task (ki_wait) is the asynchronous kind.
 */
static inline bool is_sync_wait(const wait_queue_entry_t *wait)
{
	return !wait || wait->private_;
}

static inline struct kiocb *io_wait_to_kiocb(wait_queue_entry_t *wait)
{
	return container_of(wait, struct kiocb, ki_wait);
}

/* ---- contexts ---- */
struct aio_ring_info {
	unsigned long mmap_base; /* the ring, mapped in the program */
	unsigned long mmap_size;
	unsigned nr;   /* io_events the ring holds */
	unsigned tail; /* the "kernel's" copy, under ctx_lock */
	spinlock_t ring_lock;
};

struct kioctx {
	atomic_t users;
	int dead;
	struct mm_struct *mm;
	struct kioctx *next; /* on the mm's ioctx_list */
	unsigned long user_id;

	wait_queue_head_t wait; /* io_getevents sleepers, io_destroy */

	spinlock_t ctx_lock;
	int reqs_active;
	struct list_head active_reqs;
	struct list_head run_list;
	unsigned max_reqs;
	struct aio_ring_info ring_info;

	struct delayed_work wq; /* aio_kick_handler on aio_wq */
	int running;		/* kRunning: somebody runs run_list */
};

/* The functions of 2.6's fs/aio.c, for tests and for the files' methods. */
ssize_t aio_run_iocb(struct kiocb *iocb);
int __queue_kicked_iocb(struct kiocb *iocb);
int __aio_run_iocbs(struct kioctx *ctx);
void aio_run_iocbs(struct kioctx *ctx);
void aio_run_all_iocbs(struct kioctx *ctx);
void aio_queue_work(struct kioctx *ctx);
void queue_kicked_iocb(struct kiocb *iocb);
void kick_iocb(struct kiocb *iocb);
int aio_complete(struct kiocb *iocb, long res, long res2);
int aio_put_req(struct kiocb *iocb);
int aio_wake_function(wait_queue_entry_t *wait, unsigned mode, int sync, void *key);
extern struct workqueue_struct *aio_wq;

/* use_mm()/unuse_mm(): the worker borrows the submitter's mm (recorded only). */
void use_mm(struct mm_struct *mm);
void unuse_mm(struct mm_struct *mm);
struct mm_struct *current_active_mm(void);

/*
 * The system calls for contexts of this engine; aio.cc's ukern_io_*()
 * hand a context over when owns() says it is one of ours.
 */
long sys_io_setup(unsigned nr_events, unsigned long __user *ctxp);
long sys_io_destroy(unsigned long ctx);
long sys_io_submit(unsigned long ctx_id, long nr, struct iocb __user *__user *iocbpp);
long sys_io_cancel(unsigned long ctx_id, struct iocb __user *iocb, struct io_event __user *result);
long sys_io_getevents(unsigned long ctx_id, long min_nr, long nr, struct io_event __user *events,
		      const struct timespec __user *timeout);
bool owns(unsigned long ctx_id);

/* For tests: a context by id (a reference: put_ioctx()), and put_ioctx. */
struct kioctx *lookup_ioctx(unsigned long ctx_id);
void put_ioctx(struct kioctx *ctx);

/* Counters since start (relaxed): what pipetest and the tests read. */
struct Stats {
	unsigned long kick_handler_runs; /* aio_kick_handler() calls: worker wake-ups */
	unsigned long worker_iocbs_run;	 /* retries the worker ran */
	unsigned long queue_work_calls;	 /* queue_work / queue_delayed_work that queued */
	unsigned long retries;		 /* aio_run_iocb() calls */
	unsigned long kicks;		 /* kick_iocb() calls */
	unsigned long running_skips;	 /* __aio_run_iocbs() found ctx->running */
};
Stats stats(void);
/* Live requests and contexts of the engine (leak checks). */
long nr_live_reqs(void);
long nr_live_ctx(void);
/* Waits for everything queued on aio_wq (timers not yet fired excepted). */
void flush_aio_wq(void);

/*
 * Test hook: when set, the engine's work items (ctx->wq, the deferred fput)
 * go to these instead of the shim's aio_wq, so that a test can run the
 * delayed work's timer and the worker in tasks of its own (the explorer's
 * scenes, tests/explore/aio_v26_test.cc). Set and cleared only while the
 * engine has no context.
 */
struct AioWqOps {
	bool (*queue_work)(struct work_struct *work);
	bool (*queue_delayed_work)(struct delayed_work *dwork, unsigned long delay);
	bool (*cancel_delayed_work)(struct delayed_work *dwork);
	void (*flush)(void); /* flush_workqueue(aio_wq) */
};
extern const AioWqOps *aio_wq_ops;

} // namespace uk::aio26

#endif /* UK_LINUX_AIO_V26_H */
