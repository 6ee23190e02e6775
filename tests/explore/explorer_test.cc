// SPDX-License-Identifier: GPL-2.0-only
// The explorer itself: planted bugs are found by every strategy, correct
// programs are not flagged (the bounded search completes), replay
// reproduces, shrinking gives a minimal schedule, and each built-in check
// (deadlock, lost wake-up, livelock, leak, WARN, interrupt masking, lock
// order and interrupt safety) fires.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include <uk/linux/atomic.h>
#include <uk/linux/hrtimer.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/timer.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

#include "explore.h"
#include "testmain.h"

namespace {

using explore::Options;
using explore::Result;
using explore::Strategy;

Options With(Strategy s, long schedules = 5000) {
  Options o;
  o.strategy = s;
  o.max_schedules = schedules;
  o.max_seconds = 60;
  return o;
}

int Deviations(const std::string &schedule) {
  if (schedule == "v1:-") return 0;
  int n = 1;
  for (char c : schedule)
    if (c == ',') n++;
  return n;
}

// ---- a lost update: x++ as a load and a store ----

void RacyIncrements() {
  static int x;
  x = 0;
  for (int i = 0; i < 2; i++)
    explore::spawn(
        [] {
          int v = READ_ONCE(x);
          WRITE_ONCE(x, v + 1);
        },
        i);
  explore::join();
  EXPLORE_CHECK(x == 2);
}

void AtomicIncrements() {
  static atomic_t x;
  atomic_set(&x, 0);
  for (int i = 0; i < 2; i++) explore::spawn([] { atomic_inc(&x); }, i);
  explore::join();
  EXPLORE_CHECK(atomic_read(&x) == 2);
}

TEST(Explorer, RandomFindsLostUpdate) {
  Result r = explore::run(RacyIncrements, With(Strategy::kRandom));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("x == 2"), std::string::npos) << r.message;
  printf("random: found after %ld schedules\n", r.found_at);
}

TEST(Explorer, PctFindsLostUpdate) {
  Options o = With(Strategy::kPct);
  o.pct_depth = 2;
  Result r = explore::run(RacyIncrements, o);
  ASSERT_TRUE(r.failed);
  printf("pct: found after %ld schedules\n", r.found_at);
}

TEST(Explorer, DfsFindsLostUpdateAndShrinksToOnePreemption) {
  Options o = With(Strategy::kDfs);
  o.preemption_bound = 1;
  o.trace = true;
  Result r = explore::run(RacyIncrements, o);
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(Deviations(r.schedule), 1) << r.schedule;
  EXPECT_NE(r.trace.find("READ_ONCE"), std::string::npos) << r.trace;
  EXPECT_NE(r.trace.find("explorer_test.cc:"), std::string::npos) << r.trace;
  printf("dfs: found after %ld schedules, %s\n%s", r.found_at,
         r.schedule.c_str(), r.trace.c_str());
}

TEST(Explorer, ReplayReproducesExactly) {
  Result r = explore::run(RacyIncrements, With(Strategy::kRandom));
  ASSERT_TRUE(r.failed);
  Options o;
  o.replay = r.schedule;
  for (int i = 0; i < 3; i++) {
    Result again = explore::run(RacyIncrements, o);
    EXPECT_TRUE(again.failed) << r.schedule;
    EXPECT_EQ(again.schedule, r.schedule);
    EXPECT_EQ(again.message, r.message);
  }
  // The empty schedule (run each task to its end in turn) passes.
  o.replay = "v1:-";
  EXPECT_FALSE(explore::run(RacyIncrements, o).failed);
}

TEST(Explorer, ShrinkingLeavesNoNeedlessSwitch) {
  // Random walks switch at many points. The shrunk schedule is 1-minimal:
  // without any one of its switches the failure goes away.
  for (uint64_t seed = 1; seed <= 5; seed++) {
    Options o = With(Strategy::kRandom);
    o.seed = seed;
    Result r = explore::run(RacyIncrements, o);
    ASSERT_TRUE(r.failed);
    EXPECT_GE(Deviations(r.unshrunk), Deviations(r.schedule));
    EXPECT_LE(Deviations(r.schedule), 3) << r.schedule;
    std::string body = r.schedule.substr(3);
    std::vector<std::string> items;
    size_t p = 0;
    while (p <= body.size()) {
      size_t q = body.find(',', p);
      if (q == std::string::npos) q = body.size();
      items.push_back(body.substr(p, q - p));
      p = q + 1;
    }
    for (size_t i = 0; i < items.size(); i++) {
      std::string s = "v1:";
      for (size_t j = 0; j < items.size(); j++)
        if (j != i) s += (s.size() > 3 ? "," : "") + items[j];
      if (s == "v1:") s = "v1:-";
      Options rep;
      rep.replay = s;
      EXPECT_FALSE(explore::run(RacyIncrements, rep).failed)
          << r.schedule << " without item " << i;
    }
  }
}

