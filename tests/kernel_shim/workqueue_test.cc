// SPDX-License-Identifier: GPL-2.0-only
// Workqueues: ordering, CPU placement, max_active, flush/cancel, delayed
// work on the virtual clock, destroy, rcu_work, fork().
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <uk/linux/completion.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace {

struct Item {
  struct work_struct work;
  int id = 0;
  std::vector<int> *log = nullptr;
  std::mutex *mu = nullptr;
  std::atomic<int> runs{0};
  std::atomic<int> cpu{-1};
  std::atomic<struct work_struct *> seen_current{nullptr};
};

void log_fn(struct work_struct *work) {
  Item *it = container_of(work, Item, work);
  it->cpu.store(smp_processor_id());
  it->seen_current.store(current_work());
  if (it->log) {
    std::lock_guard<std::mutex> g(*it->mu);
    it->log->push_back(it->id);
  }
  it->runs.fetch_add(1);
}

TEST(WorkqueueTest, OrderingOnOneCpuAndPlacement) {
  ASSERT_GE(nr_cpu_ids, 2u);
  struct workqueue_struct *wq = alloc_workqueue("uk_test_order", 0, 0);
  ASSERT_NE(wq, nullptr);
  std::vector<int> log;
  std::mutex mu;
  constexpr int kN = 16;
  Item items[kN];
  for (int i = 0; i < kN; i++) {
    items[i].id = i;
    items[i].log = &log;
    items[i].mu = &mu;
    INIT_WORK(&items[i].work, log_fn);
  }
  for (int i = 0; i < kN; i++)
    EXPECT_TRUE(queue_work_on(1, wq, &items[i].work));
  flush_workqueue(wq);
  ASSERT_EQ(log.size(), (size_t)kN);
  for (int i = 0; i < kN; i++) {
    EXPECT_EQ(log[i], i);  // one CPU, nobody blocks: queue order
    EXPECT_EQ(items[i].cpu.load(), 1);
    EXPECT_EQ(items[i].seen_current.load(), &items[i].work);
    EXPECT_FALSE(work_pending(&items[i].work));
  }
  EXPECT_EQ(current_work(), nullptr);  // not a worker

  EXPECT_TRUE(queue_work_on(0, wq, &items[0].work));
  flush_work(&items[0].work);  // true unless it already finished
  EXPECT_EQ(items[0].runs.load(), 2);
  EXPECT_EQ(items[0].cpu.load(), 0);
  EXPECT_FALSE(flush_work(&items[0].work));  // idle: nothing to wait for
  destroy_workqueue(wq);
}

// A work item that blocks until released.
struct Blocker {
  struct work_struct work;
  struct completion started;
  struct completion release;
  std::atomic<int> runs{0};
  std::atomic<int> *running = nullptr;
  std::atomic<int> *max_running = nullptr;
};

void blocker_fn(struct work_struct *work) {
  Blocker *b = container_of(work, Blocker, work);
  if (b->running) {
    int now = b->running->fetch_add(1) + 1;
    int m = b->max_running->load();
    while (now > m && !b->max_running->compare_exchange_weak(m, now)) {
    }
  }
  complete(&b->started);
  wait_for_completion(&b->release);
  if (b->running) b->running->fetch_sub(1);
  b->runs.fetch_add(1);
}

void init_blocker(Blocker *b) {
  INIT_WORK(&b->work, blocker_fn);
  init_completion(&b->started);
  init_completion(&b->release);
}

// A fork child has none of the parent's workers: its pools start workers of
// their own, so work queued in the child runs there. A child that hangs is
// ended by its alarm and the test fails.
TEST(WorkqueueTest, AForkChildRunsWorkOnWorkersOfItsOwn) {
#ifdef UKERN_TSAN
  GTEST_SKIP() << "ThreadSanitizer stops a fork child that starts threads";
#endif
  Item bound, unbound;
  INIT_WORK(&bound.work, log_fn);
  INIT_WORK(&unbound.work, log_fn);
  ASSERT_TRUE(queue_work(system_wq, &bound.work));
  ASSERT_TRUE(queue_work(system_unbound_wq, &unbound.work));
  flush_work(&bound.work);
  flush_work(&unbound.work);
  ASSERT_GT(uk::wq_nr_workers(), 0);  // the parent's workers

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);
    bool ok = uk::wq_nr_workers() == 0;
    ok &= queue_work(system_wq, &bound.work);
    ok &= queue_work(system_unbound_wq, &unbound.work);
    flush_work(&bound.work);
    flush_work(&unbound.work);
    ok &= bound.runs.load() == 2 && unbound.runs.load() == 2;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(WorkqueueTest, QueueWorkReturnsFalseWhilePending) {
  Blocker b;
  init_blocker(&b);
  Item it;
  INIT_WORK(&it.work, log_fn);
  // Hold CPU 0's pool busy so `it` stays pending behind the blocker... the
  // blocker sleeps, so concurrency management starts another worker; use an
  // ordered queue instead to keep `it` queued.
  struct workqueue_struct *wq = alloc_ordered_workqueue("uk_test_pending", 0);
  ASSERT_TRUE(queue_work(wq, &b.work));
  wait_for_completion(&b.started);
  EXPECT_TRUE(queue_work(wq, &it.work));
  EXPECT_TRUE(work_pending(&it.work));
  EXPECT_FALSE(queue_work(wq, &it.work));
  EXPECT_TRUE(workqueue_congested(WORK_CPU_UNBOUND, wq));
  EXPECT_TRUE(work_busy(&b.work) & WORK_BUSY_RUNNING);
  complete(&b.release);
  flush_workqueue(wq);
  EXPECT_EQ(it.runs.load(), 1);
  EXPECT_EQ(b.runs.load(), 1);
  destroy_workqueue(wq);
}

TEST(WorkqueueTest, MaxActiveOneSerialises) {
  struct workqueue_struct *wq = alloc_workqueue("uk_test_ma1", WQ_UNBOUND, 1);
  constexpr int kN = 3;
  Blocker b[kN];
  std::atomic<int> running{0}, max_running{0};
  for (auto &x : b) {
    init_blocker(&x);
    x.running = &running;
    x.max_running = &max_running;
    ASSERT_TRUE(queue_work(wq, &x.work));
  }
  for (int i = 0; i < kN; i++) {
    wait_for_completion(&b[i].started);
    // the next one cannot have started while this one runs
    if (i + 1 < kN) {
      EXPECT_FALSE(completion_done(&b[i + 1].started));
    }
    complete(&b[i].release);
  }
  flush_workqueue(wq);
  EXPECT_EQ(max_running.load(), 1);
  destroy_workqueue(wq);

  // max_active 2 on an unbound queue: two at once, never three
  wq = alloc_workqueue("uk_test_ma2", WQ_UNBOUND, 2);
  Blocker c[kN];
  running = 0;
  max_running = 0;
  for (auto &x : c) {
    init_blocker(&x);
    x.running = &running;
    x.max_running = &max_running;
    ASSERT_TRUE(queue_work(wq, &x.work));
  }
  wait_for_completion(&c[0].started);
  wait_for_completion(&c[1].started);
  EXPECT_FALSE(completion_done(&c[2].started));
  for (auto &x : c) complete(&x.release);
  flush_workqueue(wq);
  EXPECT_EQ(max_running.load(), 2);
  destroy_workqueue(wq);
}

TEST(WorkqueueTest, BlockedWorkerLetsTheNextItemRunOnTheSameCpu) {
  // Concurrency management: item A blocks in schedule(); item B, queued on
  // the same CPU behind it, must still run (another worker starts).
  Blocker a;
  init_blocker(&a);
  Item b;
  INIT_WORK(&b.work, log_fn);
  ASSERT_TRUE(queue_work_on(0, system_wq, &a.work));
  wait_for_completion(&a.started);
  ASSERT_TRUE(queue_work_on(0, system_wq, &b.work));
  flush_work(&b.work);
  EXPECT_EQ(b.runs.load(), 1);
  EXPECT_EQ(b.cpu.load(), 0);
  complete(&a.release);
  flush_work(&a.work);
  EXPECT_EQ(a.runs.load(), 1);
}

// A worker blocked in a host system call between uk::host_block_begin() and
// uk::host_block_end(): item A reads a pipe that only item B, queued on the
// same CPU behind it, writes. B runs (the pool started another worker), so A
// gets its byte.
struct HostReader {
  struct work_struct work;
  int fd = -1;
  char byte = 0;
  ssize_t ret = 0;
  struct completion started;
};

void host_reader_fn(struct work_struct *work) {
  HostReader *r = container_of(work, HostReader, work);
  complete(&r->started);
  uk::host_block_begin();
  r->ret = read(r->fd, &r->byte, 1);
  uk::host_block_end();
}

struct HostWriter {
  struct work_struct work;
  int fd = -1;
  ssize_t ret = 0;
};

void host_writer_fn(struct work_struct *work) {
  HostWriter *w = container_of(work, HostWriter, work);
  w->ret = write(w->fd, "x", 1);
}

TEST(WorkqueueTest, HostBlockedWorkerLetsTheNextItemRunOnTheSameCpu) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  HostReader a;
  HostWriter b;
  INIT_WORK(&a.work, host_reader_fn);
  init_completion(&a.started);
  a.fd = p[0];
  INIT_WORK(&b.work, host_writer_fn);
  b.fd = p[1];
  ASSERT_TRUE(queue_work_on(0, system_wq, &a.work));
  wait_for_completion(&a.started);
  ASSERT_TRUE(queue_work_on(0, system_wq, &b.work));
  flush_work(&b.work);
  flush_work(&a.work);
  EXPECT_EQ(b.ret, 1);
  EXPECT_EQ(a.ret, 1);
  EXPECT_EQ(a.byte, 'x');
  // Outside a worker the bracket does nothing.
  uk::host_block_begin();
  uk::host_block_end();
  EXPECT_FALSE(current->flags & PF_WQ_WORKER);
  close(p[0]);
  close(p[1]);
}

