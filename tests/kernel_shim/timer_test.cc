// SPDX-License-Identifier: GPL-2.0-only
// timer_list: jiffies expiry, softirq context on the arming CPU, mod_timer,
// del_timer(_sync), shutdown, ordering against hrtimers.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/hrtimer.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/timer.h>

#include "testmain.h"
#include "time_testlib.h"

namespace {

using uk::testing::Recorder;
using uk::testing::VirtualClockTest;
using uk::testing::WaitFor;

using NamedTimer = uk::testing::NamedTimer<struct timer_list>;

void record_fn(struct timer_list *t) {
  NamedTimer *nt = from_timer(nt, t, timer);
  nt->jiffies_seen = jiffies;
  nt->rec->add(nt->name);
}

class TimerTest : public VirtualClockTest {};

TEST_F(TimerTest, FiresWhenJiffiesReachExpiresInSoftirqOnArmingCpu) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  uk::pin_thread_to_cpu(2);
  timer_setup(&t.timer, record_fn, 0);
  // Align to a jiffy boundary first.
  uk::virtual_clock_advance(TICK_NSEC - (uk::clock_now_ns() % TICK_NSEC));
  unsigned long expires = jiffies + 2;
  EXPECT_EQ(mod_timer(&t.timer, expires), 0);
  EXPECT_TRUE(timer_pending(&t.timer));
  uk::pin_thread_to_cpu(-1);
  uk::virtual_clock_advance(2 * TICK_NSEC - 1);
  EXPECT_EQ(rec.size(), 0u);
  uk::virtual_clock_advance(1);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cpu, 2);
  EXPECT_TRUE(ev[0].softirq);
  EXPECT_FALSE(ev[0].hardirq);
  EXPECT_EQ(t.jiffies_seen, expires);
  EXPECT_FALSE(timer_pending(&t.timer));
}

TEST_F(TimerTest, ModTimerReturnsPendingAndMovesDeadline) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  timer_setup(&t.timer, record_fn, 0);
  unsigned long j = jiffies;
  EXPECT_EQ(mod_timer(&t.timer, j + 10), 0);
  EXPECT_EQ(mod_timer(&t.timer, j + 10), 1);  // same expiry
  EXPECT_EQ(mod_timer(&t.timer, j + 2), 1);   // earlier
  uk::virtual_clock_advance(3 * TICK_NSEC);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(t.jiffies_seen, j + 2);
  EXPECT_EQ(mod_timer(&t.timer, j + 100), 0);  // fired: not pending
  EXPECT_EQ(mod_timer(&t.timer, j + 200), 1);  // later
  uk::virtual_clock_advance(100 * TICK_NSEC);
  EXPECT_EQ(rec.size(), 1u);
  uk::virtual_clock_advance(200 * TICK_NSEC);
  EXPECT_EQ(rec.size(), 2u);
  EXPECT_EQ(t.jiffies_seen, j + 200);
}

TEST_F(TimerTest, ModTimerPendingAndTimerReduce) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  timer_setup(&t.timer, record_fn, 0);
  unsigned long j = jiffies;
  EXPECT_EQ(mod_timer_pending(&t.timer, j + 5), 0);
  EXPECT_FALSE(timer_pending(&t.timer));
  EXPECT_EQ(mod_timer(&t.timer, j + 5), 0);
  EXPECT_EQ(timer_reduce(&t.timer, j + 8), 1);  // later: unchanged
  EXPECT_EQ(t.timer.expires, j + 5);
  EXPECT_EQ(timer_reduce(&t.timer, j + 3), 1);
  EXPECT_EQ(t.timer.expires, j + 3);
  EXPECT_EQ(mod_timer_pending(&t.timer, j + 4), 1);
  EXPECT_EQ(t.timer.expires, j + 4);
  EXPECT_EQ(timer_delete_sync(&t.timer), 1);
}

TEST_F(TimerTest, DelTimer) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  timer_setup(&t.timer, record_fn, 0);
  EXPECT_EQ(del_timer(&t.timer), 0);
  t.timer.expires = jiffies + 1;
  add_timer(&t.timer);
  EXPECT_EQ(del_timer(&t.timer), 1);
  EXPECT_FALSE(timer_pending(&t.timer));
  uk::virtual_clock_advance(10 * TICK_NSEC);
  EXPECT_EQ(rec.size(), 0u);
  EXPECT_EQ(del_timer_sync(&t.timer), 0);
}

TEST_F(TimerTest, AddTimerOnTargetsCpu) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  timer_setup(&t.timer, record_fn,
              TIMER_PINNED | TIMER_DEFERRABLE | TIMER_IRQSAFE);
  t.timer.expires = jiffies + 1;
  add_timer_on(&t.timer, 3);
  uk::virtual_clock_advance(2 * TICK_NSEC);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.events()[0].cpu, 3);
}

TEST_F(TimerTest, PastExpiryFiresAtNextAdvance) {
  Recorder rec;
  NamedTimer t{};
  t.rec = &rec;
  t.name = "t";
  timer_setup(&t.timer, record_fn, 0);
  mod_timer(&t.timer, jiffies - 5);
  uk::virtual_clock_advance(0);
  EXPECT_EQ(rec.size(), 1u);
}

