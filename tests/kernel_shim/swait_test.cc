// SPDX-License-Identifier: GPL-2.0-only
// Simple wait queues: who swake_up_one()/swake_up_all() wake, the entry's
// life on the queue, and signals in prepare_to_swait_event().
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <uk/linux/jiffies.h>
#include <uk/linux/swait.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace {

DECLARE_SWAIT_QUEUE_HEAD(static_q);

TEST(SwaitTest, EmptyQueues) {
  EXPECT_FALSE(swait_active(&static_q));
  EXPECT_FALSE(swq_has_sleeper(&static_q));

  struct swait_queue_head q;
  init_swait_queue_head(&q);
  EXPECT_FALSE(swait_active(&q));
  // Nobody to wake: both are no-ops.
  swake_up_one(&q);
  swake_up_all(&q);
  EXPECT_FALSE(swait_active(&q));
}

// Waiters that queue one after another, each sleeping once in schedule()
// and recording the order in which they came back.
struct Sleepers {
  explicit Sleepers(struct swait_queue_head *q, int n) : q(q), tasks(n) {
    for (int i = 0; i < n; i++) {
      threads.emplace_back([this, i] {
        DECLARE_SWAITQUEUE(wait);

        tasks[i].store(get_task_struct(current));  // outlives the thread
        prepare_to_swait_exclusive(this->q, &wait, TASK_UNINTERRUPTIBLE);
        schedule();
        finish_swait(this->q, &wait);
        bool off = list_empty(&wait.task_list);
        std::lock_guard<std::mutex> g(mu);
        off_queue.push_back(off);
        order.push_back(i);
      });
      // The next one queues behind this one.
      EXPECT_TRUE(uk::testing::WaitTaskBlocked(tasks[i]));
    }
  }
  ~Sleepers() {
    for (auto &t : threads) t.join();
    for (auto &t : tasks) put_task_struct(t.load());
  }
  size_t done() {
    std::lock_guard<std::mutex> g(mu);
    return order.size();
  }
  int blocked() {
    int n = 0;
    for (auto &t : tasks) n += uk::task_is_blocked(t.load());
    return n;
  }

  struct swait_queue_head *q;
  std::vector<std::atomic<struct task_struct *>> tasks;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<int> order;
  std::vector<bool> off_queue;
};

TEST(SwaitTest, SwakeUpOneWakesTheOldestWaiter) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  constexpr int kN = 3;
  Sleepers s(&q, kN);
  EXPECT_TRUE(swq_has_sleeper(&q));

  for (int k = 1; k <= kN; k++) {
    swake_up_one(&q);
    ASSERT_TRUE(uk::testing::WaitFor([&] { return s.done() >= size_t(k); }));
    EXPECT_EQ(s.done(), size_t(k));
    EXPECT_EQ(s.blocked(), kN - k);
    EXPECT_EQ(swait_active(&q), k < kN);
  }
  std::lock_guard<std::mutex> g(s.mu);
  EXPECT_EQ(s.order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.off_queue, (std::vector<bool>{true, true, true}));
}

TEST(SwaitTest, SwakeUpAllWakesEveryWaiter) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  constexpr int kN = 4;
  Sleepers s(&q, kN);

  swake_up_all(&q);
  EXPECT_FALSE(swait_active(&q));
  ASSERT_TRUE(uk::testing::WaitFor([&] { return s.done() == size_t(kN); }));
  EXPECT_EQ(s.blocked(), 0);
}

TEST(SwaitTest, SwakeUpAllLockedWakesEveryWaiter) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  constexpr int kN = 3;
  Sleepers s(&q, kN);

  unsigned long flags;
  raw_spin_lock_irqsave(&q.lock, flags);
  swake_up_all_locked(&q);
  EXPECT_TRUE(list_empty(&q.task_list));
  raw_spin_unlock_irqrestore(&q.lock, flags);
  ASSERT_TRUE(uk::testing::WaitFor([&] { return s.done() == size_t(kN); }));
  std::lock_guard<std::mutex> g(s.mu);
  EXPECT_EQ(s.off_queue, (std::vector<bool>(kN, true)));
}

TEST(SwaitTest, PrepareTwiceKeepsOnePlaceAndFinishLeaves) {
  std::thread t([] {
    struct swait_queue_head q;
    init_swait_queue_head(&q);
    DECLARE_SWAITQUEUE(a);
    DECLARE_SWAITQUEUE(b);

    EXPECT_EQ(a.task, get_current());
    prepare_to_swait_exclusive(&q, &a, TASK_UNINTERRUPTIBLE);
    EXPECT_EQ(get_current_state(), TASK_UNINTERRUPTIBLE);
    EXPECT_EQ(prepare_to_swait_event(&q, &b, TASK_UNINTERRUPTIBLE), 0);
    // Queued again: a stays first, not moved behind b.
    prepare_to_swait_exclusive(&q, &a, TASK_UNINTERRUPTIBLE);
    EXPECT_EQ(list_first_entry(&q.task_list, struct swait_queue, task_list),
              &a);
    EXPECT_EQ(a.task_list.next, &b.task_list);

    // Not woken: finish_swait() takes the entry off under the lock.
    finish_swait(&q, &a);
    EXPECT_EQ(get_current_state(), TASK_RUNNING);
    EXPECT_TRUE(list_empty(&a.task_list));
    EXPECT_EQ(list_first_entry(&q.task_list, struct swait_queue, task_list),
              &b);

    unsigned long flags;
    raw_spin_lock_irqsave(&q.lock, flags);
    __finish_swait(&q, &b);
    __finish_swait(&q, &b);  // already off: nothing to do
    raw_spin_unlock_irqrestore(&q.lock, flags);
    EXPECT_TRUE(list_empty(&b.task_list));
    EXPECT_FALSE(swait_active(&q));
  });
  t.join();
}

