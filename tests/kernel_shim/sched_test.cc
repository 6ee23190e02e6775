// SPDX-License-Identifier: GPL-2.0-only
// Tasks, schedule()/wake-ups, host sleeps, schedule_timeout() on the virtual clock,
// signals for tests, mutex_lock_interruptible(), context-switch counters.
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <uk/linux/jiffies.h>
#include <uk/linux/mutex.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/sched/signal.h>
#include <uk/linux/slab.h>
#include <uk/shim/clock.h>
#include <uk/shim/ctxsw.h>

#include "testmain.h"

namespace {

// Runs `fn` on a new thread that publishes its task first.
class TaskThread {
 public:
  template <class Fn>
  explicit TaskThread(Fn fn) {
    thr_ = std::thread([this, fn] {
      task_.store(get_current(), std::memory_order_release);
      fn();
      done_.store(true, std::memory_order_release);
    });
    while (!task_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~TaskThread() {
    if (thr_.joinable()) thr_.join();
  }
  struct task_struct *task() const {
    return task_.load(std::memory_order_acquire);
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  void join() { thr_.join(); }

 private:
  std::atomic<struct task_struct *> task_{nullptr};
  std::atomic<bool> done_{false};
  std::thread thr_;
};

TEST(SchedTest, CurrentIsPerThreadAndFreedAtExit) {
  struct task_struct *me = current;
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me, get_current());
  EXPECT_EQ(current->pid, (pid_t)syscall(SYS_gettid));
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_RUNNING);

  long before = uk::nr_tasks();
  struct task_struct *other = nullptr;
  char comm[TASK_COMM_LEN] = {};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "uk-sched-t");
    other = current;
    memcpy(comm, current->comm, sizeof(comm));
    EXPECT_EQ(uk::nr_tasks(), before + 1);
  });
  t.join();
  EXPECT_NE(other, me);
  EXPECT_STREQ(comm, "uk-sched-t");
  EXPECT_EQ(uk::nr_tasks(), before);  // released at thread exit
}

// A thread that runs one task after another: task_exit_current() ends the
// task, takes the thread out of the RCU registry and empties its slab
// magazines, as the thread's exit would; the next task starts afresh.
TEST(SchedTest, TaskExitCurrentStartsTheNextTaskAsANewThread) {
  long before = uk::nr_tasks();
  std::thread t([before] {
    struct task_struct *first = current;
    uint64_t first_serial = first->uk_serial;
    EXPECT_NE(first_serial, 0u);
    EXPECT_EQ(uk::nr_tasks(), before + 1);

    struct kmem_cache *c =
        kmem_cache_create("uk_sched_exit_test", 64, 0, 0, nullptr);
    ASSERT_NE(c, nullptr);
    kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));  // into the magazine
    rcu_read_lock();
    rcu_read_unlock();
    EXPECT_TRUE(uk::rcu_reader_self().registered);

    uk::task_exit_current();
    EXPECT_EQ(uk::nr_tasks(), before);  // the first task is gone
    EXPECT_FALSE(uk::rcu_reader_self().registered);
    EXPECT_EQ(uk::slab_nr_allocated(c), 0);
    kmem_cache_destroy(c);

    struct task_struct *second = current;
    EXPECT_GT(second->uk_serial, first_serial);
    EXPECT_EQ(second->pid, (pid_t)syscall(SYS_gettid));
    EXPECT_EQ(task_state_read(second), (unsigned)TASK_RUNNING);
    EXPECT_EQ(uk::nr_tasks(), before + 1);
    uk::task_exit_current();
    uk::task_exit_current();  // no task: nothing to do
    EXPECT_EQ(uk::nr_tasks(), before);
  });
  t.join();
  EXPECT_EQ(uk::nr_tasks(), before);
}

TEST(SchedTest, WakeBetweenSetStateAndScheduleIsNotLost) {
  struct task_struct *me = current;
  for (int i = 0; i < 200; i++) {
    set_current_state(TASK_UNINTERRUPTIBLE);
    std::thread waker([me] { EXPECT_EQ(wake_up_process(me), 1); });
    waker.join();
    EXPECT_EQ(task_state_read(me), (unsigned)TASK_RUNNING);
    schedule();  // must return at once
  }
}

