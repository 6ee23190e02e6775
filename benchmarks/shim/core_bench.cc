// SPDX-License-Identifier: GPL-2.0-only
// The kernel_shim fast paths: spin_lock, this_cpu ops, irq/preempt
// sections, and kmem_cache against malloc measured side by side.
//
// Targets (single thread, release build): this_cpu_inc <= 5 ns,
// uncontended spin_lock+unlock <= 20 ns, kmem_cache_alloc+free no slower
// than malloc+free of the same size. The Slab/* benchmarks report the
// ratio to malloc+free (measured just before in the same process) as the
// counter "vs_malloc"; a summary table is printed at exit.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <uk/linux/percpu.h>
#include <uk/linux/preempt.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>

#include "benchmain.h"

namespace {

DEFINE_SPINLOCK(bench_lock);
DEFINE_PER_CPU(long, bench_pcp);

void BM_SpinLockUnlock(benchmark::State &state) {
  for (auto _ : state) {
    spin_lock(&bench_lock);
    spin_unlock(&bench_lock);
  }
}
BENCHMARK(BM_SpinLockUnlock)->Name("shim/spin_lock_unlock");
// Two threads on one lock: the contended cost per lock+unlock pair.
BENCHMARK(BM_SpinLockUnlock)
    ->Name("shim/spin_lock_unlock_contended")
    ->Threads(2)
    ->UseRealTime();

void BM_SpinLockIrqsave(benchmark::State &state) {
  unsigned long flags;
  for (auto _ : state) {
    spin_lock_irqsave(&bench_lock, flags);
    spin_unlock_irqrestore(&bench_lock, flags);
  }
}
BENCHMARK(BM_SpinLockIrqsave)->Name("shim/spin_lock_irqsave_restore");

void BM_ThisCpuInc(benchmark::State &state) {
  for (auto _ : state) this_cpu_inc(bench_pcp);
  benchmark::DoNotOptimize(bench_pcp);
}
BENCHMARK(BM_ThisCpuInc)->Name("shim/this_cpu_inc");

void BM_ThisCpuIncPreemptOff(benchmark::State &state) {
  // The common kernel shape: several per-CPU updates in one section.
  preempt_disable();
  for (auto _ : state) __this_cpu_inc(bench_pcp);
  preempt_enable();
  benchmark::DoNotOptimize(bench_pcp);
}
BENCHMARK(BM_ThisCpuIncPreemptOff)->Name("shim/__this_cpu_inc_preempt_off");

void BM_LocalIrqSaveRestore(benchmark::State &state) {
  unsigned long flags;
  for (auto _ : state) {
    local_irq_save(flags);
    benchmark::ClobberMemory();
    local_irq_restore(flags);
  }
}
BENCHMARK(BM_LocalIrqSaveRestore)->Name("shim/local_irq_save_restore");

void BM_PreemptDisableEnable(benchmark::State &state) {
  for (auto _ : state) {
    preempt_disable();
    benchmark::ClobberMemory();
    preempt_enable();
  }
}
BENCHMARK(BM_PreemptDisableEnable)->Name("shim/preempt_disable_enable");

void BM_PreemptNested(benchmark::State &state) {
  // preempt_disable() inside an already-disabled section: the cheap case.
  preempt_disable();
  for (auto _ : state) {
    preempt_disable();
    benchmark::ClobberMemory();
    preempt_enable();
  }
  preempt_enable();
}
BENCHMARK(BM_PreemptNested)->Name("shim/preempt_disable_enable_nested");

// Slab vs malloc: the malloc figure for each size is remembered so the
// kmem_cache benchmark can report its ratio.
std::mutex results_mu;
std::map<int, double> malloc_ns;
std::map<int, double> cache_ns;

// Thread CPU time, so that a busy host (other processes) does not skew the
// ratio the way wall time would.
double ThreadCpuSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

double NsPerIter(const benchmark::State &state, double seconds) {
  return state.iterations()
             ? seconds * 1e9 / static_cast<double>(state.iterations())
             : 0;
}

void BM_MallocFree(benchmark::State &state) {
  const size_t size = state.range(0);
  double start = ThreadCpuSeconds();
  for (auto _ : state) {
    void *p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  double s = ThreadCpuSeconds() - start;
  std::lock_guard<std::mutex> g(results_mu);
  malloc_ns[static_cast<int>(size)] = NsPerIter(state, s);
}

void BM_KmemCacheAllocFree(benchmark::State &state) {
  const size_t size = state.range(0);
  struct kmem_cache *c = kmem_cache_create("bench", size, 0, 0, nullptr);
  double start = ThreadCpuSeconds();
  for (auto _ : state) {
    void *p = kmem_cache_alloc(c, GFP_KERNEL);
    benchmark::DoNotOptimize(p);
    kmem_cache_free(c, p);
  }
  double s = ThreadCpuSeconds() - start;
  kmem_cache_destroy(c);
  double ns = NsPerIter(state, s);
  std::lock_guard<std::mutex> g(results_mu);
  cache_ns[static_cast<int>(size)] = ns;
  auto m = malloc_ns.find(static_cast<int>(size));
  if (m != malloc_ns.end() && m->second > 0)
    state.counters["vs_malloc"] = ns / m->second;
}

void BM_KmallocFree(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = kmalloc(size, GFP_KERNEL);
    benchmark::DoNotOptimize(p);
    kfree(p);
  }
}

// Registered in pairs so malloc always runs right before kmem_cache.
void RegisterSlab() {
  for (int size : {64, 256}) {
    benchmark::RegisterBenchmark(
        ("shim/slab/malloc_free/" + std::to_string(size)).c_str(),
        BM_MallocFree)
        ->Arg(size);
    benchmark::RegisterBenchmark(
        ("shim/slab/kmem_cache_alloc_free/" + std::to_string(size)).c_str(),
        BM_KmemCacheAllocFree)
        ->Arg(size);
    benchmark::RegisterBenchmark(
        ("shim/slab/kmalloc_kfree/" + std::to_string(size)).c_str(),
        BM_KmallocFree)
        ->Arg(size);
  }
}
uk::bench::Registrar slab_registrar(RegisterSlab);

// Side-by-side summary (last repetition of each pair).
struct Summary {
  ~Summary() {
    std::lock_guard<std::mutex> g(results_mu);
    if (cache_ns.empty()) return;
    fprintf(stderr,
            "\nshim core: kmem_cache_alloc+free vs malloc+free (same run)\n");
    for (auto &[size, ns] : cache_ns) {
      auto m = malloc_ns.find(size);
      if (m == malloc_ns.end()) continue;
      fprintf(stderr,
              "  %4d B: kmem_cache %.2f ns, malloc %.2f ns, ratio %.2f\n", size,
              ns, m->second, ns / m->second);
    }
  }
} summary;

}  // namespace