TEST(WorkqueueTest, CancelWorkSyncWaitsForRunningItem) {
  Blocker b;
  init_blocker(&b);
  ASSERT_TRUE(queue_work(system_unbound_wq, &b.work));
  wait_for_completion(&b.started);
  std::atomic<bool> cancelled{false};
  std::atomic<bool> ret{true};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(cancel_work_sync(&b.work));
    cancelled.store(true);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));  // waiting for the item
  EXPECT_FALSE(cancelled.load());
  EXPECT_FALSE(queue_work(system_unbound_wq, &b.work));  // canceling: refused
  complete(&b.release);
  t.join();
  EXPECT_TRUE(cancelled.load());
  EXPECT_FALSE(ret.load());  // it was running, not pending
  EXPECT_EQ(b.runs.load(), 1);
  EXPECT_FALSE(work_pending(&b.work));
}

TEST(WorkqueueTest, CancelPendingWork) {
  struct workqueue_struct *wq = alloc_ordered_workqueue("uk_test_cancel", 0);
  Blocker b;
  init_blocker(&b);
  Item it;
  INIT_WORK(&it.work, log_fn);
  ASSERT_TRUE(queue_work(wq, &b.work));
  wait_for_completion(&b.started);
  ASSERT_TRUE(queue_work(wq, &it.work));
  EXPECT_TRUE(cancel_work(&it.work));  // was pending
  EXPECT_FALSE(work_pending(&it.work));
  EXPECT_FALSE(cancel_work(&it.work));
  ASSERT_TRUE(queue_work(wq, &it.work));
  EXPECT_TRUE(cancel_work_sync(&it.work));
  complete(&b.release);
  flush_workqueue(wq);
  EXPECT_EQ(it.runs.load(), 0);
  EXPECT_FALSE(cancel_work_sync(&it.work));
  destroy_workqueue(wq);
}

