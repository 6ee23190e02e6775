// SPDX-License-Identifier: GPL-2.0-only
// Suite "sbitmap": sbitmap / sbitmap_queue get+clear costs, contended
// get/put, and the 6.2 wake-up patch's experiment in miniature: K threads
// allocating from one sbitmap_queue of depth 2..64 with sleeping waiters,
// the Linux 6.1 wake-up scheme against today's, side by side.
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include <uk/linux/jiffies.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/smp.h>

#include "benchmain.h"

namespace {

using uk::bench::Median;

// sbitmap_init_node() starts each CPU's allocation hint at random, as in the
// kernel; where the hint starts moves a get+clear by a few instructions (151
// or 157 for BM_SbitmapGetClear/64 under callgrind). The get+clear loops
// start every hint at bit 0, so that one build always retires the same
// count (tools/ukern perf-check).
void FixHints(struct sbitmap &sb) {
  int cpu;
  for_each_possible_cpu(cpu) {
    unsigned int *hint = per_cpu_ptr(sb.alloc_hint, cpu);
    *hint = 0;
  }
}

void BM_SbitmapGetClear(benchmark::State &state) {
  struct sbitmap sb;
  sbitmap_init_node(&sb, state.range(0), -1, GFP_KERNEL, -1, false, true);
  FixHints(sb);
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
  FixHints(sbq.sb);
  for (auto _ : state) {
    int nr = __sbitmap_queue_get(&sbq);
    benchmark::DoNotOptimize(nr);
    sbitmap_queue_clear(&sbq, nr, raw_smp_processor_id());
  }
  sbitmap_queue_free(&sbq);
}
BENCHMARK(BM_SbqGetClear)->Arg(64)->Arg(128)->Arg(1024);

// What the fast path is made of, each alone: the swap_lock section of
// sbitmap_deferred_clear() (once per word's worth of frees), a this_cpu_read()
// of the allocation hint, and one uncontended test_and_set_bit_lock() +
// set_bit() pair (the two locked RMWs of every get+clear).
void BM_SwapLockIrqsave(benchmark::State &state) {
  raw_spinlock_t lock;
  raw_spin_lock_init(&lock);
  for (auto _ : state) {
    unsigned long flags;
    raw_spin_lock_irqsave(&lock, flags);
    benchmark::ClobberMemory();
    raw_spin_unlock_irqrestore(&lock, flags);
  }
}
BENCHMARK(BM_SwapLockIrqsave);

void BM_ThisCpuReadHint(benchmark::State &state) {
  unsigned int __percpu *hint = alloc_percpu_gfp(unsigned int, GFP_KERNEL);
  for (auto _ : state) {
    unsigned int h = this_cpu_read(*hint);
    benchmark::DoNotOptimize(h);
  }
  free_percpu(hint);
}
BENCHMARK(BM_ThisCpuReadHint);

void BM_BitLockPair(benchmark::State &state) {
  struct sbitmap_word *map =
      static_cast<struct sbitmap_word *>(kzalloc(sizeof(*map), GFP_KERNEL));
  unsigned long i = 0;
  for (auto _ : state) {
    unsigned long nr = i++ & 15;
    bool busy = test_and_set_bit_lock(nr, &map->word);
    benchmark::DoNotOptimize(busy);
    set_bit(nr, &map->cleared);
    if (nr == 15) {
      WRITE_ONCE(map->word, 0);
      WRITE_ONCE(map->cleared, 0);
    }
  }
  kfree(map);
}
BENCHMARK(BM_BitLockPair);

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
  long futile;  // wake-ups after which the retry found no free tag
};

// How long a tag is held (the "I/O"), in microseconds: UKERN_SBQ_HOLD_US,
// default 200. The holder sleeps, as a task waiting for its I/O would, so the
// CPUs stay free for the woken allocators and the figure does not depend on
// what else the machine runs. 0 selects the old hold: a short spin and one
// sched_yield(), whose length is whatever the other runnable tasks on the
// host make it (far too noisy on a shared machine).
long HoldUs() {
  const char *env = std::getenv("UKERN_SBQ_HOLD_US");
  return env ? std::atol(env) : 200;
}

inline void hold_briefly(long hold_us) {
  if (hold_us > 0) {
    struct timespec ts = {0, hold_us * 1000};
    nanosleep(&ts, nullptr);
    return;
  }
  for (int i = 0; i < 32; i++) cpu_relax();
  std::this_thread::yield();
}

