// SPDX-License-Identifier: GPL-2.0-only
// Historical fs/aio.c races and the aio contract, under the explorer.
//
// Every scene runs aio's kernel side in explorer tasks: the tasks make the
// system calls (ukern_io_*, one-line wrappers of sys_io_*), which look the
// context up, submit, cancel, reap and destroy in the calling task. What
// would run on other threads is kept out:
//  - requests go to a test device ("xdev", a registered file): read_iter
//    makes the request cancellable and parks it; an interrupt
//    (explore::irq) completes it, and a completer task completes what a
//    cancellation asked for (as a USB gadget completes a dequeued request
//    from its own context, never from ->ki_cancel, which runs under
//    ctx_lock);
//  - contexts use aio.ref=atomic: percpu_ref_kill() of a percpu-mode ref
//    folds the per-CPU counts in an RCU callback (another thread), an
//    atomic-mode kill drops the count at once in the calling task;
//  - free_ioctx_reqs() hands its rcu_work to uk::aio::free_ioctx_rcu_hook,
//    and the body frees the context after join(), when no task of the
//    schedule is left in an RCU read-side section: the latest end of the
//    grace period that queue_rcu_work() waits for;
//  - reaping uses a zero timeout (read_events() sleeps in ppoll() on a host
//    eventfd, which the explorer cannot schedule);
//  - a context that lives for the whole test ("keeper") keeps the radix
//    tree of the lookup era modes populated, so that deleting a scene's
//    context frees no tree node (radix_tree_node_free() is an RCU
//    callback, run on a virtual CPU by the RCU thread).
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <vector>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/errno.h>
#include <uk/linux/poll.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/cpu.h>

#include "explore.h"
#include "testmain.h"