TEST(SchedTest, WakeUpStateHonoursTheMask) {
  struct task_struct *me = current;
  set_current_state(TASK_UNINTERRUPTIBLE);
  EXPECT_EQ(wake_up_state(me, TASK_INTERRUPTIBLE), 0);
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_UNINTERRUPTIBLE);
  EXPECT_EQ(wake_up_process(me), 1);
  EXPECT_EQ(wake_up_process(me), 0);  // already running
  schedule();

  set_current_state(TASK_KILLABLE);
  EXPECT_EQ(wake_up_state(me, TASK_INTERRUPTIBLE), 0);
  EXPECT_EQ(wake_up_state(me, TASK_WAKEKILL), 1);
  schedule();
}

TEST(SchedTest, SleeperBlocksUntilWoken) {
  std::atomic<bool> flag{false};
  TaskThread t([&] {
    for (;;) {
      set_current_state(TASK_UNINTERRUPTIBLE);
      if (flag.load(std::memory_order_relaxed)) break;
      schedule();
    }
    __set_current_state(TASK_RUNNING);
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  EXPECT_FALSE(t.done());
  flag.store(true, std::memory_order_relaxed);
  EXPECT_EQ(wake_up_process(t.task()), 1);
  t.join();
}

// The eventfd's count, or -1 when it is empty.
long EventfdCount(int efd) {
  uint64_t cnt;

  if (read(efd, &cnt, sizeof(cnt)) != (ssize_t)sizeof(cnt)) return -1;
  return (long)cnt;
}

// One host sleep the way aio's read_events() sleeps: ppoll() on an eventfd
// named with host_sleep_begin(). Returns the eventfd's count drained after
// host_sleep_end(), or -2 when host_sleep_begin() refused to sleep.
long HostSleep(int efd) {
  struct pollfd pfd = {.fd = efd, .events = POLLIN, .revents = 0};
  struct timespec bound = {.tv_sec = 60, .tv_nsec = 0};  // a lost wake-up fails

  if (!uk::host_sleep_begin(efd)) return -2;
  EXPECT_EQ(ppoll(&pfd, 1, &bound, nullptr), 1);
  uk::host_sleep_end();
  return EventfdCount(efd);
}

TEST(SchedTest, HostSleepIsSkippedByATaskWokenAlready) {
  struct task_struct *me = current;
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);

  set_current_state(TASK_INTERRUPTIBLE);
  EXPECT_EQ(wake_up_process(me), 1);
  EXPECT_EQ(HostSleep(efd), -2);
  EXPECT_FALSE(uk::task_is_blocked(me));
  EXPECT_EQ(EventfdCount(efd), -1);  // nobody wrote to it

  // Once host_sleep_end() has run, a wake-up changes the state only.
  set_current_state(TASK_INTERRUPTIBLE);
  ASSERT_TRUE(uk::host_sleep_begin(efd));
  uk::host_sleep_end();
  EXPECT_EQ(wake_up_process(me), 1);
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_RUNNING);
  EXPECT_EQ(EventfdCount(efd), -1);
  close(efd);
}