TEST(SwaitTest, PrepareToSwaitEventSeesPendingSignal) {
  std::thread t([] {
    struct swait_queue_head q;
    init_swait_queue_head(&q);
    struct swait_queue w;
    INIT_LIST_HEAD(&w.task_list);

    uk::task_send_signal(current, SIGINT);
    // An uninterruptible sleep does not look at the signal: queued.
    EXPECT_EQ(prepare_to_swait_event(&q, &w, TASK_UNINTERRUPTIBLE), 0);
    EXPECT_TRUE(swait_active(&q));
    EXPECT_EQ(w.task, get_current());
    // An interruptible one does, and leaves the queue.
    EXPECT_EQ(prepare_to_swait_event(&q, &w, TASK_INTERRUPTIBLE), -ERESTARTSYS);
    EXPECT_FALSE(swait_active(&q));
    EXPECT_TRUE(list_empty(&w.task_list));
    // A killable one ignores SIGINT ...
    EXPECT_EQ(prepare_to_swait_event(&q, &w, TASK_KILLABLE), 0);
    EXPECT_TRUE(swait_active(&q));
    __set_current_state(TASK_RUNNING);
    uk::task_clear_signals(current);
    // ... but not SIGKILL.
    uk::task_send_signal(current, SIGKILL);
    EXPECT_EQ(prepare_to_swait_event(&q, &w, TASK_KILLABLE), -ERESTARTSYS);
    EXPECT_FALSE(swait_active(&q));
    EXPECT_EQ(get_current_state(), TASK_RUNNING);
    uk::task_clear_signals(current);
  });
  t.join();
}

TEST(SwaitTest, SwaitEventExclusiveSleepsUntilCondition) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  std::atomic<int> cond{0};
  std::atomic<bool> finished{false};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    swait_event_exclusive(q, cond.load() == 2);
    finished.store(true);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  // Woken with the condition still false: it queues and sleeps again.
  cond.store(1);
  swake_up_one(&q);
  ASSERT_TRUE(uk::testing::WaitFor([&] { return swait_active(&q); }));
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
  EXPECT_FALSE(finished.load());
  cond.store(2);
  EXPECT_TRUE(swq_has_sleeper(&q));
  swake_up_one(&q);
  t.join();
  EXPECT_TRUE(finished.load());
  EXPECT_FALSE(swait_active(&q));
}

TEST(SwaitTest, SwaitEventInterruptibleReturnsOnSignal) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  std::atomic<int> ret{1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(swait_event_interruptible_exclusive(q, false));
    uk::task_clear_signals(current);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::task_send_signal(task.load(), SIGINT);
  t.join();
  EXPECT_EQ(ret.load(), -ERESTARTSYS);
  // The interrupted waiter left the queue.
  EXPECT_FALSE(swait_active(&q));
}

TEST(SwaitTest, SwaitEventTimeoutExclusive) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  std::thread t([&] {
    // Condition already true: the time left, at least 1.
    EXPECT_EQ(swait_event_timeout_exclusive(q, true, 5), 5);
    EXPECT_EQ(swait_event_timeout_exclusive(q, true, 0), 1);
    // False, with no time: 0 at once.
    EXPECT_EQ(swait_event_timeout_exclusive(q, false, 0), 0);
    EXPECT_EQ(swait_event_interruptible_timeout_exclusive(q, false, 0), 0);
    EXPECT_EQ(swait_event_idle_timeout_exclusive(q, false, 0), 0);
    swait_event_idle_exclusive(q, true);
  });
  t.join();
  EXPECT_FALSE(swait_active(&q));
}

class SwaitVirtualClockTest : public ::testing::Test {
 protected:
  void SetUp() override { uk::clock_use_virtual(); }
  void TearDown() override { uk::clock_use_host(); }
};

TEST_F(SwaitVirtualClockTest, TimeoutsSleepUntilTheDeadline) {
  struct swait_queue_head q;
  init_swait_queue_head(&q);
  std::atomic<bool> cond{false};
  std::atomic<long> ret{-1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store(swait_event_timeout_exclusive(q, cond.load(), 10));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(10 * TICK_NSEC);
  t.join();
  EXPECT_EQ(ret.load(), 0);
  EXPECT_FALSE(swait_active(&q));

  task.store(nullptr);
  std::thread t2([&] {
    task.store(current);
    ret.store(swait_event_interruptible_timeout_exclusive(q, cond.load(), 10));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(4 * TICK_NSEC);
  cond.store(true);
  swake_up_one(&q);
  t2.join();
  EXPECT_EQ(ret.load(), 6);
  EXPECT_FALSE(swait_active(&q));
}

}  // namespace