namespace {

// Today's code: the bounded search, a few seconds in ctest (the
// environment and tools/ukern explore --budget/--schedules override).
explore::Options SurviveOptions() {
  explore::Options o = explore::test_defaults();
  o.max_seconds = 5;
  return o;
}

// ---- xdev: a cancellable device, completed by interrupts ----

constexpr int kSlots = 4;

struct XDev {
  struct kiocb *pending[kSlots];  // parked requests, claimed by xchg
  int cancelled[kSlots];          // ->ki_cancel asked for the slot
  int completions[kSlots];        // ki_complete() calls per slot
  long res[kSlots];
  wait_queue_head_t wq;  // the completer sleeps here
  int stop;
};
XDev xdev;

// The slot of a request is its offset (the scene's iocb index).
ssize_t XReadIter(struct kiocb *kiocb, struct iov_iter *to);

int XCancel(struct kiocb *kiocb) {
  // Under ctx_lock with interrupts off: only ask; the completer completes.
  WRITE_ONCE(xdev.cancelled[kiocb->ki_pos], 1);
  wake_up(&xdev.wq);
  return 0;
}

ssize_t XReadIter(struct kiocb *kiocb, struct iov_iter *to) {
  (void)to;
  // Cancellable first, then visible to the completion interrupt: a request
  // completed before kiocb_set_cancel_fn() would be left on active_reqs.
  kiocb_set_cancel_fn(kiocb, XCancel);
  // Released, as a driver's doorbell orders the request before the device
  // sees it: the completion's xchg takes it with what was written to it.
  smp_store_release(&xdev.pending[kiocb->ki_pos], kiocb);
  return -EIOCBQUEUED;
}

const struct file_operations xdev_fops = {
    .read_iter = XReadIter,
    .write_iter = nullptr,
    .fsync = nullptr,
    .poll = nullptr,
};

// Completes the request in @slot, if it is still there; from a task or an
// interrupt.
void XComplete(int slot, long res) {
  struct kiocb *k = xchg(&xdev.pending[slot], (struct kiocb *)nullptr);
  if (!k) return;
  xdev.completions[slot]++;
  xdev.res[slot] = res;
  k->ki_complete(k, res);
}

bool XCancelPending() {
  for (int s = 0; s < kSlots; s++)
    if (READ_ONCE(xdev.cancelled[s]) && READ_ONCE(xdev.pending[s])) return true;
  return false;
}

void XSweepCancelled() {
  for (int s = 0; s < kSlots; s++)
    if (READ_ONCE(xdev.cancelled[s])) XComplete(s, -ECANCELED);
}

// The device's completion context for cancelled requests: until stopped.
void XCompleter() {
  for (;;) {
    wait_event(xdev.wq, XCancelPending() || READ_ONCE(xdev.stop));
    XSweepCancelled();
    if (READ_ONCE(xdev.stop)) break;
  }
  XSweepCancelled();
}

void XStop() {
  WRITE_ONCE(xdev.stop, 1);
  wake_up(&xdev.wq);
}

void XReset() {
  for (int s = 0; s < kSlots; s++) {
    xdev.pending[s] = nullptr;
    xdev.cancelled[s] = 0;
    xdev.completions[s] = 0;
    xdev.res[s] = 0;
  }
  init_waitqueue_head(&xdev.wq);
  xdev.stop = 0;
}

// ---- the scene: one context, its iocbs, the deferred frees ----

struct Scene {
  int fd = -1;               // registered with xdev_fops
  unsigned long keeper = 0;  // lives for the whole test
  unsigned long ctx = 0;     // this schedule's context
  struct iocb iocbs[kSlots];
  struct iocb *iocbp[kSlots];
  char buf[kSlots][512];
  std::vector<struct rcu_work *> frees;
  long live_reqs = 0;  // requests alive before the schedule (a stuck
                       // schedule of a Found test leaves its own)
};
Scene scene;

// free_ioctx_reqs() queues a context once; a second time (a context whose
// reqs count came back from zero) is a failed check, not a double free.
void DeferFree(struct rcu_work *rwork) {
  bool again = std::find(scene.frees.begin(), scene.frees.end(), rwork) !=
               scene.frees.end();
  EXPLORE_CHECK(!again);
  if (!again) scene.frees.push_back(rwork);
}

// After join(): the grace period is over; free what free_ioctx_reqs() queued.
void RunFrees() {
  auto frees = std::move(scene.frees);
  scene.frees.clear();
  for (struct rcu_work *rw : frees) rw->work.func(&rw->work);
}

// The set-up and tear-down of a test (outside explore::run()): the test
// device, aio's process-wide state, the keeper context, atomic refs.
struct AioTestEnv {
  AioTestEnv() {
    uk::aio::aio_ref_mode = uk::aio::RefMode::kAtomic;
    if (scene.fd < 0) {
      scene.fd = eventfd(0, EFD_CLOEXEC);
      EXPECT_EQ(aio_register_file(scene.fd, &xdev_fops, FMODE_READ, nullptr),
                0);
    }
    // The set-up allocates on CPU 0 (radix tree preloads are per CPU).
    uk::pin_thread_to_cpu(0);
    EXPECT_EQ(ukern_io_setup(8, &scene.keeper), 0);
    // A context made and destroyed after the keeper tops the preload up
    // again, as every schedule's set-up does.
    unsigned long warm = 0;
    EXPECT_EQ(ukern_io_setup(8, &warm), 0);
    EXPECT_EQ(ukern_io_destroy(warm), 0);
    uk::pin_thread_to_cpu(-1);
    uk::aio::quiesce();
    uk::aio::free_ioctx_rcu_hook = DeferFree;
  }
  ~AioTestEnv() {
    uk::aio::free_ioctx_rcu_hook = nullptr;
    uk::aio::lookup_get_v416 = false;
    uk::aio::kill_cancel_v310 = false;
    EXPECT_EQ(ukern_io_destroy(scene.keeper), 0);
    scene.keeper = 0;
    uk::aio::quiesce();
    uk::aio::aio_ref_mode = uk::aio::RefMode::kPercpu;
  }
};

// Per schedule: fresh device state and a fresh context.
void SceneSetUp() {
  XReset();
  scene.frees.clear();
  for (int i = 0; i < kSlots; i++) {
    struct iocb *cb = &scene.iocbs[i];
    memset(cb, 0, sizeof(*cb));
    cb->aio_lio_opcode = IOCB_CMD_PREAD;
    cb->aio_fildes = static_cast<uint32_t>(scene.fd);
    cb->aio_buf = reinterpret_cast<uint64_t>(scene.buf[i]);
    cb->aio_nbytes = sizeof(scene.buf[i]);
    cb->aio_offset = i;  // the xdev slot
    cb->aio_data = 100 + i;
    scene.iocbp[i] = cb;
  }
  scene.ctx = 0;
  scene.live_reqs = uk::aio::nr_live_reqs();
  uk::pin_thread_to_cpu(0);
  EXPLORE_CHECK(ukern_io_setup(8, &scene.ctx) == 0);
  uk::pin_thread_to_cpu(-1);
}

int SlotOf(uint64_t obj) {
  for (int i = 0; i < kSlots; i++)
    if (obj == reinterpret_cast<uint64_t>(&scene.iocbs[i])) return i;
  return -1;
}

// Reaps without sleeping; returns the count or -errno.
long ReapNow(struct io_event *ev, long nr) {
  struct timespec zero = {0, 0};
  return ukern_io_getevents(scene.ctx, 0, nr, ev, &zero);
}

// ---- 3.11-4.16: io_destroy() vs. lookup_ioctx() ----
//
// lookup_ioctx() found the context in the table under rcu_read_lock() and
// took its reference with percpu_ref_get(). An io_destroy() between the
// two took the users count to 0, ran free_ioctx_users() and queued the
// free; the get brought the count back to 1 and the caller went on with a
// context whose free waited only for the end of the lookup's RCU section,
// and whose put ran free_ioctx_users() a second time (fixed in 4.17 by
// baf10564fbb6, "aio: fix io_destroy(2) vs. lookup_ioctx() race":
// percpu_ref_tryget_live(), a dying context is a miss). Set-up: a context
// without requests; one task destroys it, one reaps from it. The second
// release kills ctx->reqs twice: percpu_ref_kill_and_confirm() WARNs.

void LookupVsDestroy(bool v416) {
  SceneSetUp();
  uk::aio::lookup_get_v416 = v416;
  static long destroyed, reaped;
  destroyed = reaped = 1;
  explore::spawn([] { destroyed = ukern_io_destroy(scene.ctx); }, 0);
  explore::spawn(
      [] {
        struct io_event ev[1];
        reaped = ReapNow(ev, 1);
      },
      1);
  explore::join();
  uk::aio::lookup_get_v416 = false;
  RunFrees();
  EXPLORE_CHECK(destroyed == 0);
  EXPLORE_CHECK(reaped == 0 || reaped == -EINVAL);
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == scene.live_reqs);
}

