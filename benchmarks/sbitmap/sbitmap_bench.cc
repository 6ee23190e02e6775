// SPDX-License-Identifier: GPL-2.0-only
// Suite "sbitmap": sbitmap / sbitmap_queue get+clear costs, contended
// get/put, and the 6.2 wake-up patch's experiment in miniature: K threads
// allocating from one sbitmap_queue of depth 2..64 with sleeping waiters,
// the Linux 6.1 wake-up scheme against today's, side by side.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include <uk/linux/jiffies.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/smp.h>

#include "benchmain.h"

namespace {

void BM_SbitmapGetClear(benchmark::State &state) {
  struct sbitmap sb;
  sbitmap_init_node(&sb, state.range(0), -1, GFP_KERNEL, -1, false, true);
  for (auto _ : state) {
    int nr = sbitmap_get(&sb);
    benchmark::DoNotOptimize(nr);
    sbitmap_clear_bit(&sb, nr);
  }
  sbitmap_free(&sb);
}
BENCHMARK(BM_SbitmapGetClear)->Arg(64)->Arg(128)->Arg(1024);

void BM_SbqGetClear(benchmark::State &state) {
  struct sbitmap_queue sbq;
  sbitmap_queue_init_node(&sbq, state.range(0), -1, false, GFP_KERNEL, -1);
  for (auto _ : state) {
    int nr = __sbitmap_queue_get(&sbq);
    benchmark::DoNotOptimize(nr);
    sbitmap_queue_clear(&sbq, nr, raw_smp_processor_id());
  }
  sbitmap_queue_free(&sbq);
}
BENCHMARK(BM_SbqGetClear)->Arg(64)->Arg(128)->Arg(1024);

// Contended: all threads share one map with room for everybody.
struct sbitmap_queue g_sbq;

void BM_SbqGetClearContended(benchmark::State &state) {
  if (state.thread_index() == 0)
    sbitmap_queue_init_node(&g_sbq, 256, -1, false, GFP_KERNEL, -1);
  long failed = 0;
  for (auto _ : state) {
    int nr = __sbitmap_queue_get(&g_sbq);
    if (nr < 0) {
      failed++;
      continue;
    }
    sbitmap_queue_clear(&g_sbq, nr, raw_smp_processor_id());
  }
  state.counters["failed"] = failed;
  if (state.thread_index() == 0) sbitmap_queue_free(&g_sbq);
}
BENCHMARK(BM_SbqGetClearContended)->Threads(2)->UseRealTime();
BENCHMARK(BM_SbqGetClearContended)->ThreadPerCpu()->UseRealTime();

// ---- sleeping waiters, v6.1 vs today ----

struct SleepRun {
  double ops_per_s;
  long wakeups;
  long timeouts;
};

// The "I/O": a short spin, then give the host CPU away once, so that with
// more threads than CPUs the map runs full and allocators have to sleep.
inline void hold_briefly() {
  for (int i = 0; i < 32; i++) cpu_relax();
  std::this_thread::yield();
}

// K threads, each doing `ops` get/hold/clear cycles; a failed get sleeps as
// blk_mq_get_tag() does. The sleep has a 10 ms safety timeout so that a lost
// wake-up costs time (and is counted) instead of hanging the run.
SleepRun RunSleepers(unsigned depth, enum sbq_wake_scheme scheme, unsigned k, long ops) {
  struct sbitmap_queue sbq;
  sbitmap_queue_init_node(&sbq, depth, -1, false, GFP_KERNEL, -1);
  sbitmap_queue_set_wake_scheme(&sbq, scheme);
  std::atomic<long> wakeups{0}, timeouts{0};
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < k; t++) {
    ts.emplace_back([&] {
      atomic_t wait_index = ATOMIC_INIT(0);
      long w = 0, to = 0;
      ready++;
      while (!go.load(std::memory_order_acquire)) cpu_relax();
      for (long i = 0; i < ops; i++) {
        int tag = __sbitmap_queue_get(&sbq);
        if (tag < 0) {
          DEFINE_SBQ_WAIT(wait);
          struct sbq_wait_state *ws = sbq_wait_ptr(&sbq, &wait_index);
          for (;;) {
            tag = __sbitmap_queue_get(&sbq);
            if (tag >= 0) break;
            sbitmap_prepare_to_wait(&sbq, ws, &wait, TASK_UNINTERRUPTIBLE);
            tag = __sbitmap_queue_get(&sbq);
            if (tag >= 0) break;
            if (io_schedule_timeout(msecs_to_jiffies(10)) == 0)
              to++;
            else
              w++;
            sbitmap_finish_wait(&sbq, ws, &wait);
          }
          sbitmap_finish_wait(&sbq, ws, &wait);
        }
        hold_briefly();
        sbitmap_queue_clear(&sbq, tag, raw_smp_processor_id());
      }
      wakeups += w;
      timeouts += to;
    });
  }
  while (ready.load() < k) std::this_thread::yield();
  auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto &t : ts) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sbitmap_queue_free(&sbq);
  return {double(k) * ops / secs, wakeups.load(), timeouts.load()};
}