// Per-thread wait counters, summed into a SleepRun at the end of a run.
struct WaitCounts {
  long wakeups = 0, timeouts = 0, futile = 0;
};

// A tag as blk_mq_get_tag() takes one: on failure, sleep on the next wait
// queue (sbq_wait_ptr), retrying before and after sbitmap_prepare_to_wait().
// before_sleep() runs just before each sleep, where schedule() calls
// sched_submit_work(). The sleep has a 10 ms safety timeout so that a lost
// wake-up costs time (and is counted) instead of hanging the run.
template <typename BeforeSleep>
int GetTagSleeping(struct sbitmap_queue *sbq, atomic_t *wait_index,
                   WaitCounts *c, BeforeSleep before_sleep) {
  int tag = __sbitmap_queue_get(sbq);
  if (tag >= 0) return tag;
  DEFINE_SBQ_WAIT(wait);
  struct sbq_wait_state *ws = sbq_wait_ptr(sbq, wait_index);
  bool woken = false;
  for (;;) {
    tag = __sbitmap_queue_get(sbq);
    if (tag >= 0) break;
    sbitmap_prepare_to_wait(sbq, ws, &wait, TASK_UNINTERRUPTIBLE);
    tag = __sbitmap_queue_get(sbq);
    if (tag >= 0) break;
    if (woken) c->futile++;  // woken, yet no tag: back to sleep
    before_sleep();
    woken = io_schedule_timeout(msecs_to_jiffies(10)) != 0;
    if (woken)
      c->wakeups++;
    else
      c->timeouts++;
    sbitmap_finish_wait(sbq, ws, &wait);
    // blk_mq_get_tag() picks the next wait queue after each sleep.
    ws = sbq_wait_ptr(sbq, wait_index);
  }
  sbitmap_finish_wait(sbq, ws, &wait);
  return tag;
}

// Runs body(sbq, counts) on k threads started together against a fresh
// sbitmap_queue of @depth under @scheme; returns `ops` operations' rate and
// the summed wait counters.
template <typename Body>
SleepRun RunThreads(unsigned depth, enum sbq_wake_scheme scheme, unsigned k,
                    double ops, Body body) {
  struct sbitmap_queue sbq;
  sbitmap_queue_init_node(&sbq, depth, -1, false, GFP_KERNEL, -1);
  sbitmap_queue_set_wake_scheme(&sbq, scheme);
  std::vector<WaitCounts> counts(k);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < k; t++) {
    ts.emplace_back([&, t] {
      WaitCounts c;
      // A 1 ns timer slack: the default 50 us would dwarf a 200 us hold.
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
      ready++;
      while (!go.load(std::memory_order_acquire)) cpu_relax();
      body(&sbq, &c);
      counts[t] = c;
    });
  }
  while (ready.load() < k) std::this_thread::yield();
  auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto &t : ts) t.join();
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  sbitmap_queue_free(&sbq);
  SleepRun r{ops / secs, 0, 0, 0};
  for (const WaitCounts &c : counts) {
    r.wakeups += c.wakeups;
    r.timeouts += c.timeouts;
    r.futile += c.futile;
  }
  return r;
}

// K threads, each doing `ops` get/hold/clear cycles; a failed get sleeps as
// blk_mq_get_tag() does.
SleepRun RunSleepers(unsigned depth, enum sbq_wake_scheme scheme, unsigned k,
                     long ops) {
  const long hold_us = HoldUs();
  return RunThreads(depth, scheme, k, double(k) * ops,
                    [&](struct sbitmap_queue *sbq, WaitCounts *c) {
                      atomic_t wait_index = ATOMIC_INIT(0);
                      for (long i = 0; i < ops; i++) {
                        int tag = GetTagSleeping(sbq, &wait_index, c, [] {});
                        hold_briefly(hold_us);
                        sbitmap_queue_clear(sbq, tag, raw_smp_processor_id());
                      }
                    });
}

// ---- the fio run's shape: few submitters, 64 requests each under a plug ----

// Submitters of BM_SbqPlugged: UKERN_SBQ_SUBMITTERS, else the nullb suite's
// default (2 x host CPUs, 2..20).
unsigned PlugSubmitters() {
  const char *env = std::getenv("UKERN_SBQ_SUBMITTERS");
  if (env && std::atoi(env) > 0) return std::atoi(env);
  return uk::bench::DefaultSubmitters();
}