TEST(Explorer, AtomicIncrementsPassExhaustiveSearch) {
  Options o = With(Strategy::kDfs, 100000);
  o.preemption_bound = 3;
  Result r = explore::run(AtomicIncrements, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
  printf("dfs: %ld schedules, space exhausted\n", r.schedules);
}

// ---- each task meets the shim as a new thread ----
//
// Task threads are kept from one schedule to the next; each task still gets
// a task_struct of its own, starts outside the RCU registry and with empty
// slab magazines, so a schedule runs the same whichever thread it lands on.

void FreshTasks() {
  static uint64_t serial[2];
  static bool registered[2];
  static uint64_t last_max;
  for (int i = 0; i < 2; i++)
    explore::spawn(
        [i] {
          serial[i] = current->uk_serial;
          registered[i] = uk::rcu_reader_self().registered;
          kfree(kmalloc(32, GFP_KERNEL));
          rcu_read_lock();
          rcu_read_unlock();
        },
        i);
  explore::join();
  EXPLORE_CHECK(serial[0] != serial[1]);
  EXPLORE_CHECK(serial[0] > last_max && serial[1] > last_max);
  EXPLORE_CHECK(!registered[0] && !registered[1]);
  last_max = std::max(serial[0], serial[1]);
}

TEST(Explorer, EveryTaskStartsAsANewThread) {
  Result r = explore::run(FreshTasks, With(Strategy::kDfs, 200));
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_GT(r.schedules, 1);
}

// ---- a missing lock ----

DEFINE_SPINLOCK(counter_lock);
int counter;

// `plain`: counter++ instead of READ_ONCE() and WRITE_ONCE() (for the
// explore-tsan tests below).
void Increments(bool locked, bool plain = false) {
  counter = 0;
  spin_lock_init(&counter_lock);
  for (int i = 0; i < 2; i++)
    explore::spawn(
        [locked, plain] {
          for (int k = 0; k < 2; k++) {
            if (locked) spin_lock(&counter_lock);
            if (plain) {
              counter++;
            } else {
              int v = READ_ONCE(counter);
              WRITE_ONCE(counter, v + 1);
            }
            if (locked) spin_unlock(&counter_lock);
          }
        },
        i);
  explore::join();
  EXPLORE_CHECK(counter == 4);
}

TEST(Explorer, FindsMissingLock) {
  Result r = explore::run([] { Increments(false); }, With(Strategy::kDfs));
  EXPECT_TRUE(r.failed);
}

TEST(Explorer, LockedIncrementsPassExhaustiveSearch) {
  Options o = With(Strategy::kDfs, 200000);
  o.preemption_bound = 2;
  Result r = explore::run([] { Increments(true); }, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
  printf("dfs: %ld schedules, space exhausted\n", r.schedules);
}

// ---- data races between plain accesses (explore-tsan preset) ----
//
// Under ThreadSanitizer a plain access that nothing orders against another
// task's access to the same location fails the schedule, whatever order the
// schedule ran them in; the kernel's own orderings (locks, release/acquire)
// are no race.

struct Message {
  int payload;
  int ready;
};
Message msg;

// A payload published with a plain store before the flag, or with the
// flag's smp_store_release() and smp_load_acquire().
void Publish(bool ordered) {
  msg = {};
  explore::spawn(
      [ordered] {
        msg.payload = 42;
        if (ordered)
          smp_store_release(&msg.ready, 1);
        else
          WRITE_ONCE(msg.ready, 1);
      },
      0);
  explore::spawn(
      [ordered] {
        int ready =
            ordered ? smp_load_acquire(&msg.ready) : READ_ONCE(msg.ready);
        if (ready) EXPLORE_CHECK(msg.payload == 42);
      },
      1);
  explore::join();
}

#ifdef UKERN_TSAN
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

TEST(Explorer, TsanFindsPlainDataRace) {
  if (!kTsan) GTEST_SKIP() << "needs the explore-tsan preset";
  Result r =
      explore::run([] { Increments(false, true); }, With(Strategy::kDfs));
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(r.found_at, 1);
  EXPECT_NE(r.message.find("data race"), std::string::npos) << r.message;
}

TEST(Explorer, TsanLockedPlainAccessesAreNoRace) {
  if (!kTsan) GTEST_SKIP() << "needs the explore-tsan preset";
  Options o = With(Strategy::kDfs, 200000);
  o.preemption_bound = 2;
  Result r = explore::run([] { Increments(true, true); }, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
}

TEST(Explorer, TsanFindsPublicationWithoutRelease) {
  if (!kTsan) GTEST_SKIP() << "needs the explore-tsan preset";
  Result r = explore::run([] { Publish(false); }, With(Strategy::kDfs));
  EXPECT_TRUE(r.failed);
  EXPECT_NE(r.message.find("data race"), std::string::npos) << r.message;
  r = explore::run([] { Publish(true); }, With(Strategy::kDfs));
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
}

// ---- lost wake-up: the flag is tested before the task state is set ----

struct Sleeper {
  struct task_struct *task;
  int flag;
};
Sleeper sleeper;

void WakeUp(bool buggy_order) {
  sleeper = {};
  explore::spawn(
      [buggy_order] {
        // Published with release: the waker reads the task through it.
        smp_store_release(&sleeper.task, get_task_struct(get_current()));
        if (buggy_order) {
          // Wrong: a wake-up between the test and set_current_state() is lost.
          if (!READ_ONCE(sleeper.flag)) {
            set_current_state(TASK_UNINTERRUPTIBLE);
            schedule();
          }
        } else {
          for (;;) {
            set_current_state(TASK_UNINTERRUPTIBLE);
            if (READ_ONCE(sleeper.flag)) break;
            schedule();
          }
        }
        __set_current_state(TASK_RUNNING);
      },
      0);
  explore::spawn(
      [] {
        struct task_struct *t;
        while (!(t = smp_load_acquire(&sleeper.task))) cpu_relax();
        WRITE_ONCE(sleeper.flag, 1);
        wake_up_process(t);
        put_task_struct(t);
      },
      1);
  explore::join();
}

TEST(Explorer, FindsLostWakeUp) {
  Result r = explore::run([] { WakeUp(true); }, With(Strategy::kDfs));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("lost wake-up"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("T0 sleeps in schedule()"), std::string::npos)
      << r.message;
}

TEST(Explorer, CorrectSleepPassesExhaustiveSearch) {
  Options o = With(Strategy::kDfs, 100000);
  o.preemption_bound = 2;
  Result r = explore::run([] { WakeUp(false); }, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
}

// ---- wait queues: a waker that forgets wake_up() ----

DECLARE_WAIT_QUEUE_HEAD(wq);
int wq_flag;

void WaitQueue(bool wake) {
  wq_flag = 0;
  init_waitqueue_head(&wq);
  explore::spawn([] { wait_event(wq, READ_ONCE(wq_flag)); }, 0);
  explore::spawn(
      [wake] {
        WRITE_ONCE(wq_flag, 1);
        if (wake) wake_up(&wq);
      },
      1);
  explore::join();
}

TEST(Explorer, FindsMissingWakeUp) {
  Result r = explore::run([] { WaitQueue(false); }, With(Strategy::kRandom));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("sleeps in schedule()"), std::string::npos)
      << r.message;
}

TEST(Explorer, WaitEventPassesExhaustiveSearch) {
  Options o = With(Strategy::kDfs, 100000);
  o.preemption_bound = 2;
  Result r = explore::run([] { WaitQueue(true); }, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
}

// ---- deadlock: AB-BA ----

DEFINE_SPINLOCK(lock_a);
DEFINE_SPINLOCK(lock_b);

TEST(Explorer, FindsAbBaDeadlock) {
  Result r = explore::run(
      [] {
        // A stuck schedule leaves its tasks parked holding what they hold:
        // every schedule starts from fresh state.
        spin_lock_init(&lock_a);
        spin_lock_init(&lock_b);
        explore::spawn(
            [] {
              spin_lock(&lock_a);
              spin_lock(&lock_b);
              spin_unlock(&lock_b);
              spin_unlock(&lock_a);
            },
            0);
        explore::spawn(
            [] {
              spin_lock(&lock_b);
              spin_lock(&lock_a);
              spin_unlock(&lock_a);
              spin_unlock(&lock_b);
            },
            1);
        explore::join();
      },
      [] {
        Options o = With(Strategy::kDfs);
        o.trace = true;
        o.lockdep = false;  // the deadlock itself, not the order check
        return o;
      }());
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("deadlock"), std::string::npos) << r.message;
  EXPECT_EQ(Deviations(r.schedule), 1) << r.schedule << " " << r.message << "\n"
                                       << r.trace;
}

// ---- lock validation: inversions and irq-unsafe locks without a hang ----

DEFINE_SPINLOCK(lock_c);

void TakeInOrder(spinlock_t *first, spinlock_t *second) {
  spin_lock(first);
  spin_lock(second);
  spin_unlock(second);
  spin_unlock(first);
}

Result OrderScene(bool inverted) {
  return explore::run(
      [inverted] {
        spin_lock_init(&lock_a);
        spin_lock_init(&lock_b);
        explore::spawn([] { TakeInOrder(&lock_a, &lock_b); }, 0);
        if (inverted)
          explore::spawn([] { TakeInOrder(&lock_b, &lock_a); }, 1);
        else
          explore::spawn([] { TakeInOrder(&lock_a, &lock_b); }, 1);
        explore::join();
      },
      With(Strategy::kDfs));
}

TEST(Explorer, LockdepFindsAbBaOnASerialSchedule) {
  // The first schedule runs T0 to its end, then T1: no deadlock can occur
  // there, but the two orders are seen.
  Result r = OrderScene(true);
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.found_at, 1);
  EXPECT_NE(r.message.find("lock-order inversion"), std::string::npos)
      << r.message;
  EXPECT_EQ(Deviations(r.schedule), 0) << r.schedule;
}

TEST(Explorer, LockdepFindsAnInversionThroughAChain) {
  Result r = explore::run(
      [] {
        spin_lock_init(&lock_a);
        spin_lock_init(&lock_b);
        spin_lock_init(&lock_c);
        explore::spawn([] { TakeInOrder(&lock_a, &lock_b); }, 0);
        explore::spawn([] { TakeInOrder(&lock_b, &lock_c); }, 1);
        explore::spawn([] { TakeInOrder(&lock_c, &lock_a); }, 2);
        explore::join();
      },
      With(Strategy::kDfs));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("lock-order inversion"), std::string::npos)
      << r.message;
}

TEST(Explorer, LockdepPassesOneOrder) {
  Result r = OrderScene(false);
  EXPECT_FALSE(r.failed) << r.message << "\n" << r.trace;
  EXPECT_TRUE(r.exhausted);
}

// A lock that an interrupt takes, taken by a task of another CPU with that
// interrupt enabled: no schedule here can hang (the interrupt is on another
// CPU), but on the task's own CPU it would.
Result IrqScene(bool soft, bool safe) {
  return explore::run(
      [soft, safe] {
        spin_lock_init(&lock_a);
        explore::spawn(
            [soft, safe] {
              unsigned long flags;
              if (!safe) {
                spin_lock(&lock_a);
                spin_unlock(&lock_a);
              } else if (soft) {
                spin_lock_bh(&lock_a);
                spin_unlock_bh(&lock_a);
              } else {
                spin_lock_irqsave(&lock_a, flags);
                spin_unlock_irqrestore(&lock_a, flags);
              }
            },
            0);
        auto in_interrupt = [] {
          spin_lock(&lock_a);
          spin_unlock(&lock_a);
        };
        if (soft)
          explore::softirq(1, in_interrupt);
        else
          explore::irq(1, in_interrupt);
        explore::join();
      },
      With(Strategy::kDfs));
}

TEST(Explorer, LockdepFindsALockTakenInHardirqWithIrqsOn) {
  Result r = IrqScene(false, false);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("inconsistent lock state"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("hardirq"), std::string::npos) << r.message;
}

TEST(Explorer, LockdepFindsALockTakenInSoftirqWithBhOn) {
  Result r = IrqScene(true, false);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("inconsistent lock state"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("softirq"), std::string::npos) << r.message;
}

TEST(Explorer, LockdepPassesIrqSafeLocks) {
  for (bool soft : {false, true}) {
    Result r = IrqScene(soft, true);
    EXPECT_FALSE(r.failed) << soft << ": " << r.message << "\n" << r.trace;
    EXPECT_TRUE(r.exhausted) << soft;
  }
}

// ---- interrupts: nested where the CPU allows, never where it does not ----

int irq_counter;

void TaskAndIrq(bool irqs_off) {
  irq_counter = 0;
  explore::spawn(
      [irqs_off] {
        unsigned long flags = 0;
        if (irqs_off) local_irq_save(flags);
        int v = READ_ONCE(irq_counter);
        WRITE_ONCE(irq_counter, v + 1);
        if (irqs_off) local_irq_restore(flags);
      },
      0);
  explore::irq(0, [] {
    EXPLORE_CHECK(in_hardirq());
    EXPLORE_CHECK(smp_processor_id() == 0);
    int v = READ_ONCE(irq_counter);
    WRITE_ONCE(irq_counter, v + 1);
  });
  explore::join();
  EXPLORE_CHECK(irq_counter == 2);
}

TEST(Explorer, InterruptNestsInsideTaskOnItsCpu) {
  Result r = explore::run([] { TaskAndIrq(false); }, With(Strategy::kDfs));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("irq_counter == 2"), std::string::npos) << r.message;
}