TEST(Historical, AioV416LookupDestroyFound) {
  AioTestEnv env;
  const long budget = 20000;
  explore::Options o = explore::find_options(budget, explore::Strategy::kDfs);
  explore::Result r = explore::run([] { LookupVsDestroy(true); }, o);
  uk::aio::lookup_get_v416 = false;
  explore::report_found("Historical.AioV416LookupDestroyFound", r,
                        o.max_schedules);
  uk::testing::AllowWarnings();  // the WARN is the finding
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("WARN"), std::string::npos) << r.message;
}

TEST(Historical, AioV416LookupDestroySurvives) {
  AioTestEnv env;
  explore::run_test(
      "Historical.AioV416LookupDestroySurvives", [] { LookupVsDestroy(false); },
      SurviveOptions());
}

// ---- before 3.11: kill_ioctx() cancels before the users reference ----
//
// 3.10's kill_ctx() cancelled the requests on active_reqs and then dropped
// the context's initial reference, while an io_submit() that had looked the
// context up before could still add a request: nobody cancelled it, and a
// request that completes only when cancelled (a USB gadget read waiting for
// the host) kept io_destroy() waiting for ever. Fixed in 3.11 by
// 36f5588905c1 ("aio: refcounting cleanup"): cancel once the users count is
// zero (today free_ioctx_users()), when no io_submit() can hold the
// context. Set-up: one task submits a read to xdev, one destroys the
// context, one completes cancelled requests until the destroy returns.