// Re-queues itself `left` times (chained work).
struct Chain {
  struct work_struct work;
  struct workqueue_struct *wq;
  std::atomic<int> left{0};
  std::atomic<int> runs{0};
  std::atomic<bool> requeue_ok{true};
};

void chain_fn(struct work_struct *work) {
  Chain *c = container_of(work, Chain, work);
  c->runs.fetch_add(1);
  if (c->left.fetch_sub(1) > 1 && !queue_work(c->wq, &c->work))
    c->requeue_ok.store(false);
}

TEST(WorkqueueTest, RequeueFromWorkFunctionAndDrain) {
  struct workqueue_struct *wq = alloc_workqueue("uk_test_chain", 0, 0);
  Chain c;
  c.wq = wq;
  c.left = 50;
  INIT_WORK(&c.work, chain_fn);
  ASSERT_TRUE(queue_work_on(0, wq, &c.work));
  drain_workqueue(wq);  // waits for the whole chain
  EXPECT_EQ(c.runs.load(), 50);
  EXPECT_TRUE(c.requeue_ok.load());

  c.left = 20;
  c.runs = 0;
  ASSERT_TRUE(queue_work(wq, &c.work));
  destroy_workqueue(wq);  // drains first
  EXPECT_EQ(c.runs.load(), 20);
}