TEST(Explorer, InterruptWaitsWhileIrqsOff) {
  Options o = With(Strategy::kDfs, 100000);
  o.preemption_bound = 3;
  Result r = explore::run([] { TaskAndIrq(true); }, o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule;
  EXPECT_TRUE(r.exhausted);
}

// ---- livelock, leak and WARN checks ----

TEST(Explorer, FindsLivelock) {
  Options o = With(Strategy::kRandom, 10);
  o.max_steps = 500;
  Result r = explore::run(
      [] {
        static int never;
        explore::spawn(
            [] {
              while (!READ_ONCE(never)) cpu_relax();
            },
            0);
        explore::join();
      },
      o);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("livelock"), std::string::npos) << r.message;
}

TEST(Explorer, FindsLeak) {
  Result r = explore::run(
      [] {
        explore::spawn(
            [] {
              void *p = kmalloc(32, GFP_KERNEL);
              (void)p;
            },
            0);
        explore::join();
      },
      With(Strategy::kRandom, 10));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("leak"), std::string::npos) << r.message;
}

TEST(Explorer, FindsWarn) {
  uk::testing::AllowWarnings();
  Result r = explore::run(
      [] {
        static int x;
        x = 0;
        explore::spawn([] { WRITE_ONCE(x, 1); }, 0);
        explore::spawn([] { WARN_ON(READ_ONCE(x) == 1); }, 1);
        explore::join();
      },
      With(Strategy::kDfs));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("WARN"), std::string::npos) << r.message;
}

