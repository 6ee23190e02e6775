// SPDX-License-Identifier: GPL-2.0-only
// A historical race of the retry-based AIO of Linux 2.6 (aio/aio_v26.cc,
// docs/aio-v26.md), found by the explorer: the "Found" test runs the buggy
// code (its runtime switch) and must fail within a stated number of
// schedules, the "Survives" test runs the fixed code under EXPLORE_TEST.
//
// The engine's work items go through its test hook (uk::aio26::aio_wq_ops)
// to a model of 2.6.8's aio_wq whose delayed-work timer and worker thread
// are tasks of the scene, so that nothing runs outside the explorer.
#include <gtest/gtest.h>

#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/pipe_fs_i.h>
#include <uk/linux/sched.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

#include "explore.h"

namespace a26 = uk::aio26;

namespace {

// ---- aio_wq as 2.6.8's kernel/workqueue.c ran it ----
//
// One worker takes the items off the worklist in order; PENDING is cleared
// before the function runs; flush_workqueue() waits until the worker has
// removed as many items as had been inserted when it was called (the
// insert/remove sequences of cpu_workqueue_struct). queue_delayed_work()
// sets PENDING and arms the item's timer; the timer task fires it
// (delayed_work_timer_fn: the item goes on the worklist). 2.6.8's
// cancel_delayed_work() is del_timer_sync() and, when it took the timer,
// clears PENDING: the timer's firing is one step under the lock here, so
// the canceller sees it either armed or on the worklist, as after
// del_timer_sync(). The state is kept here, by the item's address, never
// in the item: an item inside a freed kioctx is recognised, not read.

constexpr int kMaxWorks = 4;

struct Wq26 {
  spinlock_t lock;
  wait_queue_head_t more_work;   // the worker sleeps here
  wait_queue_head_t work_done;   // flush_workqueue() sleeps here
  wait_queue_head_t timer_wait;  // the timer task sleeps here
  struct work_struct *works[kMaxWorks];
  bool pending[kMaxWorks];
  bool armed[kMaxWorks];
  int nr_works;
  struct work_struct *worklist[kMaxWorks];
  int nr_queued;
  long insert_sequence;
  long remove_sequence;
  bool program_done;  // the program's tasks ended: the timer may stop
  bool timer_done;    // the timer stopped: the worker may stop
};
Wq26 wq26;

// The scene's context: its work item, and the live count that tells
// whether __put_ioctx() freed it.
struct work_struct *ctx_work;
long live_ctx_before;

int Slot(struct work_struct *work) {
  Wq26 *w = &wq26;
  for (int i = 0; i < w->nr_works; i++)
    if (w->works[i] == work) return i;
  EXPLORE_CHECK(w->nr_works < kMaxWorks);
  w->works[w->nr_works] = work;
  // AnyArmed() reads the count without the lock: the compiler's atomic, no
  // scheduling point (and no data race under explore-tsan).
  __atomic_store_n(&w->nr_works, w->nr_works + 1, __ATOMIC_RELAXED);
  return w->nr_works - 1;
}

// __queue_work(): on the worklist, wake the worker. Lock held.
void QueueLocked(int i) {
  Wq26 *w = &wq26;
  EXPLORE_CHECK(w->nr_queued < kMaxWorks);
  w->worklist[w->nr_queued] = w->works[i];
  // Read by the worker's wait without the lock (see Slot()).
  __atomic_store_n(&w->nr_queued, w->nr_queued + 1, __ATOMIC_RELAXED);
  WRITE_ONCE(w->insert_sequence, w->insert_sequence + 1);
  wake_up(&w->more_work);
}

bool Wq26QueueWork(struct work_struct *work) {
  Wq26 *w = &wq26;
  unsigned long flags;
  bool ret = false;
  spin_lock_irqsave(&w->lock, flags);
  int i = Slot(work);
  if (!w->pending[i]) {
    w->pending[i] = true;
    QueueLocked(i);
    ret = true;
  }
  spin_unlock_irqrestore(&w->lock, flags);
  return ret;
}

bool Wq26QueueDelayedWork(struct delayed_work *dwork, unsigned long delay) {
  Wq26 *w = &wq26;
  unsigned long flags;
  bool ret = false;
  if (!delay) return Wq26QueueWork(&dwork->work);
  spin_lock_irqsave(&w->lock, flags);
  int i = Slot(&dwork->work);
  if (!w->pending[i]) {
    w->pending[i] = true;
    WRITE_ONCE(w->armed[i], true);
    wake_up(&w->timer_wait);
    ret = true;
  }
  spin_unlock_irqrestore(&w->lock, flags);
  return ret;
}

// 2.6.8: del_timer_sync(&work->timer); if it took the timer, clear PENDING.
bool Wq26CancelDelayedWork(struct delayed_work *dwork) {
  Wq26 *w = &wq26;
  unsigned long flags;
  spin_lock_irqsave(&w->lock, flags);
  int i = Slot(&dwork->work);
  bool ret = w->armed[i];
  if (ret) {
    WRITE_ONCE(w->armed[i], false);
    w->pending[i] = false;
  }
  spin_unlock_irqrestore(&w->lock, flags);
  return ret;
}

void Wq26Flush() {
  Wq26 *w = &wq26;
  unsigned long flags;
  spin_lock_irqsave(&w->lock, flags);
  long seq = w->insert_sequence;
  spin_unlock_irqrestore(&w->lock, flags);
  // Acquire: what the flushed work did comes before the flush returns, as
  // the workqueue's lock orders it in 2.6.8.
  wait_event(w->work_done, smp_load_acquire(&w->remove_sequence) >= seq);
}

const a26::AioWqOps wq26_ops = {
    .queue_work = Wq26QueueWork,
    .queue_delayed_work = Wq26QueueDelayedWork,
    .cancel_delayed_work = Wq26CancelDelayedWork,
    .flush = Wq26Flush,
};

bool AnyArmed() {
  for (int i = 0; i < READ_ONCE(wq26.nr_works); i++)
    if (READ_ONCE(wq26.armed[i])) return true;
  return false;
}

// The timer interrupt of the delayed work: fires each armed timer once it
// is armed, until the program is done and nothing is armed.
void TimerTask() {
  Wq26 *w = &wq26;
  unsigned long flags;
  for (;;) {
    wait_event(w->timer_wait, AnyArmed() || READ_ONCE(w->program_done));
    spin_lock_irqsave(&w->lock, flags);
    int fired = -1;
    for (int i = 0; i < w->nr_works && fired < 0; i++)
      if (w->armed[i]) fired = i;
    if (fired >= 0) {
      WRITE_ONCE(w->armed[fired], false);
      QueueLocked(fired);  // delayed_work_timer_fn(); PENDING stays set
    } else if (w->program_done) {
      WRITE_ONCE(w->timer_done, true);
      wake_up(&w->more_work);
      spin_unlock_irqrestore(&w->lock, flags);
      return;
    }
    spin_unlock_irqrestore(&w->lock, flags);
  }
}

// aio_wq's worker thread (worker_thread / run_workqueue of 2.6.8).
void WorkerTask() {
  Wq26 *w = &wq26;
  unsigned long flags;
  for (;;) {
    wait_event(w->more_work,
               READ_ONCE(w->nr_queued) > 0 || READ_ONCE(w->timer_done));
    spin_lock_irqsave(&w->lock, flags);
    if (!w->nr_queued) {
      spin_unlock_irqrestore(&w->lock, flags);
      return;
    }
    struct work_struct *work = w->worklist[0];
    for (int i = 1; i < w->nr_queued; i++) w->worklist[i - 1] = w->worklist[i];
    __atomic_store_n(&w->nr_queued, w->nr_queued - 1, __ATOMIC_RELAXED);
    w->pending[Slot(work)] = false;
    spin_unlock_irqrestore(&w->lock, flags);

    if (work == ctx_work && a26::nr_live_ctx() == live_ctx_before)
      explore::check(false,
                     "aio_kick_handler() runs on a kioctx that __put_ioctx() "
                     "freed",
                     __FILE__, __LINE__);
    else
      work->func(work);

    spin_lock_irqsave(&w->lock, flags);
    smp_store_release(&w->remove_sequence, w->remove_sequence + 1);
    wake_up(&w->work_done);
    spin_unlock_irqrestore(&w->lock, flags);
  }
}

void Wq26Init() {
  Wq26 *w = &wq26;
  for (int i = 0; i < kMaxWorks; i++) {
    w->works[i] = w->worklist[i] = nullptr;
    w->pending[i] = w->armed[i] = false;
  }
  w->nr_works = w->nr_queued = 0;
  w->insert_sequence = w->remove_sequence = 0;
  w->program_done = w->timer_done = false;
  spin_lock_init(&w->lock);
  init_waitqueue_head(&w->more_work);
  init_waitqueue_head(&w->work_done);
  init_waitqueue_head(&w->timer_wait);
}

// ---- 2.6.9: a delayed work left pending by io_destroy ----
//
// "AIO workqueue context switch reduction" (Chris Mason, 2004) made a kick
// start the worker with queue_delayed_work() (1 jiffy if somebody waits in
// io_getevents, else HZ/10) and made io_getevents run the run list itself.
// A retry that io_getevents ran leaves the delayed work armed; the program
// reaps the event and destroys the context, __put_ioctx() flushes aio_wq
// (which does not wait for a timer) and frees it, and the timer fires on
// the freed kioctx. The fix, Mason's "aio-context-stall" patch of the
// same series (in mainline fs/aio.c by 2.6.11): cancel_delayed_work(
// &ctx->wq) before flush_workqueue(aio_wq) in __put_ioctx(). The runtime
// switch is aio.v26_put_cancel.
//
// Set-up: a v26 context with a pipe read in flight (its retry waits on the
// empty pipe, -EIOCBRETRY). A program of two threads: on CPU 2 one writes
// a byte to the pipe (the wake-up kicks the read: run list, delayed work
// armed), on CPU 0 the other reaps one event and destroys the context. On
// CPU 1 the delayed work's timer and aio_wq's worker. The checks: the
// worker never runs aio_kick_handler() on a freed kioctx; every task ends;
// nothing is left armed or allocated.

struct PutCancelScene {
  unsigned long ctx;
  int fds[2];
  char buf[8];
  struct iocb cb;
  struct io_event ev;
};
PutCancelScene put_cancel_scene;

void DestroyWithDelayedWork(bool put_cancel) {
  PutCancelScene *s = &put_cancel_scene;
  *s = PutCancelScene{};
  Wq26Init();
  a26::aio_wq_ops = &wq26_ops;
  a26::aio_put_cancel = put_cancel;
  live_ctx_before = a26::nr_live_ctx();

  EXPLORE_CHECK(a26::sys_io_setup(8, &s->ctx) == 0);
  a26::kioctx *kctx = a26::lookup_ioctx(s->ctx);
  EXPLORE_CHECK(kctx != nullptr);
  ctx_work = &kctx->wq.work;
  a26::put_ioctx(kctx);
  EXPLORE_CHECK(a26::do_pipe2(s->fds, 0) == 0);
  s->cb.aio_fildes = (uint32_t)s->fds[0];
  s->cb.aio_lio_opcode = IOCB_CMD_PREAD;
  s->cb.aio_buf = (uint64_t)(unsigned long)s->buf;
  s->cb.aio_nbytes = sizeof(s->buf);
  struct iocb *cbp = &s->cb;
  EXPLORE_CHECK(a26::sys_io_submit(s->ctx, 1, &cbp) == 1);

  static int program_left;
  program_left = 2;
  auto program_done = [] {
    Wq26 *w = &wq26;
    unsigned long flags;
    spin_lock_irqsave(&w->lock, flags);
    if (--program_left == 0) {
      WRITE_ONCE(w->program_done, true);
      wake_up(&w->timer_wait);
    }
    spin_unlock_irqrestore(&w->lock, flags);
  };
  explore::spawn(
      [s, program_done] {
        EXPLORE_CHECK(a26::sys_write(s->fds[1], "x", 1) == 1);
        program_done();
      },
      2);
  explore::spawn(
      [s, program_done] {
        EXPLORE_CHECK(a26::sys_io_getevents(s->ctx, 1, 1, &s->ev, nullptr) ==
                      1);
        EXPLORE_CHECK(s->ev.res == 1);
        EXPLORE_CHECK(a26::sys_io_destroy(s->ctx) == 0);
        program_done();
      },
      0);
  explore::spawn(TimerTask, 1);
  explore::spawn(WorkerTask, 1);
  explore::join();

  EXPLORE_CHECK(!AnyArmed());
  EXPLORE_CHECK(a26::nr_live_ctx() == live_ctx_before);
  a26::sys_close(s->fds[0]);
  a26::sys_close(s->fds[1]);
  a26::aio_wq_ops = nullptr;
  a26::aio_put_cancel = true;
}

TEST(Historical, AioV26PutCancelFound) {
  const long budget = 20000;
  // The bounded search's first schedule lets the program run on until it
  // blocks or ends, so the timer fires after the destroy. A random walk
  // picks the timer task at almost every point once it is armed, and the
  // timer fires before the reaper has run the list: it does not find the
  // race within the budget.
  explore::Options o = explore::test_defaults();
  o.max_schedules = budget;
  o.max_seconds = 120;
  o = explore::options_from_env(o);
  o.trace = true;
  explore::Result r = explore::run([] { DestroyWithDelayedWork(false); }, o);
  a26::aio_wq_ops = nullptr;
  a26::aio_put_cancel = true;
  explore::report_found("Historical.AioV26PutCancelFound", r, o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("freed"), std::string::npos) << r.message;
}

TEST(Historical, AioV26PutCancelSurvives) {
  // About 1,300 schedules/s on the 2-vCPU VM: a few seconds in ctest;
  // tools/ukern explore --schedules overrides it.
  explore::Options o = explore::test_defaults();
  o.max_schedules = 4000;
  explore::run_test(
      "Historical.AioV26PutCancelSurvives",
      [] { DestroyWithDelayedWork(true); }, o);
  a26::aio_wq_ops = nullptr;
  a26::aio_put_cancel = true;
}

}  // namespace