TEST_F(TimerTest, OrderedWithHrtimersTiesByArmingOrder) {
  Recorder rec;
  NamedTimer tl{};
  tl.rec = &rec;
  tl.name = "timer";
  struct H {
    struct hrtimer timer;
    Recorder *rec;
    const char *name;
  } h[3] = {{{}, &rec, "hr3ms"}, {{}, &rec, "hr4ms"}, {{}, &rec, "hr5ms"}};
  auto fn = [](struct hrtimer *t) {
    H *x = container_of(t, H, timer);
    x->rec->add(x->name);
    return HRTIMER_NORESTART;
  };
  // Align to a jiffy boundary so jiffies+1 is exactly 4 ms away.
  uk::virtual_clock_advance(TICK_NSEC - (uk::clock_now_ns() % TICK_NSEC));
  u64 base = uk::clock_now_ns();
  timer_setup(&tl.timer, record_fn, 0);
  for (auto &x : h)
    hrtimer_setup(&x.timer, fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
  hrtimer_start(&h[2].timer, base + 5000000, HRTIMER_MODE_ABS);
  mod_timer(&tl.timer, jiffies + 1);  // 4 ms, armed first
  hrtimer_start(&h[1].timer, base + 4000000,
                HRTIMER_MODE_ABS);  // 4 ms, armed second
  hrtimer_start(&h[0].timer, base + 3000000, HRTIMER_MODE_ABS);
  uk::virtual_clock_advance(10000000);
  EXPECT_EQ(rec.names(),
            (std::vector<std::string>{"hr3ms", "timer", "hr4ms", "hr5ms"}));
}

struct SelfRearm {
  struct timer_list timer;
  int fired = 0;
};

void self_rearm_fn(struct timer_list *t) {
  SelfRearm *s = from_timer(s, t, timer);
  if (++s->fired < 5) mod_timer(t, jiffies + 1);
}

TEST_F(TimerTest, CallbackReArms) {
  SelfRearm s;
  timer_setup(&s.timer, self_rearm_fn, 0);
  mod_timer(&s.timer, jiffies + 1);
  uk::virtual_clock_advance(100 * TICK_NSEC);
  EXPECT_EQ(s.fired, 5);
  EXPECT_FALSE(timer_pending(&s.timer));
}

TEST_F(TimerTest, ShutdownIgnoresReArm) {
  SelfRearm s;
  timer_setup(&s.timer, self_rearm_fn, 0);
  mod_timer(&s.timer, jiffies + 1);
  EXPECT_EQ(timer_shutdown_sync(&s.timer), 1);
  EXPECT_EQ(mod_timer(&s.timer, jiffies + 1), 0);
  EXPECT_FALSE(timer_pending(&s.timer));
  uk::virtual_clock_advance(10 * TICK_NSEC);
  EXPECT_EQ(s.fired, 0);
}

struct BlockingTimer {
  struct timer_list timer;
  std::atomic<bool> entered{false}, delete_called{false}, done{false};
};

void blocking_fn(struct timer_list *t) {
  BlockingTimer *b = from_timer(b, t, timer);
  b->entered.store(true);
  EXPECT_TRUE(WaitFor([&] { return b->delete_called.load(); }));
  u64 until = uk::host_clock_ns() + 20000000;  // widen the window: 20 ms
  while (uk::host_clock_ns() < until) std::this_thread::yield();
  b->done.store(true);
}

TEST_F(TimerTest, DelTimerSyncWaitsForRunningCallback) {
  BlockingTimer b;
  timer_setup(&b.timer, blocking_fn, 0);
  mod_timer(&b.timer, jiffies + 1);
  std::thread advancer([] { uk::virtual_clock_advance(2 * TICK_NSEC); });
  ASSERT_TRUE(WaitFor([&] { return b.entered.load(); }));
  EXPECT_EQ(try_to_del_timer_sync(&b.timer), -1);
  b.delete_called.store(true);
  EXPECT_EQ(del_timer_sync(&b.timer), 0);
  EXPECT_TRUE(b.done.load());
  advancer.join();
}

TEST_F(TimerTest, StaticTimer) {
  static std::atomic<int> n{0};
  static DEFINE_TIMER(st, [](struct timer_list *) { n++; });
  st.expires = jiffies + 1;
  add_timer(&st);
  uk::virtual_clock_advance(TICK_NSEC * 2);
  EXPECT_EQ(n.load(), 1);
}

// Host clock: a 1-jiffy timer fires.
TEST(TimerHostTest, OneJiffyTimerFires) {
  ASSERT_FALSE(uk::clock_is_virtual());
  static std::atomic<int> n{0};
  struct timer_list t;
  timer_setup(
      &t, [](struct timer_list *) { n++; }, 0);
  unsigned long j = jiffies;
  mod_timer(&t, j + 1);
  ASSERT_TRUE(WaitFor([] { return n.load() == 1; }));
  EXPECT_TRUE(time_after_eq(jiffies, j + 1));
  EXPECT_EQ(del_timer_sync(&t), 0);
}

TEST(TimerHostTest, ConcurrentModDelStress) {
  const unsigned nthreads = uk::testing::StressThreads();
  static std::atomic<int> fired{0};
  struct timer_list shared[4];
  for (auto &t : shared)
    timer_setup(
        &t, [](struct timer_list *) { fired++; }, 0);
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < nthreads; i++) {
    ts.emplace_back([&, i] {
      for (int it = 0; it < 2000; it++) {
        struct timer_list *t = &shared[(i + it) % 4];
        if (it % 3)
          mod_timer(t, jiffies + (it % 3));
        else
          EXPECT_GE(del_timer_sync(t), 0);
      }
    });
  }
  for (auto &t : ts) t.join();
  for (auto &t : shared) timer_shutdown_sync(&t);
  for (auto &t : shared) EXPECT_FALSE(timer_pending(&t));
}

}  // namespace