void SubmitVsDestroy(bool v310) {
  SceneSetUp();
  uk::aio::kill_cancel_v310 = v310;
  static long submitted, destroyed;
  submitted = destroyed = 1;
  explore::spawn(
      [] { submitted = ukern_io_submit(scene.ctx, 1, &scene.iocbp[0]); }, 1);
  explore::spawn(
      [] {
        destroyed = ukern_io_destroy(scene.ctx);
        XStop();
      },
      0);
  explore::spawn(XCompleter, 2);
  explore::join();
  uk::aio::kill_cancel_v310 = false;
  RunFrees();
  EXPLORE_CHECK(destroyed == 0);
  EXPLORE_CHECK(submitted == 1 || submitted == -EINVAL);
  EXPLORE_CHECK(xdev.completions[0] == (submitted == 1 ? 1 : 0));
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == scene.live_reqs);
}

TEST(Historical, AioV310KillCancelFound) {
  AioTestEnv env;
  const long budget = 20000;
  // The window is early in the submitter, where the bounded search (which
  // varies the last choices first) comes late; PCT's change points land
  // anywhere.
  explore::Options o = explore::find_options(budget, explore::Strategy::kPct);
  explore::Result r = explore::run([] { SubmitVsDestroy(true); }, o);
  uk::aio::kill_cancel_v310 = false;
  explore::report_found("Historical.AioV310KillCancelFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("sleeps in schedule()"), std::string::npos)
      << r.message;
}

TEST(Historical, AioV310KillCancelSurvives) {
  AioTestEnv env;
  explore::run_test(
      "Historical.AioV310KillCancelSurvives", [] { SubmitVsDestroy(false); },
      SurviveOptions());
}

// ---- contract: submit, complete, cancel, reap ----
//
// Three reads submitted in one io_submit(); an interrupt on CPU 1 completes
// slots 0 and 2, a task cancels slot 1, a task reaps once, the completer
// completes what was cancelled. After the schedule the body completes what
// no one completed (the device finishing later), reaps the rest and checks:
// every accepted iocb gives exactly one event, with its data and the result
// of whoever completed it (-ECANCELED for a cancellation); the ring slots
// all come back (reqs_available, per-CPU and global, plus the completed
// events not yet refilled, is nr_events - 1); no request is left.

void SubmitCompleteCancelReap() {
  SceneSetUp();
  static long submitted, cancelled, reaped;
  static struct io_event ev[kSlots];
  static int finishers;
  submitted = cancelled = reaped = 0;
  finishers = 2;
  auto finish = [] {
    if (atomic_dec_and_test(reinterpret_cast<atomic_t *>(&finishers))) XStop();
  };
  explore::spawn(
      [finish] {
        submitted = ukern_io_submit(scene.ctx, 3, scene.iocbp);
        finish();
      },
      1);
  explore::spawn(
      [finish] {
        struct io_event res;
        cancelled = ukern_io_cancel(scene.ctx, &scene.iocbs[1], &res);
        finish();
      },
      2);
  explore::spawn([] { reaped = ReapNow(ev, kSlots); }, 3);
  explore::spawn(XCompleter, 2);
  explore::irq(1, [] {
    XComplete(0, 512);
    XComplete(2, 512);
  });
  explore::join();

  EXPLORE_CHECK(submitted == 3);
  EXPLORE_CHECK(cancelled == -EINPROGRESS || cancelled == -EINVAL);
  EXPLORE_CHECK(reaped >= 0);
  int events[kSlots] = {};
  auto account = [&events](const struct io_event &e) {
    int s = SlotOf(e.obj);
    EXPLORE_CHECK(s >= 0 && s < 3);
    if (s < 0) return;
    events[s]++;
    EXPLORE_CHECK(e.data == static_cast<uint64_t>(100 + s));
    EXPLORE_CHECK(e.res == xdev.res[s]);
  };
  for (long i = 0; i < reaped; i++) account(ev[i]);
  // The device finishes what is left; then everything is reaped.
  for (int s = 0; s < kSlots; s++) XComplete(s, 512);
  struct io_event rest[kSlots];
  long more = ReapNow(rest, kSlots);
  EXPLORE_CHECK(more >= 0);
  for (long i = 0; i < more; i++) account(rest[i]);
  for (int s = 0; s < 3; s++) {
    EXPLORE_CHECK(events[s] == 1);
    EXPLORE_CHECK(xdev.completions[s] == 1);
  }
  if (cancelled == -EINPROGRESS) EXPLORE_CHECK(xdev.cancelled[1] == 1);
  uk::aio::CtxInfo info;
  EXPLORE_CHECK(uk::aio::ctx_info(scene.ctx, &info) == 0);
  EXPLORE_CHECK(info.reqs_available_global + info.reqs_available_percpu +
                    info.completed_events ==
                info.nr_events - 1);
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == scene.live_reqs);
  uk::pin_thread_to_cpu(0);
  EXPLORE_CHECK(ukern_io_destroy(scene.ctx) == 0);
  uk::pin_thread_to_cpu(-1);
  RunFrees();
}

