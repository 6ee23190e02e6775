// SPDX-License-Identifier: GPL-2.0-only
// struct completion: counting, complete_all(), timeouts, signals.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/completion.h>
#include <uk/linux/jiffies.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace {

TEST(CompletionTest, CountsCompletions) {
  DECLARE_COMPLETION(done);
  EXPECT_FALSE(completion_done(&done));
  EXPECT_FALSE(try_wait_for_completion(&done));
  complete(&done);
  complete(&done);
  EXPECT_TRUE(completion_done(&done));
  EXPECT_TRUE(try_wait_for_completion(&done));
  wait_for_completion(&done);  // second one: no sleep
  EXPECT_FALSE(try_wait_for_completion(&done));
  EXPECT_EQ(wait_for_completion_timeout(&done, 0), 0u);
}

TEST(CompletionTest, CompleteAllReleasesEveryoneUntilReinit) {
  struct completion done;
  init_completion(&done);
  constexpr int kN = 4;
  std::atomic<int> finished{0};
  std::vector<std::thread> thr;
  std::vector<std::atomic<struct task_struct *>> tasks(kN);
  for (int i = 0; i < kN; i++)
    thr.emplace_back([&, i] {
      tasks[i].store(current);
      wait_for_completion(&done);
      finished.fetch_add(1);
    });
  for (int i = 0; i < kN; i++) {
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(tasks[i]));
  }
  EXPECT_EQ(finished.load(), 0);
  complete_all(&done);
  for (auto &t : thr) t.join();
  EXPECT_EQ(finished.load(), kN);
  EXPECT_TRUE(try_wait_for_completion(&done));  // stays done
  wait_for_completion_io(&done);
  reinit_completion(&done);
  EXPECT_FALSE(completion_done(&done));
}

TEST(CompletionTest, CompleteWakesOneWaiterPerCall) {
  struct completion done;
  init_completion(&done);
  constexpr int kN = 3;
  std::atomic<int> finished{0};
  std::vector<std::thread> thr;
  std::vector<std::atomic<struct task_struct *>> tasks(kN);
  for (int i = 0; i < kN; i++)
    thr.emplace_back([&, i] {
      tasks[i].store(get_task_struct(current));  // outlives the thread
      wait_for_completion(&done);
      finished.fetch_add(1);
    });
  for (int i = 0; i < kN; i++) {
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(tasks[i]));
  }
  for (int k = 1; k <= kN; k++) {
    complete(&done);
    ASSERT_TRUE(uk::testing::WaitFor([&] { return finished.load() >= k; }));
    int blocked = 0;
    for (auto &t : tasks) blocked += uk::task_is_blocked(t.load());
    EXPECT_LE(blocked, kN - k);
  }
  for (auto &t : thr) t.join();
  for (auto &t : tasks) put_task_struct(t.load());
  EXPECT_FALSE(completion_done(&done));
}

// Waiters sleep on the completion's simple wait queue in arrival order:
// complete_on_current_cpu() wakes the oldest one only.
TEST(CompletionTest, CompleteOnCurrentCpuWakesTheOldestWaiter) {
  DECLARE_COMPLETION_ONSTACK(done);
  std::atomic<int> first{-1};
  std::atomic<int> finished{0};
  std::atomic<struct task_struct *> tasks[2] = {nullptr, nullptr};
  std::vector<std::thread> thr;
  for (int i = 0; i < 2; i++) {
    thr.emplace_back([&, i] {
      tasks[i].store(get_task_struct(current));  // outlives the thread
      wait_for_completion(&done);
      int none = -1;
      first.compare_exchange_strong(none, i);
      finished.fetch_add(1);
    });
    ASSERT_TRUE(uk::testing::WaitTaskBlocked(tasks[i]));
  }
  EXPECT_TRUE(swait_active(&done.wait));
  complete_on_current_cpu(&done);
  ASSERT_TRUE(uk::testing::WaitFor([&] { return finished.load() == 1; }));
  EXPECT_EQ(first.load(), 0);
  EXPECT_TRUE(uk::task_is_blocked(tasks[1].load()));
  EXPECT_TRUE(swait_active(&done.wait));
  complete_on_current_cpu(&done);
  for (auto &t : thr) t.join();
  for (auto &t : tasks) put_task_struct(t.load());
  EXPECT_EQ(finished.load(), 2);
  EXPECT_FALSE(swait_active(&done.wait));
  EXPECT_FALSE(completion_done(&done));
}

TEST(CompletionTest, InterruptibleAndKillable) {
  struct completion done;
  init_completion(&done);
  std::atomic<int> r1{1}, r2{1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    r1.store(wait_for_completion_interruptible(&done));
    uk::task_clear_signals(current);
    r2.store(wait_for_completion_killable(&done));
    uk::task_clear_signals(current);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::task_send_signal(task.load(), SIGINT);
  // killable: SIGINT does not interrupt, SIGKILL does
  ASSERT_TRUE(uk::testing::WaitFor([&] { return r1.load() != 1; }));
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
  uk::task_send_signal(task.load(), SIGINT);
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
  uk::task_send_signal(task.load(), SIGKILL);
  t.join();
  EXPECT_EQ(r1.load(), -ERESTARTSYS);
  EXPECT_EQ(r2.load(), -ERESTARTSYS);
  EXPECT_FALSE(completion_done(&done));
}

class CompletionVirtualClockTest : public ::testing::Test {
 protected:
  void SetUp() override { uk::clock_use_virtual(); }
  void TearDown() override { uk::clock_use_host(); }
};

TEST_F(CompletionVirtualClockTest, Timeouts) {
  struct completion done;
  init_completion(&done);
  std::atomic<long> ret{-1};
  std::atomic<struct task_struct *> task{nullptr};
  std::thread t([&] {
    task.store(current);
    ret.store((long)wait_for_completion_timeout(&done, 10));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(10 * TICK_NSEC);
  t.join();
  EXPECT_EQ(ret.load(), 0);

  task.store(nullptr);
  std::thread t2([&] {
    task.store(current);
    ret.store(wait_for_completion_interruptible_timeout(&done, 10));
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  uk::virtual_clock_advance(4 * TICK_NSEC);
  complete(&done);
  t2.join();
  EXPECT_EQ(ret.load(), 6);
  EXPECT_FALSE(completion_done(&done));
}

// Ping-pong through two completions: every wake-up must arrive.
TEST(CompletionStressTest, PingPong) {
  struct completion ping, pong;
  init_completion(&ping);
  init_completion(&pong);
#if defined(UK_TSAN)
  const int rounds = 1000;
#else
  const int rounds = 5000;
#endif
  std::thread t([&] {
    for (int i = 0; i < rounds; i++) {
      wait_for_completion(&ping);
      complete(&pong);
    }
  });
  for (int i = 0; i < rounds; i++) {
    complete(&ping);
    wait_for_completion(&pong);
  }
  t.join();
  EXPECT_FALSE(completion_done(&ping));
  EXPECT_FALSE(completion_done(&pong));
}

}  // namespace