TEST(Explorer, FindsNondeterministicSetUp) {
  // The second schedule registers one task fewer than the first: the bounded
  // search's replayed prefix names a task that is not there.
  Options o = With(Strategy::kDfs, 100);
  o.shrink = false;
  Result r = explore::run(
      [] {
        static int x;
        int n = explore::schedule_index() == 0 ? 2 : 1;
        for (int i = 0; i < n; i++)
          explore::spawn([] { WRITE_ONCE(x, READ_ONCE(x) + 1); }, i);
        explore::join();
      },
      o);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("nondeterministic"), std::string::npos) << r.message;
}

// ---- services: softirqs, timers and work items inside the schedules ----

// A task hands a callback over to the kernel's deferred execution (a
// tasklet, an hrtimer, a timer_list, a work item) and publishes `data` for
// it, before or after the hand-over. After it, the callback can run first.
enum class Defer { kTasklet, kHrtimer, kTimer, kWork };

struct Deferred {
  int data, seen, runs, cpu;
  bool hardirq, softirq, worker;
  struct tasklet_struct tasklet;
  struct hrtimer hrtimer;
  struct timer_list timer;
  struct work_struct work;
};
Deferred g_def;

void DeferredRuns() {
  g_def.seen = READ_ONCE(g_def.data);
  g_def.runs++;
  g_def.cpu = smp_processor_id();
  g_def.hardirq = in_hardirq();
  g_def.softirq = in_serving_softirq();
  g_def.worker = current_work() == &g_def.work;
}

