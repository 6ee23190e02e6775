// SPDX-License-Identifier: GPL-2.0-only
// Wait queues: exclusive/non-exclusive wake-ups and their counts, wake
// functions, autoremove, the wait_event*() family with signals and
// (virtual-clock) timeouts, and a no-lost-wake-up stress test.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <uk/linux/hrtimer.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/ktime.h>
#include <uk/linux/wait.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace {

struct CountingEntry {
  struct wait_queue_entry wq;
  int calls = 0;
  int ret = 1;
  void *last_key = nullptr;
};

int counting_wake(struct wait_queue_entry *wq_entry, unsigned mode, int flags,
                  void *key) {
  CountingEntry *e = container_of(wq_entry, CountingEntry, wq);
  e->calls++;
  e->last_key = key;
  return e->ret;
}

int queue_len(struct wait_queue_head *wq) {
  int n = 0;
  struct wait_queue_entry *e;
  spin_lock_irq(&wq->lock);
  list_for_each_entry(e, &wq->head, entry) n++;
  spin_unlock_irq(&wq->lock);
  return n;
}

TEST(WaitTest, ExclusiveAndNonExclusiveWakeSemantics) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  CountingEntry shared[2], excl[3];
  for (auto &e : shared) {
    init_waitqueue_func_entry(&e.wq, counting_wake);
    add_wait_queue(&wq, &e.wq);
  }
  for (auto &e : excl) {
    init_waitqueue_func_entry(&e.wq, counting_wake);
    add_wait_queue_exclusive(&wq, &e.wq);
  }
  EXPECT_TRUE(waitqueue_active(&wq));
  EXPECT_TRUE(wq_has_sleeper(&wq));

  // wake_up(): every non-exclusive entry, then one exclusive.
  EXPECT_EQ(wake_up(&wq), 1);
  EXPECT_EQ(shared[0].calls, 1);
  EXPECT_EQ(shared[1].calls, 1);
  EXPECT_EQ(excl[0].calls, 1);
  EXPECT_EQ(excl[1].calls, 0);

  // wake_up_nr(): returns how many exclusive waiters accepted.
  EXPECT_EQ(wake_up_nr(&wq, 2), 2);
  EXPECT_EQ(excl[1].calls, 1);
  EXPECT_EQ(excl[2].calls, 0);
  EXPECT_EQ(wake_up_nr(&wq, 5), 3);  // only 3 exclusive entries exist
  EXPECT_EQ(wake_up_all(&wq), 3);

  // An exclusive entry that declines (returns 0) does not count.
  excl[0].ret = 0;
  int before1 = excl[1].calls, before2 = excl[2].calls;
  EXPECT_EQ(wake_up(&wq), 1);
  EXPECT_EQ(excl[1].calls, before1 + 1);
  EXPECT_EQ(excl[2].calls, before2);

  // A negative return stops the walk. add_wait_queue() adds at the head,
  // so shared[1] is first in line.
  shared[1].ret = -1;
  int s0 = shared[0].calls;
  EXPECT_EQ(wake_up_all(&wq), 0);
  EXPECT_EQ(shared[0].calls, s0);

  // Keys reach the function.
  shared[1].ret = 1;
  wake_up_poll(&wq, 0x41);
  EXPECT_EQ(key_to_poll(shared[0].last_key), 0x41u);

  for (auto &e : shared) remove_wait_queue(&wq, &e.wq);
  for (auto &e : excl) remove_wait_queue(&wq, &e.wq);
  EXPECT_FALSE(waitqueue_active(&wq));
  EXPECT_EQ(wake_up_all(&wq), 0);
}