TEST(WorkqueueTest, FlushWorkqueueWaitsForEverythingQueuedBefore) {
  struct workqueue_struct *wq = alloc_workqueue("uk_test_flush", 0, 4);
  constexpr int kN = 32;
  Item items[kN];
  for (int i = 0; i < kN; i++) {
    INIT_WORK(&items[i].work, log_fn);
    ASSERT_TRUE(queue_work_on(i % nr_cpu_ids, wq, &items[i].work));
  }
  flush_workqueue(wq);
  for (auto &it : items) EXPECT_EQ(it.runs.load(), 1);
  destroy_workqueue(wq);
}

TEST(WorkqueueTest, WorkerThreadCountStaysBounded) {
  std::vector<struct workqueue_struct *> wqs;
  for (int i = 0; i < 6; i++)
    wqs.push_back(
        alloc_workqueue("uk_test_many%d", i & 1 ? WQ_UNBOUND : 0, 0, i));
  constexpr int kN = 64;
  static Item items[6][kN];
  for (int round = 0; round < 3; round++) {
    for (int q = 0; q < 6; q++)
      for (int i = 0; i < kN; i++) {
        INIT_WORK(&items[q][i].work, log_fn);
        queue_work(wqs[q], &items[q][i].work);
      }
    for (auto *wq : wqs) flush_workqueue(wq);
  }
  for (auto *wq : wqs) destroy_workqueue(wq);
  EXPECT_LE(uk::wq_nr_workers(), 4 * (2 * (int)nr_cpu_ids + 2));
}

class WorkqueueVirtualClockTest : public ::testing::Test {
 protected:
  void SetUp() override { uk::clock_use_virtual(); }
  void TearDown() override { uk::clock_use_host(); }
};

struct DItem {
  struct delayed_work dwork;
  std::atomic<int> runs{0};
  std::atomic<unsigned long> at{0};
};

void ditem_fn(struct work_struct *work) {
  DItem *d = container_of(to_delayed_work(work), DItem, dwork);
  d->at.store(jiffies);
  d->runs.fetch_add(1);
}

