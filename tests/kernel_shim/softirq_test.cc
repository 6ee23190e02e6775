// SPDX-License-Identifier: GPL-2.0-only
// Softirqs: raise/run on the raising CPU, deferral while bottom halves are
// off, irq-exit processing after timer interrupts, ksoftirqd, tasklets.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/bottom_half.h>
#include <uk/linux/hrtimer.h>
#include <uk/linux/interrupt.h>

#include "testmain.h"
#include "time_testlib.h"

namespace {

using uk::testing::Recorder;
using uk::testing::VirtualClockTest;
using uk::testing::WaitFor;

Recorder *g_rec;
void net_rx_action(void) { g_rec->add("net_rx"); }
void net_tx_action(void) { g_rec->add("net_tx"); }

class SoftirqTest : public VirtualClockTest {
 protected:
  void SetUp() override {
    VirtualClockTest::SetUp();
    g_rec = &rec;
    open_softirq(NET_RX_SOFTIRQ, net_rx_action);
    open_softirq(NET_TX_SOFTIRQ, net_tx_action);
  }
  void TearDown() override {
    for (unsigned int c = 0; c < nr_cpu_ids; c++) uk::softirq_run_pending(c);
    VirtualClockTest::TearDown();
    open_softirq(NET_RX_SOFTIRQ, nullptr);
    open_softirq(NET_TX_SOFTIRQ, nullptr);
  }
  Recorder rec;
};

TEST_F(SoftirqTest, RaisedFromTaskStaysPendingUntilRun) {
  uk::pin_thread_to_cpu(1);
  unsigned int before = uk::kstat_softirqs_cpu(NET_RX_SOFTIRQ, 1);
  raise_softirq(NET_RX_SOFTIRQ);
  EXPECT_EQ(rec.size(), 0u);
  EXPECT_EQ(uk::softirq_pending(1), 1u << NET_RX_SOFTIRQ);
  EXPECT_EQ(local_softirq_pending(), 1u << NET_RX_SOFTIRQ);
  uk::pin_thread_to_cpu(-1);
  uk::softirq_run_pending(0);  // another CPU: nothing
  EXPECT_EQ(rec.size(), 0u);
  uk::softirq_run_pending(1);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cpu, 1);
  EXPECT_TRUE(ev[0].softirq);
  EXPECT_FALSE(ev[0].hardirq);
  EXPECT_EQ(uk::softirq_pending(1), 0u);
  EXPECT_EQ(uk::kstat_softirqs_cpu(NET_RX_SOFTIRQ, 1), before + 1);
}

TEST_F(SoftirqTest, RunsInNumberOrderOncePerRaise) {
  uk::pin_thread_to_cpu(0);
  raise_softirq(NET_RX_SOFTIRQ);
  raise_softirq(NET_TX_SOFTIRQ);
  raise_softirq(NET_RX_SOFTIRQ);
  uk::softirq_run_pending(0);
  EXPECT_EQ(rec.names(), (std::vector<std::string>{"net_tx", "net_rx"}));
}

TEST_F(SoftirqTest, DeferredWhileBottomHalvesDisabled) {
  uk::pin_thread_to_cpu(2);
  local_bh_disable();
  raise_softirq(NET_RX_SOFTIRQ);
  EXPECT_EQ(rec.size(), 0u);
  // A run requested from this thread is deferred too.
  uk::softirq_run_pending(2);
  EXPECT_EQ(rec.size(), 0u);
  local_bh_enable();
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cpu, 2);
  EXPECT_TRUE(ev[0].softirq);
}

struct RaiseTimer {
  struct hrtimer timer;
  const char *name;
  bool raise;
};

enum hrtimer_restart raise_fn(struct hrtimer *t) {
  RaiseTimer *r = container_of(t, RaiseTimer, timer);
  g_rec->add(r->name);
  if (r->raise) raise_softirq_irqoff(NET_RX_SOFTIRQ);
  return HRTIMER_NORESTART;
}

TEST_F(SoftirqTest, RaisedInTimerHardirqRunsAtIrqExit) {
  RaiseTimer a{{}, "a", true}, b{{}, "b", false};
  uk::pin_thread_to_cpu(3);
  hrtimer_setup(&a.timer, raise_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_setup(&b.timer, raise_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  hrtimer_start(&a.timer, 100, HRTIMER_MODE_REL);
  hrtimer_start(&b.timer, 100, HRTIMER_MODE_REL);
  uk::pin_thread_to_cpu(-1);
  uk::virtual_clock_advance(100);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].what, "a");
  EXPECT_TRUE(ev[0].hardirq);
  EXPECT_EQ(ev[1].what, "net_rx");
  EXPECT_TRUE(ev[1].softirq);
  EXPECT_EQ(ev[1].cpu, 3);
  EXPECT_EQ(ev[2].what, "b");
}

TEST_F(SoftirqTest, VirtualAdvanceRunsPendingSoftirqs) {
  uk::pin_thread_to_cpu(1);
  raise_softirq(NET_TX_SOFTIRQ);
  uk::pin_thread_to_cpu(-1);
  EXPECT_EQ(rec.size(), 0u);
  uk::virtual_clock_advance(0);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.events()[0].cpu, 1);
}