TEST(WaitTest, AutoremoveAndDefaultWakeFunction) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  {
    DEFINE_WAIT(wait);
    prepare_to_wait(&wq, &wait, TASK_UNINTERRUPTIBLE);
    EXPECT_EQ(task_state_read(current), (unsigned)TASK_UNINTERRUPTIBLE);
    EXPECT_EQ(queue_len(&wq), 1);
    EXPECT_EQ(wake_up(&wq), 0);  // non-exclusive entry: not counted
    EXPECT_EQ(task_state_read(current), (unsigned)TASK_RUNNING);
    EXPECT_TRUE(list_empty_careful(&wait.entry));  // removed by the waker
    EXPECT_FALSE(waitqueue_active(&wq));
    finish_wait(&wq, &wait);
  }
  {
    DECLARE_WAITQUEUE(wait, current);
    add_wait_queue_exclusive(&wq, &wait);
    set_current_state(TASK_INTERRUPTIBLE);
    EXPECT_EQ(wake_up(&wq), 1);
    EXPECT_EQ(task_state_read(current), (unsigned)TASK_RUNNING);
    EXPECT_EQ(queue_len(&wq), 1);  // default_wake_function leaves it queued
    EXPECT_EQ(wake_up(&wq), 0);    // already running: not woken again
    remove_wait_queue(&wq, &wait);
  }
  {
    DEFINE_WAIT(wait);
    EXPECT_FALSE(prepare_to_wait_exclusive(&wq, &wait, TASK_UNINTERRUPTIBLE) ==
                 false);
    finish_wait(&wq, &wait);  // not woken: finish_wait unlinks it
    EXPECT_FALSE(waitqueue_active(&wq));
    EXPECT_EQ(task_state_read(current), (unsigned)TASK_RUNNING);
  }
}

// Waits in threads with wait_event_idle_exclusive() on a token count.
TEST(WaitTest, WakeUpNrWakesExactlyThatManySleepers) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  constexpr int kN = 4;
  std::atomic<int> tokens{0}, finished{0};
  std::vector<std::atomic<struct task_struct *>> tasks(kN);
  auto take = [&] {
    int t = tokens.load();
    while (t > 0)
      if (tokens.compare_exchange_weak(t, t - 1)) return true;
    return false;
  };
  std::vector<std::thread> thr;
  for (int i = 0; i < kN; i++)
    thr.emplace_back([&, i] {
      tasks[i].store(current);
      wait_event_idle_exclusive(wq, take());
      finished.fetch_add(1);
    });
  for (int i = 0; i < kN; i++) {
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(tasks[i]));
  }
  ASSERT_EQ(queue_len(&wq), kN);

  tokens.store(2);
  EXPECT_EQ(wake_up_nr(&wq, 2), 2);
  ASSERT_TRUE(uk::testing::WaitFor([&] { return finished.load() >= 2; }));
  // The two woken were autoremoved (a woken task re-queues itself until its
  // condition holds, so only count once they are done).
  EXPECT_EQ(queue_len(&wq), kN - 2);

  tokens.store(kN - 2);
  EXPECT_EQ(wake_up_all(&wq), kN - 2);
  for (auto &t : thr) t.join();
  EXPECT_EQ(finished.load(), kN);
  EXPECT_EQ(tokens.load(), 0);
  EXPECT_FALSE(waitqueue_active(&wq));
}

// A poll-style wake function that only accepts matching keys.
struct PollWaiter {
  struct wait_queue_entry wait;
  unsigned events;
  std::atomic<int> woken{0};
};

int poll_wake(struct wait_queue_entry *wait, unsigned mode, int sync,
              void *key) {
  PollWaiter *w = container_of(wait, PollWaiter, wait);
  if (key && !(key_to_poll(key) & w->events)) return 0;
  w->woken.fetch_add(1);
  list_del_init(&wait->entry);
  return 1;
}

TEST(WaitTest, CustomWakeFunctionFiltersByKey) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  PollWaiter in, out;
  in.events = 0x1;
  out.events = 0x4;
  init_waitqueue_func_entry(&in.wait, poll_wake);
  init_waitqueue_func_entry(&out.wait, poll_wake);
  add_wait_queue(&wq, &in.wait);
  add_wait_queue(&wq, &out.wait);
  wake_up_poll(&wq, 0x4);
  EXPECT_EQ(in.woken.load(), 0);
  EXPECT_EQ(out.woken.load(), 1);
  EXPECT_EQ(queue_len(&wq), 1);
  spin_lock_irq(&wq.lock);
  wake_up_locked_poll(&wq, 0x1);
  spin_unlock_irq(&wq.lock);
  EXPECT_EQ(in.woken.load(), 1);
  EXPECT_FALSE(waitqueue_active(&wq));
}