// Tags each submitter asks for per batch: fio's iodepth=64.
constexpr int kPlugBatch = 64;
// A plug is flushed once it holds BLK_MAX_REQUEST_COUNT requests (one queue).
constexpr int kPlugMax = 32;

// K submitters, each repeatedly taking a batch of kPlugBatch tags (one
// io_submit() of 64 writes under a plug). Flushing the plug frees the tags it
// holds, each request completing at once as with irqmode=0. The plug is
// flushed every kPlugMax requests, at the end of the batch, and before the
// submitter sleeps: a failed get sleeps as blk_mq_get_tag() does, and
// schedule() flushes the plug first (sched_submit_work()), so a submitter
// never waits for tags it holds itself. Few threads and no other sleeps: the
// CPUs spend the run in get, clear and the wake-ups the scheme asks for.
SleepRun RunPlugged(unsigned depth, enum sbq_wake_scheme scheme, unsigned k,
                    long batches) {
  return RunThreads(depth, scheme, k, double(k) * batches * kPlugBatch,
                    [&](struct sbitmap_queue *sbq, WaitCounts *c) {
                      atomic_t wait_index = ATOMIC_INIT(0);
                      int held[kPlugMax];
                      int nheld = 0;
                      auto flush = [&] {
                        for (int i = 0; i < nheld; i++)
                          sbitmap_queue_clear(sbq, held[i],
                                              raw_smp_processor_id());
                        nheld = 0;
                      };
                      for (long b = 0; b < batches; b++) {
                        for (int i = 0; i < kPlugBatch; i++) {
                          // May flush (nheld = 0) before it sleeps.
                          int tag = GetTagSleeping(sbq, &wait_index, c, flush);
                          held[nheld++] = tag;
                          if (nheld == kPlugMax) flush();
                        }
                        flush();
                      }
                    });
}

// Threads at depth @depth: 2 x host CPUs (at least 4; 32 with --ukern_full),
// and at least 2 x depth, so that every depth runs full and has sleepers (the
// patch ran 20 jobs at queue depth 64 each against hardware depths 2..64).
unsigned Sleepers(unsigned depth) {
  unsigned k = 2 * std::max(1u, std::thread::hardware_concurrency());
  if (uk::bench::full) k = std::max(k, 32u);
  return std::max({k, 4u, 2 * depth});
}

// get/hold/clear cycles per run, over all threads: UKERN_SBQ_OPS (default
// 500) per tag, so that a run lasts about as long at every depth.
long SleeperOps(unsigned depth) {
  const char *env = std::getenv("UKERN_SBQ_OPS");
  long ops = env ? std::atol(env) : 0;
  return (ops > 0 ? ops : 500) * depth;
}

// Per depth: every pair's ops/s of both schemes and today/v6.1.
struct SleepPairs {
  std::vector<double> v61, today, ratio;
  std::vector<double> v61_wakeups, today_wakeups, v61_timeouts, today_timeouts;
  std::vector<double> v61_futile, today_futile;
};
std::map<int, SleepPairs> g_pairs;

// One iteration runs both schemes back to back on fresh maps (which goes
// first alternates), so each today/v6.1 ratio compares two runs that saw the
// same machine; the summary takes the median of those ratios.
template <typename Run>
void RunPairs(benchmark::State &state, SleepPairs &pairs, unsigned k, Run run) {
  SleepRun old_r{}, new_r{};
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    if (pairs.ratio.size() % 2 == 0) {
      old_r = run(SBQ_WAKE_V61);
      new_r = run(SBQ_WAKE_CURRENT);
    } else {
      new_r = run(SBQ_WAKE_CURRENT);
      old_r = run(SBQ_WAKE_V61);
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
    pairs.v61.push_back(old_r.ops_per_s);
    pairs.today.push_back(new_r.ops_per_s);
    pairs.ratio.push_back(new_r.ops_per_s / old_r.ops_per_s);
    pairs.v61_wakeups.push_back(old_r.wakeups);
    pairs.today_wakeups.push_back(new_r.wakeups);
    pairs.v61_timeouts.push_back(old_r.timeouts);
    pairs.today_timeouts.push_back(new_r.timeouts);
    pairs.v61_futile.push_back(old_r.futile);
    pairs.today_futile.push_back(new_r.futile);
  }
  state.counters["threads"] = k;
  state.counters["v61_ops_per_s"] = old_r.ops_per_s;
  state.counters["today_ops_per_s"] = new_r.ops_per_s;
  state.counters["today_over_v61"] = new_r.ops_per_s / old_r.ops_per_s;
  state.counters["v61_wakeups"] = old_r.wakeups;
  state.counters["today_wakeups"] = new_r.wakeups;
  state.counters["v61_timeouts"] = old_r.timeouts;
  state.counters["today_timeouts"] = new_r.timeouts;
  state.counters["v61_futile"] = old_r.futile;
  state.counters["today_futile"] = new_r.futile;
}