// Default 2 x host CPUs (at least 4). With --ukern_full, 32 threads, so that
// every depth up to 32 runs full and has sleepers (the patch ran 20 jobs at
// queue depth 64 each against hardware depths 2..64).
unsigned Sleepers() {
  unsigned k = 2 * std::max(1u, std::thread::hardware_concurrency());
  if (uk::bench::full) k = std::max(k, 32u);
  return std::max(k, 4u);
}

// Per depth and scheme, the best of the repetitions (ops/s).
std::map<int, std::map<int, double>> g_best;

void BM_SbqSleepers(benchmark::State &state) {
  unsigned depth = state.range(0);
  auto scheme = static_cast<enum sbq_wake_scheme>(state.range(1));
  unsigned k = Sleepers();
  long ops = 5000;
  SleepRun r{};
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    r = RunSleepers(depth, scheme, k, ops);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["threads"] = k;
  state.counters["ops_per_s"] = r.ops_per_s;
  state.counters["wakeups"] = r.wakeups;
  state.counters["timeouts"] = r.timeouts;
  state.SetLabel(scheme == SBQ_WAKE_V61 ? "v6.1" : "today");
  double &best = g_best[depth][scheme];
  best = std::max(best, r.ops_per_s);
}

// Prints the side-by-side table once both schemes ran at every depth.
void BM_SbqSleepersSummary(benchmark::State &state) {
  for (auto _ : state) {
  }
  static bool printed;
  if (printed) return;
  printed = true;
  std::printf("\nsbitmap_queue with sleeping waiters, %u threads (best ops/s per case)\n",
              Sleepers());
  std::printf("%6s %14s %14s %12s\n", "depth", "v6.1", "today", "today/v6.1");
  for (auto &[depth, m] : g_best) {
    double old_s = m[SBQ_WAKE_V61], new_s = m[SBQ_WAKE_CURRENT];
    std::printf("%6d %14.0f %14.0f %12.3f\n", depth, old_s, new_s,
                old_s > 0 ? new_s / old_s : 0.0);
  }
  std::fflush(stdout);
}

void RegisterSleepers() {
  // Same depth back to back, v6.1 then today, so both see the same machine.
  for (int depth : {2, 4, 8, 16, 32, 64})
    for (int scheme : {SBQ_WAKE_V61, SBQ_WAKE_CURRENT})
      benchmark::RegisterBenchmark("BM_SbqSleepers", BM_SbqSleepers)
          ->Args({depth, scheme})
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_SbqSleepersSummary", BM_SbqSleepersSummary)->Iterations(1);
}
uk::bench::Registrar reg(RegisterSleepers);

}  // namespace
