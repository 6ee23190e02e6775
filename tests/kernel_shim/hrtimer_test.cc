// SPDX-License-Identifier: GPL-2.0-only
// hrtimers: deadline order, REL/ABS, restart/forward, cancel semantics,
// callback context and CPU, sleepers; deterministic on the virtual clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <uk/linux/hrtimer.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>

#include "testmain.h"
#include "time_testlib.h"

namespace {

using uk::testing::Recorder;
using uk::testing::VirtualClockTest;
using uk::testing::WaitFor;

using NamedTimer = uk::testing::NamedTimer<struct hrtimer>;

enum hrtimer_restart record_fn(struct hrtimer *t) {
  NamedTimer *nt = container_of(t, NamedTimer, timer);
  nt->rec->add(nt->name);
  return HRTIMER_NORESTART;
}

class HrtimerTest : public VirtualClockTest {};

TEST_F(HrtimerTest, FiresInDeadlineOrderTiesInArmingOrder) {
  Recorder rec;
  NamedTimer t[5];
  const char *names[5] = {"300", "100", "150a", "150b", "200"};
  const s64 rel[5] = {300, 100, 150, 150, 200};
  for (int i = 0; i < 5; i++) {
    t[i].rec = &rec;
    t[i].name = names[i];
    hrtimer_setup(&t[i].timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
    hrtimer_start(&t[i].timer, rel[i], HRTIMER_MODE_REL);
  }
  uk::virtual_clock_advance(99);
  EXPECT_EQ(rec.size(), 0u);
  uk::virtual_clock_advance(60);  // now = start + 159
  EXPECT_EQ(rec.names(), (std::vector<std::string>{"100", "150a", "150b"}));
  EXPECT_TRUE(hrtimer_is_queued(&t[0].timer));
  EXPECT_FALSE(hrtimer_is_queued(&t[1].timer));
  uk::virtual_clock_advance(1000);
  EXPECT_EQ(rec.names(),
            (std::vector<std::string>{"100", "150a", "150b", "200", "300"}));
  // Each callback saw the clock at its own deadline.
  auto ev = rec.events();
  EXPECT_EQ(ev[0].now, kStart + 100);
  EXPECT_EQ(ev[3].now, kStart + 200);
  EXPECT_EQ(uk::clock_now_ns(), kStart + 1159);
}

TEST_F(HrtimerTest, ManyTimersFireSorted) {
  Recorder rec;
  const int n = 500;
  std::vector<NamedTimer> t(n);
  std::mt19937 rng(42);
  for (int i = 0; i < n; i++) {
    t[i].rec = &rec;
    t[i].name = std::to_string(i);
    hrtimer_setup(&t[i].timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
    hrtimer_start(&t[i].timer, rng() % 100000, HRTIMER_MODE_REL);
  }
  // Cancel every third one.
  for (int i = 0; i < n; i += 3)
    EXPECT_EQ(hrtimer_try_to_cancel(&t[i].timer), 1);
  uk::virtual_clock_advance(100000);
  auto ev = rec.events();
  EXPECT_EQ(ev.size(), static_cast<size_t>(n - (n + 2) / 3));
  for (size_t i = 1; i < ev.size(); i++) EXPECT_LE(ev[i - 1].now, ev[i].now);
  for (auto &e : ev) EXPECT_NE(std::stoi(e.what) % 3, 0);
}

TEST_F(HrtimerTest, RelAndAbsAgree) {
  Recorder rec;
  NamedTimer a{}, r{};
  a.rec = r.rec = &rec;
  a.name = "abs";
  r.name = "rel";
  hrtimer_setup(&a.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
  hrtimer_setup(&r.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  uk::virtual_clock_advance(1000);
  hrtimer_start(&a.timer, ktime_add_ns(ktime_get(), 500), HRTIMER_MODE_ABS);
  hrtimer_start(&r.timer, 500, HRTIMER_MODE_REL);
  EXPECT_EQ(hrtimer_get_expires(&a.timer), hrtimer_get_expires(&r.timer));
  EXPECT_EQ(hrtimer_get_expires(&a.timer), static_cast<s64>(kStart + 1500));
  uk::virtual_clock_advance(200);
  EXPECT_EQ(hrtimer_get_remaining(&r.timer), 300);
  uk::virtual_clock_advance(300);
  EXPECT_EQ(rec.names(), (std::vector<std::string>{"abs", "rel"}));
}

TEST_F(HrtimerTest, RangeFiresAtHardExpiry) {
  Recorder rec;
  NamedTimer a{};
  a.rec = &rec;
  a.name = "a";
  hrtimer_setup(&a.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start_range_ns(&a.timer, 100, 50, HRTIMER_MODE_REL);
  EXPECT_EQ(hrtimer_get_softexpires(&a.timer), static_cast<s64>(kStart + 100));
  EXPECT_EQ(hrtimer_get_expires(&a.timer), static_cast<s64>(kStart + 150));
  uk::virtual_clock_advance(149);
  EXPECT_EQ(rec.size(), 0u);
  uk::virtual_clock_advance(1);
  EXPECT_EQ(rec.size(), 1u);
}

TEST_F(HrtimerTest, HardCallbackRunsInHardirqOnArmingCpu) {
  Recorder rec;
  NamedTimer t[4];
  std::vector<std::thread> armers;
  for (int cpu = 0; cpu < 4; cpu++) {
    t[cpu].rec = &rec;
    t[cpu].name = std::to_string(cpu);
    armers.emplace_back([&, cpu] {
      uk::pin_thread_to_cpu(cpu);
      hrtimer_setup(&t[cpu].timer, record_fn, CLOCK_MONOTONIC,
                    HRTIMER_MODE_REL_HARD);
      hrtimer_start(&t[cpu].timer, 10 * (4 - cpu), HRTIMER_MODE_REL_HARD);
    });
  }
  for (auto &th : armers) th.join();
  uk::virtual_clock_advance(100);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 4u);
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(ev[i].what, std::to_string(3 - i));
    EXPECT_EQ(ev[i].cpu, 3 - i);
    EXPECT_TRUE(ev[i].hardirq);
    EXPECT_FALSE(ev[i].softirq);
  }
}

TEST_F(HrtimerTest, SoftCallbackRunsInSoftirq) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "soft";
  uk::pin_thread_to_cpu(2);
  hrtimer_setup(&t.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
  hrtimer_start(&t.timer, 10, HRTIMER_MODE_REL_SOFT);
  uk::pin_thread_to_cpu(-1);
  uk::virtual_clock_advance(10);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cpu, 2);
  EXPECT_FALSE(ev[0].hardirq);
  EXPECT_TRUE(ev[0].softirq);
}

TEST_F(HrtimerTest, RestartMovesToArmingCpuUnlessRunning) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  uk::pin_thread_to_cpu(0);
  hrtimer_setup(&t.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&t.timer, 10, HRTIMER_MODE_REL);
  std::thread([&] {
    uk::pin_thread_to_cpu(3);
    hrtimer_start(&t.timer, 20, HRTIMER_MODE_REL);  // moves to CPU 3
  }).join();
  uk::virtual_clock_advance(100);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cpu, 3);
  EXPECT_EQ(ev[0].now, kStart + 20);
}

struct PeriodicTimer {
  struct hrtimer timer;
  int fired = 0;
  int limit = 0;
  std::vector<u64> at;
};

enum hrtimer_restart periodic_fn(struct hrtimer *t) {
  PeriodicTimer *p = container_of(t, PeriodicTimer, timer);
  p->at.push_back(ktime_get());
  if (++p->fired >= p->limit) return HRTIMER_NORESTART;
  hrtimer_forward_now(t, 100);
  return HRTIMER_RESTART;
}

TEST_F(HrtimerTest, RestartWithForwardFiresAgainInTheSameAdvance) {
  PeriodicTimer p;
  p.limit = 5;
  hrtimer_setup(&p.timer, periodic_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&p.timer, 100, HRTIMER_MODE_REL);
  uk::virtual_clock_advance(350);
  EXPECT_EQ(p.fired, 3);
  EXPECT_EQ(p.at, (std::vector<u64>{kStart + 100, kStart + 200, kStart + 300}));
  EXPECT_TRUE(hrtimer_is_queued(&p.timer));
  uk::virtual_clock_advance(10000);
  EXPECT_EQ(p.fired, 5);
  EXPECT_FALSE(hrtimer_active(&p.timer));
}

TEST_F(HrtimerTest, ForwardCountsOverruns) {
  struct hrtimer t;
  hrtimer_setup(&t, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
  hrtimer_set_expires(&t, 100);
  EXPECT_EQ(hrtimer_forward(&t, 50, 100), 0u);  // not yet expired
  EXPECT_EQ(hrtimer_forward(&t, 1000, 100), 10u);
  EXPECT_EQ(hrtimer_get_expires(&t), 1100);
  EXPECT_EQ(hrtimer_forward(&t, 1150, 100), 1u);
  EXPECT_EQ(hrtimer_get_expires(&t), 1200);
}

struct CancelProbe {
  struct hrtimer timer;
  int try_ret = 99;
  bool running = false, active = false, queued = true;
};

enum hrtimer_restart self_cancel_fn(struct hrtimer *t) {
  CancelProbe *p = container_of(t, CancelProbe, timer);
  p->try_ret = hrtimer_try_to_cancel(t);
  p->running = hrtimer_callback_running(t);
  p->active = hrtimer_active(t);
  p->queued = hrtimer_is_queued(t);
  return HRTIMER_NORESTART;
}

TEST_F(HrtimerTest, TryToCancelReturnValues) {
  CancelProbe p;
  hrtimer_setup(&p.timer, self_cancel_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  EXPECT_EQ(hrtimer_try_to_cancel(&p.timer), 0);  // never started
  EXPECT_FALSE(hrtimer_active(&p.timer));
  hrtimer_start(&p.timer, 100, HRTIMER_MODE_REL);
  EXPECT_TRUE(hrtimer_active(&p.timer));
  EXPECT_EQ(hrtimer_try_to_cancel(&p.timer), 1);  // queued: removed
  EXPECT_EQ(hrtimer_try_to_cancel(&p.timer), 0);
  uk::virtual_clock_advance(1000);
  EXPECT_EQ(p.try_ret, 99);  // never ran
  hrtimer_start(&p.timer, 100, HRTIMER_MODE_REL);
  uk::virtual_clock_advance(100);
  EXPECT_EQ(p.try_ret, -1);  // from inside its own callback
  EXPECT_TRUE(p.running);
  EXPECT_TRUE(p.active);
  EXPECT_FALSE(p.queued);
  EXPECT_FALSE(hrtimer_callback_running(&p.timer));
  EXPECT_EQ(hrtimer_cancel(&p.timer), 0);
}

struct RearmTimer {
  struct hrtimer timer;
  int fired = 0;
};

enum hrtimer_restart rearm_fn(struct hrtimer *t) {
  RearmTimer *r = container_of(t, RearmTimer, timer);
  if (++r->fired < 3) hrtimer_start(t, 10, HRTIMER_MODE_REL);
  return HRTIMER_NORESTART;
}

TEST_F(HrtimerTest, CallbackReArmsWithHrtimerStart) {
  RearmTimer r;
  hrtimer_setup(&r.timer, rearm_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&r.timer, 10, HRTIMER_MODE_REL);
  uk::virtual_clock_advance(25);
  EXPECT_EQ(r.fired, 2);
  uk::virtual_clock_advance(5);
  EXPECT_EQ(r.fired, 3);
  EXPECT_FALSE(hrtimer_active(&r.timer));
}

TEST_F(HrtimerTest, ExpiredAtStartFiresAtNextAdvance) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "past";
  hrtimer_setup(&t.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
  hrtimer_start(&t.timer, 5, HRTIMER_MODE_ABS);
  EXPECT_EQ(rec.size(), 0u);
  uk::virtual_clock_advance(0);
  EXPECT_EQ(rec.size(), 1u);
}

TEST_F(HrtimerTest, MaskedCpuDefersItsTimers) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  uk::pin_thread_to_cpu(1);
  hrtimer_setup(&t.timer, record_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&t.timer, 10, HRTIMER_MODE_REL);
  local_irq_disable();
  uk::virtual_clock_advance(100);
  EXPECT_EQ(rec.size(), 0u);
  EXPECT_TRUE(hrtimer_is_queued(&t.timer));
  local_irq_enable();
  uk::virtual_clock_advance(0);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.events()[0].cpu, 1);
}

// hrtimer_cancel() of a running callback returns only after it finished:
// the callback holds until the canceller has announced itself, then works
// a little longer; the canceller must observe the callback's completion.
struct BlockingTimer {
  struct hrtimer timer;
  std::atomic<bool> entered{false}, cancel_called{false}, done{false};
};

enum hrtimer_restart blocking_fn(struct hrtimer *t) {
  BlockingTimer *b = container_of(t, BlockingTimer, timer);
  b->entered.store(true);
  EXPECT_TRUE(WaitFor([&] { return b->cancel_called.load(); }));
  u64 until = uk::host_clock_ns() + 20000000;  // widen the window: 20 ms
  while (uk::host_clock_ns() < until) std::this_thread::yield();
  b->done.store(true);
  return HRTIMER_NORESTART;
}

TEST_F(HrtimerTest, CancelWaitsForRunningCallback) {
  BlockingTimer b;
  hrtimer_setup(&b.timer, blocking_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&b.timer, 10, HRTIMER_MODE_REL);
  std::thread advancer([] { uk::virtual_clock_advance(10); });
  ASSERT_TRUE(WaitFor([&] { return b.entered.load(); }));
  EXPECT_EQ(hrtimer_try_to_cancel(&b.timer), -1);
  b.cancel_called.store(true);
  EXPECT_EQ(hrtimer_cancel(&b.timer), 0);
  EXPECT_TRUE(b.done.load());
  advancer.join();
}

TEST_F(HrtimerTest, SleeperWakesTask) {
  std::atomic<bool> woke{false};
  std::atomic<int> ret{99};
  std::thread sleeper([&] {
    ktime_t exp = 1000;
    set_current_state(TASK_UNINTERRUPTIBLE);
    ret = schedule_hrtimeout(&exp, HRTIMER_MODE_REL);
    woke = true;
  });
  // Advance until the sleeper's timer has fired (bounded in host time).
  EXPECT_TRUE(WaitFor([&] {
    if (woke.load()) return true;
    uk::virtual_clock_advance(100);
    return false;
  }));
  sleeper.join();
  EXPECT_EQ(ret.load(), 0);
  EXPECT_GE(uk::clock_now_ns(), kStart + 1000);
}

TEST_F(HrtimerTest, SleeperOnStackApi) {
  struct hrtimer_sleeper sl;
  hrtimer_setup_sleeper_on_stack(&sl, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  EXPECT_EQ(sl.task, static_cast<struct task_struct *>(current));
  hrtimer_set_expires(&sl.timer, 50);
  hrtimer_sleeper_start_expires(&sl, HRTIMER_MODE_REL);
  uk::virtual_clock_advance(50);
  EXPECT_EQ(sl.task, nullptr);  // the callback woke us and cleared it
  __set_current_state(TASK_RUNNING);
  destroy_hrtimer_on_stack(&sl.timer);
}

// Host clock: a 1 ms timer fires (wait for the event, not for time).
enum hrtimer_restart flag_fn(struct hrtimer *t);
std::atomic<int> host_flag{0};
std::atomic<int> host_flag_cpu{-1};
std::atomic<bool> host_flag_hardirq{false};
enum hrtimer_restart flag_fn(struct hrtimer *t) {
  host_flag_cpu = smp_processor_id();
  host_flag_hardirq = in_irq() != 0;
  host_flag.fetch_add(1);
  return HRTIMER_NORESTART;
}

TEST(HrtimerHostTest, OneMillisecondTimerFires) {
  ASSERT_FALSE(uk::clock_is_virtual());
  struct hrtimer t;
  uk::pin_thread_to_cpu(0);
  hrtimer_setup(&t, flag_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  u64 start = uk::host_clock_ns();
  hrtimer_start(&t, ms_to_ktime(1), HRTIMER_MODE_REL);
  uk::pin_thread_to_cpu(-1);
  ASSERT_TRUE(WaitFor([] { return host_flag.load() == 1; }));
  EXPECT_GE(uk::host_clock_ns() - start, 1000000u);
  EXPECT_EQ(host_flag_cpu.load(), 0);
  EXPECT_TRUE(host_flag_hardirq.load());
  EXPECT_EQ(hrtimer_cancel(&t), 0);
  // Again, now that CPU 0's timer thread is idle with nothing queued: the
  // new timer must wake it.
  uk::pin_thread_to_cpu(0);
  hrtimer_start(&t, ms_to_ktime(1), HRTIMER_MODE_REL);
  uk::pin_thread_to_cpu(-1);
  ASSERT_TRUE(WaitFor([] { return host_flag.load() == 2; }));
  // And a later timer armed behind an earlier one on the same CPU.
  struct hrtimer t2;
  hrtimer_setup(&t2, flag_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  uk::pin_thread_to_cpu(0);
  hrtimer_start(&t, ms_to_ktime(200), HRTIMER_MODE_REL);
  hrtimer_start(&t2, ms_to_ktime(1), HRTIMER_MODE_REL);
  uk::pin_thread_to_cpu(-1);
  ASSERT_TRUE(WaitFor([] { return host_flag.load() == 3; }));
  EXPECT_EQ(hrtimer_cancel(&t), 1);
}

// Host clock: threads start and cancel timers concurrently (for TSan).
TEST(HrtimerHostTest, ConcurrentStartCancelStress) {
  const unsigned nthreads = uk::testing::StressThreads();
  std::atomic<int> fired{0};
  struct CountTimer {
    struct hrtimer timer;
    std::atomic<int> *fired;
  };
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < nthreads; i++) {
    ts.emplace_back([&, i] {
      CountTimer ct[8];
      std::mt19937 rng(i);
      for (auto &c : ct) {
        c.fired = &fired;
        hrtimer_setup(
            &c.timer,
            [](struct hrtimer *t) {
              container_of(t, CountTimer, timer)->fired->fetch_add(1);
              return HRTIMER_NORESTART;
            },
            CLOCK_MONOTONIC, HRTIMER_MODE_REL);
      }
      for (int it = 0; it < 2000; it++) {
        CountTimer &c = ct[rng() % 8];
        if (rng() % 2)
          hrtimer_start(&c.timer, rng() % 20000, HRTIMER_MODE_REL);
        else
          EXPECT_GE(hrtimer_cancel(&c.timer), 0);
      }
      for (auto &c : ct) hrtimer_cancel(&c.timer);
      for (auto &c : ct) EXPECT_FALSE(hrtimer_active(&c.timer));
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_GE(fired.load(), 0);
}

}  // namespace
