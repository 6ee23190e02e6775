// SPDX-License-Identifier: GPL-2.0-only
// Clock and timer fast paths: ktime_get()/jiffies on the host and virtual
// clocks (raw clock_gettime as the baseline), hrtimer_start+cancel and
// mod_timer+del_timer with 0..N other timers queued on the CPU (the queue
// is a heap: cost grows with log N), and virtual-clock expiry throughput.
// Counter "vs_clock_gettime": time per call over clock_gettime's, both
// measured in this process (the baseline runs first).
#include <benchmark/benchmark.h>

#include <time.h>

#include <atomic>
#include <vector>

#include <uk/linux/hrtimer.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/smp.h>
#include <uk/linux/timekeeping.h>
#include <uk/linux/timer.h>
#include <uk/shim/clock.h>

#include "benchmain.h"

namespace {

double baseline_ns = 0;  // clock_gettime(CLOCK_MONOTONIC), per call

void BM_ClockGettime(benchmark::State &state) {
  struct timespec ts;
  auto t0 = uk::host_clock_ns();
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
  baseline_ns =
      static_cast<double>(uk::host_clock_ns() - t0) / state.iterations();
}
BENCHMARK(BM_ClockGettime)->Name("time/clock_gettime_baseline");

template <bool kVirtual, int kWhat>
void BM_ClockRead(benchmark::State &state) {
  if (kVirtual) uk::clock_use_virtual();
  u64 t0 = uk::host_clock_ns();
  for (auto _ : state) {
    if (kWhat == 0)
      benchmark::DoNotOptimize(ktime_get());
    else
      benchmark::DoNotOptimize(jiffies);
  }
  double ns =
      static_cast<double>(uk::host_clock_ns() - t0) / state.iterations();
  if (kVirtual) uk::clock_use_host();
  if (baseline_ns > 0) state.counters["vs_clock_gettime"] = ns / baseline_ns;
}
BENCHMARK(BM_ClockRead<false, 0>)->Name("time/ktime_get_host");
BENCHMARK(BM_ClockRead<true, 0>)->Name("time/ktime_get_virtual");
BENCHMARK(BM_ClockRead<false, 1>)->Name("time/jiffies_host");
BENCHMARK(BM_ClockRead<true, 1>)->Name("time/jiffies_virtual");

enum hrtimer_restart nop_fn(struct hrtimer *t) { return HRTIMER_NORESTART; }
void nop_timer_fn(struct timer_list *t) {}

// hrtimer_start + hrtimer_cancel of one timer while `background` others
// (due far in the future) sit on the same CPU's queue.
template <bool kVirtual>
void BM_HrtimerStartCancel(benchmark::State &state) {
  if (kVirtual) uk::clock_use_virtual();
  uk::pin_thread_to_cpu(0);
  std::vector<struct hrtimer> bg(state.range(0));
  for (size_t i = 0; i < bg.size(); i++) {
    hrtimer_setup(&bg[i], nop_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
    hrtimer_start(&bg[i], 3600LL * NSEC_PER_SEC + i, HRTIMER_MODE_REL);
  }
  struct hrtimer t;
  hrtimer_setup(&t, nop_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  s64 delta = 1800LL * NSEC_PER_SEC;
  for (auto _ : state) {
    hrtimer_start(&t, delta, HRTIMER_MODE_REL);
    hrtimer_cancel(&t);
  }
  for (auto &b : bg) hrtimer_cancel(&b);
  uk::pin_thread_to_cpu(-1);
  if (kVirtual) uk::clock_use_host();
}
BENCHMARK(BM_HrtimerStartCancel<false>)
    ->Name("time/hrtimer_start_cancel_host")
    ->Arg(0)
    ->Arg(1000)
    ->Arg(100000);
BENCHMARK(BM_HrtimerStartCancel<true>)
    ->Name("time/hrtimer_start_cancel_virtual")
    ->Arg(0)
    ->Arg(1000)
    ->Arg(100000);

// Each thread on its own CPU: per-CPU bases do not contend.
void BM_HrtimerStartCancelPerCpu(benchmark::State &state) {
  uk::pin_thread_to_cpu(state.thread_index() % nr_cpu_ids);
  struct hrtimer t;
  hrtimer_setup(&t, nop_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  for (auto _ : state) {
    hrtimer_start(&t, 3600LL * NSEC_PER_SEC, HRTIMER_MODE_REL);
    hrtimer_cancel(&t);
  }
  uk::pin_thread_to_cpu(-1);
}
BENCHMARK(BM_HrtimerStartCancelPerCpu)
    ->Name("time/hrtimer_start_cancel_percpu")
    ->Threads(2)
    ->UseRealTime();

void BM_ModTimerDelTimer(benchmark::State &state) {
  uk::pin_thread_to_cpu(0);
  struct timer_list t;
  timer_setup(&t, nop_timer_fn, 0);
  for (auto _ : state) {
    mod_timer(&t, jiffies + 3600 * HZ);
    del_timer(&t);
  }
  uk::pin_thread_to_cpu(-1);
}
BENCHMARK(BM_ModTimerDelTimer)->Name("time/mod_timer_del_timer");

// Virtual clock: arm N timers, advance past all of them; items = expiries.
void BM_VirtualExpiry(benchmark::State &state) {
  uk::clock_use_virtual();
  uk::pin_thread_to_cpu(0);
  std::vector<struct hrtimer> ts(state.range(0));
  for (auto &t : ts)
    hrtimer_setup(&t, nop_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
  for (auto _ : state) {
    for (size_t i = 0; i < ts.size(); i++)
      hrtimer_start(&ts[i], 1 + i, HRTIMER_MODE_REL);
    uk::virtual_clock_advance(ts.size() + 1);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  uk::pin_thread_to_cpu(-1);
  uk::clock_use_host();
}
BENCHMARK(BM_VirtualExpiry)->Name("time/virtual_expiry")->Arg(1000);

// Host clock: how late a 50 us hrtimer fires (mean lateness, counter "late_us").
std::atomic<u64> fired_at{0};
enum hrtimer_restart stamp_fn(struct hrtimer *t) {
  fired_at.store(uk::host_clock_ns(), std::memory_order_release);
  return HRTIMER_NORESTART;
}

void BM_HostTimerLatency(benchmark::State &state) {
  struct hrtimer t;
  hrtimer_setup(&t, stamp_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
  double late = 0;
  for (auto _ : state) {
    fired_at.store(0);
    u64 due = uk::host_clock_ns() + 50000;
    hrtimer_start(&t, due, HRTIMER_MODE_ABS);
    while (fired_at.load(std::memory_order_acquire) == 0) {
    }
    late += static_cast<double>(fired_at.load() - due);
  }
  state.counters["late_us"] = late / state.iterations() / 1000.0;
}
BENCHMARK(BM_HostTimerLatency)
    ->Name("time/host_hrtimer_50us_latency")
    ->UseRealTime();

}  // namespace