TEST(AioContract, SubmitCompleteCancelReap) {
  AioTestEnv env;
  explore::run_test("AioContract.SubmitCompleteCancelReap",
                    SubmitCompleteCancelReap, SurviveOptions());
}

// ---- contract: ctx->wait.lock is interrupt-safe ----
//
// aio_complete() takes ctx->wait.lock in the completion interrupt when a
// reaper is queued on it; every other holder must keep interrupts off, or
// that interrupt arriving on the holder's CPU spins on it for ever (the
// explorer's lock validation reports it without the hang). A task submits
// one read and reaps it with min_nr 1 and a 1 ns timeout, which queues it
// as a waiter for a moment each round, until the interrupt on CPU 1 has
// completed the read (or, if the interrupt came first, completes it
// itself); then it destroys the context, which wakes every waiter under
// the same lock.

void WaitLockScene() {
  SceneSetUp();
  static long submitted, got, destroyed;
  static int irq_done;
  submitted = got = 0;
  destroyed = 1;
  irq_done = 0;
  explore::spawn(
      [] {
        submitted = ukern_io_submit(scene.ctx, 1, scene.iocbp);
        // 1 ns: read_events() queues the waiter, finds the deadline gone
        // and leaves without sleeping (a zero timeout never queues).
        struct timespec soon = {0, 1};
        struct io_event ev[1];
        while (got == 0 && submitted == 1) {
          got = ukern_io_getevents(scene.ctx, 1, 1, ev, &soon);
          if (got != 0) break;
          // An interrupt that came before the submission found nothing:
          // the device completes the read later.
          if (READ_ONCE(irq_done)) XComplete(0, 512);
          cpu_relax();
        }
        destroyed = ukern_io_destroy(scene.ctx);
      },
      0);
  explore::irq(1, [] {
    XComplete(0, 512);
    WRITE_ONCE(irq_done, 1);
  });
  explore::join();
  RunFrees();
  EXPLORE_CHECK(submitted == 1);
  EXPLORE_CHECK(got == 1);
  EXPLORE_CHECK(destroyed == 0);
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == scene.live_reqs);
}

TEST(AioContract, WaitLockIsIrqSafe) {
  AioTestEnv env;
  explore::run_test("AioContract.WaitLockIsIrqSafe", WaitLockScene,
                    SurviveOptions());
}

// ---- contract: a dying context ----
//
// Two reads submitted, an interrupt completing slot 0, io_destroy(), and a
// late task that submits slot 2 and cancels slot 1: a lookup that starts
// after io_destroy() has returned must fail with -EINVAL, one that wins
// must leave a request that the destroy cancels and waits for. Checks: io_destroy() returns 0 once every accepted
// request has completed exactly once; nothing is left pending; no request
// and (after the grace period) no context is left.