TEST_F(SoftirqTest, RaisedInSoftirqRestarts) {
  static int depth;
  depth = 0;
  open_softirq(NET_TX_SOFTIRQ, [] {
    g_rec->add("tx");
    if (++depth < 3) raise_softirq_irqoff(NET_TX_SOFTIRQ);
  });
  uk::pin_thread_to_cpu(0);
  raise_softirq(NET_TX_SOFTIRQ);
  uk::softirq_run_pending(0);
  EXPECT_EQ(rec.size(), 3u);
  EXPECT_EQ(uk::softirq_pending(0), 0u);
}

// An IPI sent from CPU 0's softirq runs in CPU 1's hardirq context, which
// is not serving a softirq: what it raises on CPU 1 runs at that hardirq's
// exit instead of being left to CPU 0's __do_softirq() restart (which only
// looks at CPU 0). blk-mq's remote completion is such an IPI.
void raise_rx_ipi(void *info) {
  *static_cast<bool *>(info) = in_serving_softirq();
  raise_softirq_irqoff(NET_RX_SOFTIRQ);
}

TEST_F(SoftirqTest, RaisedInIpiFromAnotherCpusSoftirqRunsThere) {
  bool ipi_saw_serving = true;
  int sender_cpu = -1;
  uk::run_in_softirq(0, [&] {
    sender_cpu = smp_processor_id();
    ASSERT_EQ(smp_call_function_single(1, raise_rx_ipi, &ipi_saw_serving, 1),
              0);
    EXPECT_TRUE(in_serving_softirq());
    EXPECT_EQ(smp_processor_id(), 0);
  });
  EXPECT_EQ(sender_cpu, 0);
  EXPECT_FALSE(ipi_saw_serving);
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 1u) << "softirq raised on CPU 1 was left pending";
  EXPECT_EQ(ev[0].what, "net_rx");
  EXPECT_EQ(ev[0].cpu, 1);
  EXPECT_TRUE(ev[0].softirq);
  EXPECT_EQ(uk::softirq_pending(1), 0u);
}

struct TaskletProbe {
  struct tasklet_struct t;
  int runs = 0;
  int cpu = -1;
};

void tasklet_fn(struct tasklet_struct *t) {
  TaskletProbe *p = from_tasklet(p, t, t);
  p->runs++;
  p->cpu = smp_processor_id();
  EXPECT_TRUE(in_serving_softirq());
}

TEST_F(SoftirqTest, Tasklets) {
  TaskletProbe p;
  tasklet_setup(&p.t, tasklet_fn);
  uk::pin_thread_to_cpu(1);
  tasklet_schedule(&p.t);
  tasklet_schedule(&p.t);  // already scheduled: once
  EXPECT_EQ(p.runs, 0);
  uk::softirq_run_pending(1);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(p.cpu, 1);

  tasklet_disable(&p.t);
  tasklet_schedule(&p.t);
  uk::softirq_run_pending(1);
  EXPECT_EQ(p.runs, 1);
  tasklet_enable(&p.t);
  uk::softirq_run_pending(1);
  EXPECT_EQ(p.runs, 2);
  tasklet_kill(&p.t);

  tasklet_hi_schedule(&p.t);
  uk::softirq_run_pending(1);
  EXPECT_EQ(p.runs, 3);
  tasklet_kill(&p.t);
}

// ksoftirqd (default mode): a softirq raised from task context runs soon,
// on the raising CPU, in softirq context.
std::atomic<int> threaded_runs{0};
std::atomic<int> threaded_cpu{-1};
std::atomic<bool> threaded_ctx{false};

TEST(SoftirqThreadsTest, KsoftirqdRunsTaskRaisedSoftirqs) {
  ASSERT_TRUE(uk::softirq_threads_enabled());
  open_softirq(NET_RX_SOFTIRQ, [] {
    threaded_cpu = smp_processor_id();
    threaded_ctx = in_serving_softirq() != 0;
    threaded_runs++;
  });
  uk::pin_thread_to_cpu(nr_cpu_ids - 1);
  raise_softirq(NET_RX_SOFTIRQ);
  uk::pin_thread_to_cpu(-1);
  ASSERT_TRUE(WaitFor([] { return threaded_runs.load() == 1; }));
  EXPECT_EQ(threaded_cpu.load(), static_cast<int>(nr_cpu_ids - 1));
  EXPECT_TRUE(threaded_ctx.load());
  open_softirq(NET_RX_SOFTIRQ, nullptr);
}

TEST(SoftirqThreadsTest, ConcurrentRaisesAllRun) {
  static std::atomic<int> runs{0};
  static std::atomic<int> raised{0};
  open_softirq(NET_TX_SOFTIRQ, [] { runs++; });
  const unsigned n = uk::testing::StressThreads();
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < n; i++) {
    ts.emplace_back([&] {
      for (int it = 0; it < 500; it++) {
        raise_softirq(NET_TX_SOFTIRQ);
        raised++;
      }
    });
  }
  for (auto &t : ts) t.join();
  // Every raise is followed by at least one run: after the last raise the
  // pending bits drain. __do_softirq() takes the bits before it calls the
  // handler, so wait for the run as well as for the drain.
  ASSERT_TRUE(WaitFor([] {
    if (runs.load() == 0) return false;
    for (unsigned int c = 0; c < nr_cpu_ids; c++)
      if (uk::softirq_pending(c)) return false;
    return true;
  }));
  open_softirq(NET_TX_SOFTIRQ, nullptr);
}

}  // namespace
