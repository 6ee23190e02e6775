/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fs/aio.c's interface (include/linux/aio.h) plus the system-call entry
 * points of the user-mode port. Every ukern_io_*() behaves like the system
 * call of the same name: it returns a value >= 0 or -errno, never touches
 * errno, and treats its pointer arguments as user pointers (a bad one gives
 * -EFAULT, never a crash).
 *
 * The ABI structures are only forward-declared here so that this header can
 * be used both with <uk/linux/aio_abi.h> and with <ukern/libaio.h> (whose
 * struct iocb / io_event have libaio's field names and the same layout).
 *
 * Upstream: include/linux/aio.h @ v6.12
 */
#ifndef UK_LINUX_AIO_H
#define UK_LINUX_AIO_H

#include <signal.h>
#include <stddef.h>
#include <time.h>

struct iocb;
struct io_event;
struct kioctx;
struct kiocb;
struct mm_struct;
struct rcu_work;

#ifndef UK_AIO_SIGSET_DEFINED
#define UK_AIO_SIGSET_DEFINED
struct __aio_sigset {
	const sigset_t *sigmask;
	size_t sigsetsize;
};
#endif

#ifdef __cplusplus
extern "C" {
#endif

long ukern_io_setup(unsigned int nr_events, unsigned long *ctxp);
long ukern_io_destroy(unsigned long ctx);
long ukern_io_submit(unsigned long ctx_id, long nr, struct iocb **iocbpp);
long ukern_io_cancel(unsigned long ctx_id, struct iocb *iocb, struct io_event *result);
long ukern_io_getevents(unsigned long ctx_id, long min_nr, long nr, struct io_event *events,
			struct timespec *timeout);
long ukern_io_pgetevents(unsigned long ctx_id, long min_nr, long nr, struct io_event *events,
			 struct timespec *timeout, const struct __aio_sigset *usig);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
typedef int(kiocb_cancel_fn)(struct kiocb *);

/* The process's contexts are torn down (last mmput); waits for their I/O. */
void exit_aio(struct mm_struct *mm);
void kiocb_set_cancel_fn(struct kiocb *req, kiocb_cancel_fn *cancel);
struct mm_struct *aio_current_mm(void);

/* /proc/sys/fs/aio-nr and aio-max-nr (process-local here). */
extern unsigned long aio_nr;
extern unsigned long aio_max_nr;

namespace uk::aio
{

/*
 * Before/after switches (seeds 1 and 2), read at every use; change them only
 * while no context exists. They are also the parameters aio.lookup,
 * aio.reqs, aio.ref and aio.submit (UKERN_CMDLINE, docs/params.md).
 */
enum class LookupMode { kTable = 0, kList = 1, kRadix = 2 };
enum class ReqsMode { kPercpu = 0, kLocked = 1 };
enum class RefMode { kPercpu = 0, kAtomic = 1 };
/*
 * kDirect: 3.10+, io_submit_one() issues the operation without ctx_lock.
 * kCtxLock: the retry-based code before 3.10 (3.3-3.9), which took
 * ctx_lock three times per iocb: to check ctx->dead before the operation,
 * again after it (aio_run_iocb() dropped the lock around ->ki_retry() and
 * io_submit_one() then looked at the run list), and in aio_put_req() to
 * drop the submit reference.
 */
enum class SubmitMode { kDirect = 0, kCtxLock = 1 };
extern LookupMode aio_lookup_mode;
extern ReqsMode aio_reqs_mode;
extern RefMode aio_ref_mode;
extern SubmitMode aio_submit_mode;

/*
 * Where O_DIRECT reads and writes on host files run (aio.host_backend):
 * kUring, one io_uring shared by every context with a reaper thread that
 * completes the requests, so the program's queue depth reaches the host;
 * kThreads, one work item per request on the unbound aio workqueue. A
 * process whose io_uring_queue_init() fails (io_uring_disabled, seccomp)
 * uses kThreads.
 */
enum class HostBackend { kUring = 0, kThreads = 1 };
extern HostBackend aio_host_backend;
/* The backend the next host request goes to (kThreads if io_uring failed). */
HostBackend host_backend_active(void);
/*
 * Host requests the host is working on: submitted to the ring and not yet
 * reaped (kUring), or inside the work item's system call (kThreads).
 */
long host_inflight(void);

/* Introspection for tests. -EINVAL for an unknown handle. */
struct CtxInfo {
	unsigned id;
	unsigned nr_events;
	unsigned max_reqs;
	unsigned req_batch;
	unsigned reqs_available_global;
	unsigned reqs_available_percpu; /* sum over CPUs */
	unsigned completed_events;
	unsigned tail;
	unsigned long user_id;
	unsigned long long reqs_in_flight;
};
int ctx_info(unsigned long ctx_id, CtxInfo *info);
/* Current table size (0: none) and number of live contexts. */
unsigned table_nr(void);
/* Outstanding objects: contexts and requests not yet freed. */
long nr_live_ctx(void);
long nr_live_reqs(void);
/*
 * VMAs the rings make (neighbouring rings share one), and the most they
 * may: vm.max_map_count less a reserve for the rest of the process
 * (io_setup() fails with -ENOMEM beyond, as the kernel's at the limit).
 */
long nr_ring_vmas(void);
long ring_vmas_max(void);
/*
 * aio's initcall (aio_setup()): once, before a system call that is not one
 * of the ukern_io_*() entry points, which run it themselves.
 */
void boot(void);
/* Waits until every RCU-deferred free has run. */
void quiesce(void);
/* The process exits: its ring mappings go, exit_aio() runs (test hook). */
void reset_mm_for_test(void);

/*
 * The buggy sides of two historical races, for the explore tests
 * (docs/explore.md); parameters aio.lookup_get_v416 and
 * aio.kill_cancel_v310. lookup_get_v416: lookup_ioctx() takes its
 * reference with percpu_ref_get() instead of percpu_ref_tryget_live(), as
 * 3.11-4.16 did (fixed by baf10564fbb6). kill_cancel_v310: kill_ioctx()
 * cancels the requests on active_reqs before it drops the users reference,
 * and free_ioctx_users() does not, as 3.10 did (fixed by 36f5588905c1).
 */
extern bool lookup_get_v416;
extern bool kill_cancel_v310;
/*
 * Test hook: when set, free_ioctx_reqs() hands the context's rcu_work to it
 * instead of queue_rcu_work(system_wq): the explore tests end the grace
 * period themselves, once no task of the schedule runs, by calling
 * rwork->work.func(&rwork->work). NULL (the default): the system workqueue.
 */
extern void (*free_ioctx_rcu_hook)(struct rcu_work *rwork);

} // namespace uk::aio
#endif

#endif /* UK_LINUX_AIO_H */