void DyingContext() {
  SceneSetUp();
  static long submitted, late_submit, late_cancel, destroyed;
  static int late_after;
  submitted = late_submit = late_cancel = destroyed = 1;
  late_after = 0;
  static int done_destroy;
  done_destroy = 0;
  explore::spawn([] { submitted = ukern_io_submit(scene.ctx, 2, scene.iocbp); },
                 1);
  explore::spawn(
      [] {
        destroyed = ukern_io_destroy(scene.ctx);
        WRITE_ONCE(done_destroy, 1);
        XStop();
      },
      0);
  explore::spawn(
      [] {
        struct io_event res;
        late_after = READ_ONCE(done_destroy);
        late_submit = ukern_io_submit(scene.ctx, 1, &scene.iocbp[2]);
        late_cancel = ukern_io_cancel(scene.ctx, &scene.iocbs[1], &res);
      },
      3);
  explore::spawn(XCompleter, 2);
  explore::irq(1, [] { XComplete(0, 512); });
  explore::join();
  RunFrees();

  EXPLORE_CHECK(destroyed == 0);
  EXPLORE_CHECK(submitted == 2 || submitted == -EINVAL);
  EXPLORE_CHECK(late_submit == 1 || late_submit == -EINVAL);
  EXPLORE_CHECK(late_cancel == -EINPROGRESS || late_cancel == -EINVAL);
  if (late_after) EXPLORE_CHECK(late_submit == -EINVAL);
  for (int s = 0; s < kSlots; s++) {
    bool accepted = (s < 2 && submitted == 2) || (s == 2 && late_submit == 1);
    EXPLORE_CHECK(xdev.completions[s] == (accepted ? 1 : 0));
    EXPLORE_CHECK(READ_ONCE(xdev.pending[s]) == nullptr);
  }
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == scene.live_reqs);
}

TEST(AioContract, DyingContext) {
  AioTestEnv env;
  explore::run_test("AioContract.DyingContext", DyingContext, SurviveOptions());
}

// ---- contract: IOCB_CMD_POLL on a file's wait queue ----
//
// pdev is a file whose ->poll() queues the request on a wait queue the
// driver owns; the driver wakes that queue with EPOLLIN from an interrupt,
// or, going away, takes every waiter off it with wake_up_pollfree() and
// frees it after a grace period (as signalfd and binder do). The driver's
// lock orders its wake-ups with the free. aio_poll_complete_work() and
// aio_poll_put_work() run on system_wq, whose work items explore::Services
// makes tasks of. The scenes race a submitter with the wake-up and with
// io_cancel() or the free, and check that the poll completes exactly once,
// with a result that fits who won, and that nothing stays on the queue.

struct PDev {
  spinlock_t lock;
  struct wait_queue_head *head;  // kzalloc'ed per schedule
  __poll_t mask;
  int dead;  // the queue is gone: ->poll() reports a hang-up
};
PDev pdev;
int pdev_fd = -1;

__poll_t PPoll(struct file *file, struct poll_table_struct *pt) {
  unsigned long flags;
  __poll_t mask;
  spin_lock_irqsave(&pdev.lock, flags);
  if (!pdev.dead) poll_wait(file, pdev.head, pt);
  mask = pdev.dead ? EPOLLHUP : pdev.mask;
  spin_unlock_irqrestore(&pdev.lock, flags);
  return mask;
}

const struct file_operations pdev_fops = {
    .read_iter = nullptr,
    .write_iter = nullptr,
    .fsync = nullptr,
    .poll = PPoll,
};

// The device's interrupt: data arrived.
void PWake() {
  unsigned long flags;
  spin_lock_irqsave(&pdev.lock, flags);
  if (!pdev.dead) {
    pdev.mask = EPOLLIN;
    wake_up_poll(pdev.head, EPOLLIN);
  }
  spin_unlock_irqrestore(&pdev.lock, flags);
}

// The driver lets go of its queue; the memory goes after the schedule.
void PFree() {
  unsigned long flags;
  spin_lock_irqsave(&pdev.lock, flags);
  pdev.dead = 1;
  wake_up_pollfree(pdev.head);
  spin_unlock_irqrestore(&pdev.lock, flags);
}

struct PollScene {
  unsigned long ctx = 0;
  struct iocb cb;
  struct iocb *cbp = &cb;
  long live_reqs = 0;
};
PollScene pscene;