TEST_F(WorkqueueVirtualClockTest, DelayedWorkFiresAfterTheDelay) {
  DItem d;
  INIT_DELAYED_WORK(&d.dwork, ditem_fn);
  unsigned long start = jiffies;
  ASSERT_TRUE(queue_delayed_work(system_wq, &d.dwork, 10));
  EXPECT_TRUE(delayed_work_pending(&d.dwork));
  EXPECT_FALSE(queue_delayed_work(system_wq, &d.dwork, 1));
  uk::virtual_clock_advance(9 * TICK_NSEC);
  flush_workqueue(system_wq);
  EXPECT_EQ(d.runs.load(), 0);
  uk::virtual_clock_advance(1 * TICK_NSEC);
  flush_workqueue(system_wq);
  EXPECT_EQ(d.runs.load(), 1);
  EXPECT_EQ(d.at.load(), start + 10);
  EXPECT_FALSE(delayed_work_pending(&d.dwork));

  // delay 0 queues at once
  ASSERT_TRUE(queue_delayed_work_on(1, system_wq, &d.dwork, 0));
  flush_delayed_work(&d.dwork);
  EXPECT_EQ(d.runs.load(), 2);
}

TEST_F(WorkqueueVirtualClockTest, ModDelayedWorkMovesTheDeadline) {
  DItem d;
  INIT_DELAYED_WORK(&d.dwork, ditem_fn);
  unsigned long start = jiffies;
  EXPECT_FALSE(mod_delayed_work(system_wq, &d.dwork, 20));  // was idle
  EXPECT_TRUE(mod_delayed_work(system_wq, &d.dwork, 5));    // was pending
  uk::virtual_clock_advance(5 * TICK_NSEC);
  flush_workqueue(system_wq);
  EXPECT_EQ(d.runs.load(), 1);
  EXPECT_EQ(d.at.load(), start + 5);

  ASSERT_TRUE(queue_delayed_work(system_wq, &d.dwork, 5));
  EXPECT_TRUE(mod_delayed_work(system_wq, &d.dwork, 30));
  uk::virtual_clock_advance(29 * TICK_NSEC);
  flush_workqueue(system_wq);
  EXPECT_EQ(d.runs.load(), 1);
  uk::virtual_clock_advance(1 * TICK_NSEC);
  flush_workqueue(system_wq);
  EXPECT_EQ(d.runs.load(), 2);
}

TEST_F(WorkqueueVirtualClockTest, CancelAndFlushDelayedWork) {
  DItem d;
  INIT_DELAYED_WORK(&d.dwork, ditem_fn);
  ASSERT_TRUE(queue_delayed_work(system_unbound_wq, &d.dwork, 10));
  EXPECT_TRUE(cancel_delayed_work(&d.dwork));
  EXPECT_FALSE(delayed_work_pending(&d.dwork));
  uk::virtual_clock_advance(20 * TICK_NSEC);
  flush_workqueue(system_unbound_wq);
  EXPECT_EQ(d.runs.load(), 0);

  ASSERT_TRUE(queue_delayed_work(system_unbound_wq, &d.dwork, 10));
  EXPECT_TRUE(cancel_delayed_work_sync(&d.dwork));
  EXPECT_FALSE(cancel_delayed_work_sync(&d.dwork));

  // flush_delayed_work() runs it now instead of waiting for the timer
  ASSERT_TRUE(queue_delayed_work(system_unbound_wq, &d.dwork, 1000));
  flush_delayed_work(&d.dwork);  // true or false: it may have finished already
  EXPECT_EQ(d.runs.load(), 1);
  EXPECT_FALSE(delayed_work_pending(&d.dwork));
}

struct RItem {
  struct rcu_work rwork;
  std::atomic<int> runs{0};
};

void ritem_fn(struct work_struct *work) {
  RItem *r = container_of(to_rcu_work(work), RItem, rwork);
  r->runs.fetch_add(1);
}

TEST(WorkqueueTest, RcuWorkRunsAfterAGracePeriod) {
  RItem r;
  INIT_RCU_WORK(&r.rwork, ritem_fn);
  rcu_read_lock();  // the grace period cannot end before the unlock
  ASSERT_TRUE(queue_rcu_work(system_wq, &r.rwork));
  EXPECT_FALSE(queue_rcu_work(system_wq, &r.rwork));
  EXPECT_EQ(r.runs.load(), 0);
  rcu_read_unlock();
  EXPECT_TRUE(flush_rcu_work(&r.rwork));
  EXPECT_EQ(r.runs.load(), 1);
}

}  // namespace