TEST(SchedTest, HostSleeperIsWokenThroughItsEventfd) {
  std::atomic<bool> flag{false};
  std::atomic<long> drained{0};
  std::atomic<int> sleeps{0};
  TaskThread t([&] {
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ASSERT_GE(efd, 0);
    for (;;) {
      set_current_state(TASK_INTERRUPTIBLE);
      if (flag.load(std::memory_order_relaxed)) break;
      long n = HostSleep(efd);
      if (n == -2) continue;
      sleeps.fetch_add(1);
      drained.store(n);
    }
    __set_current_state(TASK_RUNNING);
    close(efd);
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  EXPECT_FALSE(t.done());
  flag.store(true, std::memory_order_relaxed);
  EXPECT_EQ(wake_up_process(t.task()), 1);
  t.join();
  // One sleep, ended by the one write of the wake-up.
  EXPECT_EQ(sleeps.load(), 1);
  EXPECT_EQ(drained.load(), 1);
}

TEST(SchedTest, SignalsWakeHostSleepers) {
  std::atomic<int> sleeps{0};
  TaskThread t([&] {
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ASSERT_GE(efd, 0);
    set_current_state(TASK_INTERRUPTIBLE);
    while (!signal_pending(current)) {
      if (HostSleep(efd) != -2) sleeps.fetch_add(1);
      set_current_state(TASK_INTERRUPTIBLE);
    }
    __set_current_state(TASK_RUNNING);
    uk::task_clear_signals(current);
    close(efd);
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  EXPECT_EQ(uk::task_send_signal(t.task(), SIGUSR1), 0);
  t.join();
  EXPECT_EQ(sleeps.load(), 1);
}

TEST(SchedTest, SignalsWakeInterruptibleSleepers) {
  std::atomic<int> phase{0};
  TaskThread t([&] {
    set_current_state(TASK_INTERRUPTIBLE);
    while (!signal_pending(current)) {
      schedule();
      set_current_state(TASK_INTERRUPTIBLE);
    }
    __set_current_state(TASK_RUNNING);
    EXPECT_FALSE(fatal_signal_pending(current));
    uk::task_clear_signals(current);
    EXPECT_FALSE(signal_pending(current));
    phase.store(1);
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  EXPECT_EQ(uk::task_send_signal(t.task(), SIGUSR1), 0);
  t.join();
  EXPECT_EQ(phase.load(), 1);
}

TEST(SchedTest, UninterruptibleSleepIgnoresSignalsKillableOnlySigkill) {
  struct task_struct *me = current;
  set_current_state(TASK_UNINTERRUPTIBLE);
  uk::task_send_signal(me, SIGINT);
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_UNINTERRUPTIBLE);
  EXPECT_EQ(signal_pending_state(TASK_UNINTERRUPTIBLE, me), 0);
  EXPECT_NE(signal_pending_state(TASK_INTERRUPTIBLE, me), 0);
  EXPECT_EQ(signal_pending_state(TASK_KILLABLE, me), 0);
  __set_current_state(TASK_RUNNING);

  set_current_state(TASK_KILLABLE);
  uk::task_send_signal(me, SIGKILL);
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_RUNNING);  // woken
  EXPECT_TRUE(fatal_signal_pending(me));
  EXPECT_NE(signal_pending_state(TASK_KILLABLE, me), 0);

  // schedule() in a state the pending signal breaks returns at once.
  set_current_state(TASK_INTERRUPTIBLE);
  schedule();
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_RUNNING);
  uk::task_clear_signals(me);
  EXPECT_FALSE(signal_pending(me));
  EXPECT_EQ(uk::task_send_signal(me, 0), -EINVAL);
  EXPECT_EQ(uk::task_send_signal(me, 65), -EINVAL);
}

TEST(SchedTest, BlockedSignalsAreNotPendingUntilUnblocked) {
  struct task_struct *me = current;
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGKILL);
  ASSERT_EQ(uk::task_sigprocmask(SIG_BLOCK, &set, &old), 0);
  EXPECT_EQ(uk::task_blocked_mask(me),
            sigmask(SIGUSR2));  // SIGKILL not blockable

  set_current_state(TASK_INTERRUPTIBLE);
  uk::task_send_signal(me, SIGUSR2);
  EXPECT_EQ(task_state_read(me), (unsigned)TASK_INTERRUPTIBLE);  // not woken
  EXPECT_FALSE(signal_pending(me));
  __set_current_state(TASK_RUNNING);

  ASSERT_EQ(uk::task_sigprocmask(SIG_UNBLOCK, &set, nullptr), 0);
  EXPECT_TRUE(signal_pending(me));
  uk::task_clear_signals(me);
  EXPECT_EQ(uk::task_sigprocmask(42, &set, nullptr), -EINVAL);
  ASSERT_EQ(uk::task_sigprocmask(SIG_SETMASK, &old, nullptr), 0);

  // set_user_sigmask(): kernel ABI size only, restored afterwards.
  EXPECT_EQ(set_user_sigmask(&set, sizeof(sigset_t)), -EINVAL);
  ASSERT_EQ(set_user_sigmask(&set, 8), 0);
  EXPECT_EQ(uk::task_blocked_mask(me), sigmask(SIGUSR2));
  restore_saved_sigmask_unless(false);
  EXPECT_EQ(uk::task_blocked_mask(me), 0u);
  // An unreadable mask is -EFAULT, and nothing is installed.
  EXPECT_EQ(set_user_sigmask(reinterpret_cast<const sigset_t *>(8), 8),
            -EFAULT);
  EXPECT_EQ(set_compat_user_sigmask(reinterpret_cast<const void *>(8), 8),
            -EFAULT);
  EXPECT_EQ(uk::task_blocked_mask(me), 0u);

  // The mask a host sleep takes: only one set_user_sigmask() installed.
  sigset_t buf;
  EXPECT_EQ(uk::host_sleep_sigmask(&buf), nullptr);
  ASSERT_EQ(set_user_sigmask(&set, 8), 0);
  ASSERT_NE(uk::host_sleep_sigmask(&buf), nullptr);
  EXPECT_TRUE(sigismember(&buf, SIGUSR2));
  EXPECT_FALSE(sigismember(&buf, SIGUSR1));
  restore_saved_sigmask_unless(false);

  // An interrupted host sleep is pending until the system call returns.
  EXPECT_FALSE(signal_pending(me));
  uk::host_sleep_interrupted();
  EXPECT_TRUE(signal_pending(me));
  uk::host_signal_delivered();
  EXPECT_FALSE(signal_pending(me));
}

class SchedVirtualClockTest : public ::testing::Test {
 protected:
  void SetUp() override { uk::clock_use_virtual(); }
  void TearDown() override { uk::clock_use_host(); }
};

TEST_F(SchedVirtualClockTest, ScheduleTimeoutExpires) {
  std::atomic<long> ret{-1};
  TaskThread t([&] {
    set_current_state(TASK_UNINTERRUPTIBLE);
    ret.store(schedule_timeout(10));
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  uk::virtual_clock_advance(9 * TICK_NSEC);
  EXPECT_FALSE(t.done());
  uk::virtual_clock_advance(1 * TICK_NSEC);
  t.join();
  EXPECT_EQ(ret.load(), 0);
}

TEST_F(SchedVirtualClockTest, ScheduleTimeoutWokenEarlyReturnsRemaining) {
  std::atomic<long> ret{-1};
  TaskThread t([&] { ret.store(schedule_timeout_interruptible(100)); });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  uk::virtual_clock_advance(30 * TICK_NSEC);
  wake_up_process(t.task());
  t.join();
  EXPECT_EQ(ret.load(), 70);
}

TEST_F(SchedVirtualClockTest, ScheduleTimeoutInterruptibleStopsOnSignal) {
  std::atomic<long> ret{-1};
  TaskThread t([&] { ret.store(schedule_timeout_interruptible(50)); });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  uk::virtual_clock_advance(5 * TICK_NSEC);
  uk::task_send_signal(t.task(), SIGINT);
  t.join();
  EXPECT_EQ(ret.load(), 45);
}

TEST(SchedTest, MutexLockInterruptibleHonoursSignals) {
  struct mutex m;
  mutex_init(&m);
  mutex_lock(&m);
  std::atomic<int> ret{1};
  std::atomic<bool> started{false};
  TaskThread t([&] {
    started.store(true);
    ret.store(mutex_lock_interruptible(&m));
  });
  ASSERT_TRUE(uk::testing::WaitFor([&] { return started.load(); }));
  uk::task_send_signal(t.task(), SIGTERM);
  t.join();
  EXPECT_EQ(ret.load(), -EINTR);
  mutex_unlock(&m);

  // Without contention it takes the lock even with a signal pending... but
  // killable gives up on SIGKILL only.
  EXPECT_EQ(mutex_lock_interruptible(&m), 0);
  mutex_unlock(&m);
}

TEST(CtxswTest, BlockingCountsAsVoluntarySwitch) {
  uk::CtxswCounts a = uk::ctxsw_counts();
  uk::CtxswCounts pa = uk::ctxsw_counts_process();
  TaskThread t([] {
    set_current_state(TASK_UNINTERRUPTIBLE);
    schedule();
  });
  ASSERT_TRUE(uk::wait_task_blocked(t.task()));
  wake_up_process(t.task());
  t.join();
  uk::CtxswCounts b = uk::ctxsw_counts();
  uk::CtxswCounts pb = uk::ctxsw_counts_process();
  EXPECT_GE(b.voluntary, a.voluntary);
  EXPECT_GE(b.involuntary, a.involuntary);
  // The sleeper thread blocked at least once; its switches count for the process.
  EXPECT_GT(pb.voluntary, pa.voluntary);
  EXPECT_GE(pb.total(), b.total());
}

}  // namespace