void PollSceneSetUp() {
  spin_lock_init(&pdev.lock);
  pdev.head = static_cast<struct wait_queue_head *>(
      kzalloc(sizeof(*pdev.head), GFP_KERNEL));
  init_waitqueue_head(pdev.head);
  pdev.mask = 0;
  pdev.dead = 0;
  memset(&pscene.cb, 0, sizeof(pscene.cb));
  pscene.cb.aio_lio_opcode = IOCB_CMD_POLL;
  pscene.cb.aio_fildes = static_cast<uint32_t>(pdev_fd);
  pscene.cb.aio_buf = POLLIN;
  pscene.cb.aio_data = 7;
  pscene.ctx = 0;
  pscene.live_reqs = uk::aio::nr_live_reqs();
  uk::pin_thread_to_cpu(0);
  EXPLORE_CHECK(ukern_io_setup(8, &pscene.ctx) == 0);
  uk::pin_thread_to_cpu(-1);
}

// After join(): the one event, its result, an empty queue, then teardown.
long PollSceneEnd() {
  struct io_event ev[2];
  struct timespec zero = {0, 0};
  long n = ukern_io_getevents(pscene.ctx, 0, 2, ev, &zero);
  long res = -1;
  EXPLORE_CHECK(n == 1);
  if (n == 1) {
    EXPLORE_CHECK(ev[0].obj == reinterpret_cast<uint64_t>(&pscene.cb));
    EXPLORE_CHECK(ev[0].data == 7);
    res = ev[0].res;
  }
  EXPLORE_CHECK(!waitqueue_active(pdev.head));
  EXPLORE_CHECK(uk::aio::nr_live_reqs() == pscene.live_reqs);
  uk::pin_thread_to_cpu(0);
  EXPLORE_CHECK(ukern_io_destroy(pscene.ctx) == 0);
  uk::pin_thread_to_cpu(-1);
  RunFrees();
  kfree(pdev.head);
  pdev.head = nullptr;
  return res;
}

// A submitter, the data interrupt and io_cancel(). A cancel that finds the
// request queued makes the work complete it, with 0 unless the work had
// already seen the data; one that finds nothing leaves it to the data.
void PollWakeCancel() {
  PollSceneSetUp();
  static long submitted, cancelled;
  submitted = cancelled = 0;
  explore::spawn(
      [] { submitted = ukern_io_submit(pscene.ctx, 1, &pscene.cbp); }, 1);
  explore::spawn(
      [] {
        struct io_event res;
        cancelled = ukern_io_cancel(pscene.ctx, &pscene.cb, &res);
      },
      2);
  explore::irq(3, PWake);
  explore::join();
  EXPLORE_CHECK(submitted == 1);
  EXPLORE_CHECK(cancelled == -EINPROGRESS || cancelled == -EINVAL);
  long res = PollSceneEnd();
  if (cancelled == -EINVAL)
    EXPLORE_CHECK(res == POLLIN);
  else
    EXPLORE_CHECK(res == 0 || res == POLLIN);
}

// A submitter, the data interrupt and the driver freeing its queue. The
// request completes with the data, with the hang-up (in the waker, or at
// submission when the queue is already gone), or with 0 from the work
// once POLLFREE has taken it off the queue.
void PollWakeFree() {
  PollSceneSetUp();
  static long submitted;
  submitted = 0;
  explore::spawn(
      [] { submitted = ukern_io_submit(pscene.ctx, 1, &pscene.cbp); }, 1);
  explore::spawn(PFree, 2);
  explore::irq(3, PWake);
  explore::join();
  EXPLORE_CHECK(submitted == 1);
  long res = PollSceneEnd();
  EXPLORE_CHECK(res == POLLIN || res == POLLHUP || res == 0);
}

void PollExplore(const char *name, void (*body)()) {
  AioTestEnv env;
  if (pdev_fd < 0) {
    pdev_fd = eventfd(0, EFD_CLOEXEC);
    EXPECT_EQ(aio_register_file(pdev_fd, &pdev_fops, FMODE_READ, nullptr), 0);
  }
  explore::Services services;
  explore::run_test(name, body, SurviveOptions());
}

TEST(AioContract, PollWakeCancel) {
  PollExplore("AioContract.PollWakeCancel", PollWakeCancel);
}

TEST(AioContract, PollWakeFree) {
  PollExplore("AioContract.PollWakeFree", PollWakeFree);
}

}  // namespace