TEST(WaitTest, WaitEventInterruptibleReturnsRestartsysOnSignal) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  std::atomic<int> ret{1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(wait_event_interruptible(wq, false));
    EXPECT_TRUE(signal_pending(current));
    uk::task_clear_signals(current);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::task_send_signal(task.load(), SIGINT);
  t.join();
  EXPECT_EQ(ret.load(), -ERESTARTSYS);
  EXPECT_FALSE(waitqueue_active(&wq));  // left the queue

  // A pending signal does not matter when the condition already holds.
  uk::task_send_signal(current, SIGINT);
  EXPECT_EQ(wait_event_interruptible(wq, true), 0);
  EXPECT_EQ(wait_event_interruptible(wq, false), -ERESTARTSYS);
  uk::task_clear_signals(current);
}

TEST(WaitTest, WaitEventKillableOnlyForFatalSignals) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  std::atomic<int> ret{1};
  std::atomic<bool> cond{false};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(wait_event_killable(wq, cond.load()));
    uk::task_clear_signals(current);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::task_send_signal(task.load(), SIGTERM);  // not fatal: keeps sleeping
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
  uk::task_send_signal(task.load(), SIGKILL);
  t.join();
  EXPECT_EQ(ret.load(), -ERESTARTSYS);
}

TEST(WaitTest, WaitEventLockIrq) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  spinlock_t lock;
  spin_lock_init(&lock);
  int value = 0;  // guarded by lock
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    spin_lock_irq(&lock);
    wait_event_lock_irq(wq, value == 3, lock);
    EXPECT_EQ(value, 3);
    spin_unlock_irq(&lock);
  });
  ASSERT_TRUE(uk::testing::WaitFor([&] { return task.load() != nullptr; }));
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(uk::wait_task_blocked(task.load()));
    spin_lock_irq(&lock);
    value++;
    spin_unlock_irq(&lock);
    wake_up(&wq);
  }
  t.join();
}

class WaitVirtualClockTest : public ::testing::Test {
 protected:
  void SetUp() override { uk::clock_use_virtual(); }
  void TearDown() override { uk::clock_use_host(); }
};

TEST_F(WaitVirtualClockTest, WaitEventTimeoutReturnValues) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  // condition already true: the whole timeout back (1 if it was 0)
  EXPECT_EQ(wait_event_timeout(wq, true, 10), 10);
  EXPECT_EQ(wait_event_timeout(wq, true, 0), 1);
  EXPECT_EQ(wait_event_timeout(wq, false, 0), 0);

  std::atomic<long> ret{-1};
  std::atomic<bool> cond{false};
  std::atomic<struct task_struct *> task{nullptr};
  {
    std::thread t([&] {
      task.store(current);
      ret.store(wait_event_timeout(wq, cond.load(), 20));
    });
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
    uk::virtual_clock_advance(20 * TICK_NSEC);
    t.join();
    EXPECT_EQ(ret.load(), 0);  // timed out
  }
  task.store(nullptr);
  {
    std::thread t([&] {
      task.store(current);
      ret.store(wait_event_timeout(wq, cond.load(), 20));
    });
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
    uk::virtual_clock_advance(8 * TICK_NSEC);
    cond.store(true);
    wake_up(&wq);
    t.join();
    EXPECT_EQ(ret.load(), 12);  // jiffies left
  }
}