void HandOver(Defer k) {
  switch (k) {
    case Defer::kTasklet:
      tasklet_schedule(&g_def.tasklet);
      break;
    case Defer::kHrtimer:
      hrtimer_start(&g_def.hrtimer, ns_to_ktime(1000), HRTIMER_MODE_REL);
      break;
    case Defer::kTimer:
      mod_timer(&g_def.timer, jiffies + 1);
      break;
    case Defer::kWork:
      queue_work(system_wq, &g_def.work);
      break;
  }
}

void DeferredScene(Defer k, bool publish_first) {
  g_def = Deferred{};
  tasklet_setup(&g_def.tasklet,
                [](struct tasklet_struct *) { DeferredRuns(); });
  hrtimer_setup(
      &g_def.hrtimer,
      [](struct hrtimer *) {
        DeferredRuns();
        return HRTIMER_NORESTART;
      },
      CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  timer_setup(
      &g_def.timer, [](struct timer_list *) { DeferredRuns(); }, 0);
  INIT_WORK(&g_def.work, [](struct work_struct *) { DeferredRuns(); });
  explore::spawn(
      [k, publish_first] {
        if (publish_first) WRITE_ONCE(g_def.data, 1);
        HandOver(k);
        if (!publish_first) WRITE_ONCE(g_def.data, 1);
      },
      1);
  explore::join();
  EXPLORE_CHECK(g_def.runs == 1);
  EXPLORE_CHECK(g_def.seen == 1);
  EXPLORE_CHECK(g_def.cpu == 1);
  EXPLORE_CHECK(g_def.hardirq == (k == Defer::kHrtimer));
  EXPLORE_CHECK(g_def.softirq == (k == Defer::kTasklet || k == Defer::kTimer));
  EXPLORE_CHECK(g_def.worker == (k == Defer::kWork));
}

constexpr Defer kDefers[] = {Defer::kTasklet, Defer::kHrtimer, Defer::kTimer,
                             Defer::kWork};

TEST(Explorer, ServicesFindPublicationAfterHandOver) {
  explore::Services services;
  for (Defer k : kDefers) {
    Options o = With(Strategy::kDfs);
    o.trace = true;
    Result r = explore::run([k] { DeferredScene(k, false); }, o);
    ASSERT_TRUE(r.failed) << static_cast<int>(k);
    EXPECT_NE(r.message.find("seen == 1"), std::string::npos) << r.message;
    // One choice: the service runs before the task's store.
    EXPECT_EQ(Deviations(r.schedule), 1) << r.schedule << "\n" << r.trace;
    printf("kind %d: found after %ld schedules, %s\n%s", static_cast<int>(k),
           r.found_at, r.schedule.c_str(), r.trace.c_str());
  }
}

TEST(Explorer, ServicesPassPublicationBeforeHandOver) {
  explore::Services services;
  for (Defer k : kDefers) {
    Options o = With(Strategy::kDfs, 100000);
    o.preemption_bound = 3;
    Result r = explore::run([k] { DeferredScene(k, true); }, o);
    EXPECT_FALSE(r.failed) << static_cast<int>(k) << ": " << r.message << " "
                           << r.schedule << "\n"
                           << r.trace;
    EXPECT_TRUE(r.exhausted);
    printf("kind %d: %ld schedules\n", static_cast<int>(k), r.schedules);
  }
}

// ksoftirqd/N waits while the CPU's bottom halves are off: a tasklet
// scheduled inside local_bh_disable() runs at local_bh_enable() or later,
// never before the store that follows it.
TEST(Explorer, ServicesHoldSoftirqsWhileBottomHalvesOff) {
  explore::Services services;
  Options o = With(Strategy::kDfs, 100000);
  o.preemption_bound = 3;
  Result r = explore::run(
      [] {
        g_def = Deferred{};
        tasklet_setup(&g_def.tasklet,
                      [](struct tasklet_struct *) { DeferredRuns(); });
        explore::spawn(
            [] {
              local_bh_disable();
              HandOver(Defer::kTasklet);
              WRITE_ONCE(g_def.data, 1);
              local_bh_enable();
            },
            2);
        explore::join();
        EXPLORE_CHECK(g_def.runs == 1);
        EXPLORE_CHECK(g_def.seen == 1);
      },
      o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule << "\n" << r.trace;
  EXPECT_TRUE(r.exhausted);
}

// A timeout is a choice like any other: wait_event_timeout() against a
// waker ends both ways across the schedules (timed out, woken), and a wait
// that nobody ends times out instead of getting stuck.
TEST(Explorer, ServicesExploreBothEndsOfATimeout) {
  explore::Services services;
  static DECLARE_WAIT_QUEUE_HEAD(wq);
  static int flag;
  static long ret;
  int timed_out = 0, woken = 0;
  Result r = explore::run(
      [&] {
        init_waitqueue_head(&wq);
        flag = 0;
        ret = -1;
        explore::spawn(
            [] { ret = wait_event_timeout(wq, READ_ONCE(flag), HZ); }, 0);
        explore::spawn(
            [] {
              WRITE_ONCE(flag, 1);
              wake_up(&wq);
            },
            1);
        explore::join();
        EXPLORE_CHECK(ret >= 0);
        if (ret == 0)
          timed_out++;
        else
          woken++;
      },
      With(Strategy::kDfs, 100000));
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule << "\n" << r.trace;
  EXPECT_TRUE(r.exhausted);
  EXPECT_GT(timed_out, 0);
  EXPECT_GT(woken, 0);

  r = explore::run(
      [] {
        init_waitqueue_head(&wq);
        flag = 0;
        ret = -1;
        explore::spawn(
            [] { ret = wait_event_timeout(wq, READ_ONCE(flag), HZ); }, 0);
        explore::join();
        EXPLORE_CHECK(ret == 0);
      },
      With(Strategy::kDfs, 1000));
  EXPECT_FALSE(r.failed) << r.message;
}

// A work item that another task flushes: the flusher sleeps until
// kworker/N has run it.
TEST(Explorer, ServicesRunWorkAFlushWaitsFor) {
  explore::Services services;
  Options o = With(Strategy::kDfs, 100000);
  Result r = explore::run(
      [] {
        g_def = Deferred{};
        INIT_WORK(&g_def.work, [](struct work_struct *) { DeferredRuns(); });
        explore::spawn(
            [] {
              WRITE_ONCE(g_def.data, 1);
              HandOver(Defer::kWork);
              flush_work(&g_def.work);
              EXPLORE_CHECK(g_def.runs == 1);
            },
            3);
        explore::join();
        EXPLORE_CHECK(g_def.runs == 1);
        EXPLORE_CHECK(g_def.worker);
      },
      o);
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule << "\n" << r.trace;
  EXPECT_TRUE(r.exhausted);
}

// ---- RCU grace periods inside the schedules ----

// An updater unpublishes an object, waits for a grace period (or not) and
// frees it; a reader in a read-side section may still hold it. Two
// updaters wait at once, so that one finds the other inside its grace
// period. Without the wait the reader sees the object freed.
void RcuUnpublishScene(bool wait) {
  static int object;
  static int *ptr;
  static int freed;
  object = 1;
  ptr = &object;
  freed = 0;
  explore::spawn(
      [] {
        rcu_read_lock();
        int *p = READ_ONCE(ptr);
        if (p) EXPLORE_CHECK(!READ_ONCE(freed));
        rcu_read_unlock();
      },
      0);
  for (int cpu = 1; cpu <= 2; cpu++)
    explore::spawn(
        [wait, cpu] {
          if (cpu == 1) WRITE_ONCE(ptr, nullptr);
          if (wait) synchronize_rcu();
          if (cpu == 1) WRITE_ONCE(freed, 1);
        },
        cpu);
  explore::join();
}

TEST(Explorer, FindsAFreeWithoutAGracePeriod) {
  Result r =
      explore::run([] { RcuUnpublishScene(false); }, With(Strategy::kDfs));
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("!READ_ONCE(freed)"), std::string::npos)
      << r.message;
}

TEST(Explorer, SynchronizeRcuWaitsForReadersInTheSchedule) {
  // Each wait spins at scheduling points: long schedules, so fewer of them.
  Result r =
      explore::run([] { RcuUnpublishScene(true); }, With(Strategy::kDfs, 1000));
  EXPECT_FALSE(r.failed) << r.message << " " << r.schedule << "\n" << r.trace;
  printf("synchronize_rcu: %ld schedules%s\n", r.schedules,
         r.exhausted ? ", bounded space exhausted" : "");
}

// ---- EXPLORE_TEST itself ----

EXPLORE_TEST(ExploreTest, SpinlockedCounterSurvives) { Increments(true); }

}  // namespace