void BM_SbqSleepers(benchmark::State &state) {
  unsigned depth = state.range(0);
  unsigned k = Sleepers(depth);
  long per_thread = std::max(1L, SleeperOps(depth) / k);
  RunPairs(state, g_pairs[depth], k, [&](enum sbq_wake_scheme scheme) {
    return RunSleepers(depth, scheme, k, per_thread);
  });
}

// Batches of 64 per submitter and run: UKERN_SBQ_BATCHES (default 2000).
long PlugBatches() {
  const char *env = std::getenv("UKERN_SBQ_BATCHES");
  long n = env ? std::atol(env) : 0;
  return n > 0 ? n : 2000;
}

std::map<int, SleepPairs> g_plug_pairs;

void BM_SbqPlugged(benchmark::State &state) {
  unsigned depth = state.range(0);
  unsigned k = PlugSubmitters();
  RunPairs(state, g_plug_pairs[depth], k, [&](enum sbq_wake_scheme scheme) {
    return RunPlugged(depth, scheme, k, PlugBatches());
  });
}

void PrintPairs(const std::map<int, SleepPairs> &all,
                unsigned (*threads)(unsigned)) {
  std::printf("%6s %7s %5s %11s %11s %8s %8s %8s %8s %7s %7s %11s %7s %7s\n",
              "depth", "threads", "pairs", "v6.1 ops/s", "today ops/s",
              "v6.1 wk", "today wk", "v6.1 fut", "tday fut", "v6.1 to",
              "today to", "today/v6.1", "min", "max");
  for (auto &[depth, p] : all) {
    std::printf(
        "%6d %7u %5zu %11.0f %11.0f %8.0f %8.0f %8.0f %8.0f %7.0f %7.0f %11.3f "
        "%7.3f "
        "%7.3f\n",
        depth, threads(depth), p.ratio.size(), Median(p.v61), Median(p.today),
        Median(p.v61_wakeups), Median(p.today_wakeups), Median(p.v61_futile),
        Median(p.today_futile), Median(p.v61_timeouts),
        Median(p.today_timeouts), Median(p.ratio),
        *std::min_element(p.ratio.begin(), p.ratio.end()),
        *std::max_element(p.ratio.begin(), p.ratio.end()));
  }
}

// Prints the side-by-side tables at exit, after every run (with random
// interleaving no benchmark is sure to run last): per depth the medians over
// the pairs and the median, lowest and highest of the per-pair ratios.
void PrintSleepersSummary() {
  if (!g_pairs.empty()) {
    std::printf(
        "\nsbitmap_queue with sleeping waiters: %ld cycles per tag and run, "
        "hold %ld us; medians over the pairs (v6.1 and today back to back)\n",
        SleeperOps(1), HoldUs());
    PrintPairs(g_pairs, Sleepers);
  }
  if (!g_plug_pairs.empty()) {
    std::printf(
        "\nsbitmap_queue, plugged submitters (%d tags a batch, %ld batches "
        "each, plug flushed before sleeping); medians over the pairs\n",
        kPlugBatch, PlugBatches());
    PrintPairs(g_plug_pairs, [](unsigned) { return PlugSubmitters(); });
  }
  std::fflush(stdout);
}

void RegisterSleepers() {
  using Fn = void (*)(benchmark::State &);
  const std::pair<const char *, Fn> forms[] = {
      {"BM_SbqSleepers", BM_SbqSleepers}, {"BM_SbqPlugged", BM_SbqPlugged}};
  for (const auto &[name, fn] : forms)
    for (int depth : {2, 4, 8, 16, 32, 64})
      benchmark::RegisterBenchmark(name, fn)
          ->Arg(depth)
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
  std::atexit(PrintSleepersSummary);
}
uk::bench::Registrar reg(RegisterSleepers);

}  // namespace