TEST_F(WaitVirtualClockTest, WaitEventInterruptibleTimeout) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  std::atomic<long> ret{-1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(wait_event_interruptible_timeout(wq, false, 50));
    uk::task_clear_signals(current);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(10 * TICK_NSEC);
  uk::task_send_signal(task.load(), SIGUSR1);
  t.join();
  EXPECT_EQ(ret.load(), -ERESTARTSYS);

  // idle variant times out the same way
  task.store(nullptr);
  std::thread t2([&] {
    task.store(current);
    ret.store(wait_event_idle_timeout(wq, false, 5));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(5 * TICK_NSEC);
  t2.join();
  EXPECT_EQ(ret.load(), 0);
}

TEST_F(WaitVirtualClockTest, WaitEventInterruptibleHrtimeout) {
  DECLARE_WAIT_QUEUE_HEAD(wq);
  std::atomic<long> ret{1};
  std::atomic<bool> cond{false};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(
        wait_event_interruptible_hrtimeout(wq, cond.load(), ms_to_ktime(2)));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(1000000);  // 1 ms: not yet
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
  uk::virtual_clock_advance(1000000 + 100000);  // past 2 ms + slack
  t.join();
  EXPECT_EQ(ret.load(), -ETIME);

  task.store(nullptr);
  std::thread t2([&] {
    task.store(current);
    ret.store(
        wait_event_interruptible_hrtimeout(wq, cond.load(), ms_to_ktime(2)));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  cond.store(true);
  wake_up(&wq);
  t2.join();
  EXPECT_EQ(ret.load(), 0);
}

// Producers and consumers hand items over one slot at a time, so both sides
// sleep and wake each other for almost every item. A lost wake-up leaves a
// thread asleep forever: the test would not finish (bounded by ctest's
// timeout) and the counts would not match.
void NoLostWakeups(bool exclusive) {
  DECLARE_WAIT_QUEUE_HEAD(items_wq);
  DECLARE_WAIT_QUEUE_HEAD(space_wq);
  const int threads = static_cast<int>(uk::testing::StressThreads());
  const int consumers = threads;
  const int producers = threads;
#if defined(UK_TSAN)
  const int per_consumer = 500;
#else
  const int per_consumer = 3000;
#endif
  const int total = consumers * per_consumer;
  const int slots = 1;
  std::atomic<int> items{0};
  std::atomic<int> consumed{0}, produced{0};
  auto take = [&] {
    int v = items.load(std::memory_order_relaxed);
    while (v > 0)
      if (items.compare_exchange_weak(v, v - 1)) return true;
    return false;
  };
  auto reserve = [&] {
    int v = items.load(std::memory_order_relaxed);
    while (v < slots)
      if (items.compare_exchange_weak(v, v + 1)) return true;
    return false;
  };
  std::vector<std::thread> thr;
  for (int c = 0; c < consumers; c++)
    thr.emplace_back([&] {
      for (int i = 0; i < per_consumer; i++) {
        if (exclusive)
          wait_event_idle_exclusive(items_wq, take());
        else
          wait_event(items_wq, take());
        consumed.fetch_add(1, std::memory_order_relaxed);
        /* the CAS in take() is fully ordered: wq_has_sleeper()'s pairing */
        if (wq_has_sleeper(&space_wq)) wake_up(&space_wq);
      }
    });
  for (int p = 0; p < producers; p++)
    thr.emplace_back([&, p] {
      int mine = total / producers + (p < total % producers ? 1 : 0);
      for (int i = 0; i < mine; i++) {
        if (exclusive)
          wait_event_idle_exclusive(space_wq, reserve());
        else
          wait_event(space_wq, reserve());
        produced.fetch_add(1, std::memory_order_relaxed);
        if (exclusive)
          wake_up(&items_wq);
        else if (wq_has_sleeper(&items_wq))
          wake_up(&items_wq);
      }
    });
  for (auto &t : thr) t.join();
  EXPECT_EQ(produced.load(), total);
  EXPECT_EQ(consumed.load(), total);
  EXPECT_EQ(items.load(), 0);
  EXPECT_FALSE(waitqueue_active(&items_wq));
  EXPECT_FALSE(waitqueue_active(&space_wq));
}

TEST(WaitStressTest, NoLostWakeupsNonExclusive) { NoLostWakeups(false); }
TEST(WaitStressTest, NoLostWakeupsExclusive) { NoLostWakeups(true); }

}  // namespace
