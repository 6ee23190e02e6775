// SPDX-License-Identifier: GPL-2.0-only
// RCU: read-side cost next to liburcu memb, synchronize_rcu() latency and
// call_rcu() throughput (ukern and liburcu in the same run).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <uk/linux/kernel.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>

#include "benchmain.h"
#include "urcu_glue.h"

namespace {

using Clock = std::chrono::steady_clock;

noinline void UkReadSideLoop(long n) {
  for (long i = 0; i < n; i++) {
    rcu_read_lock();
    barrier();
    rcu_read_unlock();
  }
}

void BM_RcuReadLockUnlock(benchmark::State &state) {
  UkReadSideLoop(1);  // registers the thread
  for (auto _ : state) UkReadSideLoop(1000);
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_RcuReadLockUnlock)->Threads(1)->Threads(2);

void BM_UrcuMembReadLockUnlock(benchmark::State &state) {
  urcu_glue::RegisterThread();
  for (auto _ : state) urcu_glue::ReadSideLoop(1000);
  state.SetItemsProcessed(state.iterations() * 1000);
  urcu_glue::UnregisterThread();
}
BENCHMARK(BM_UrcuMembReadLockUnlock)->Threads(1)->Threads(2);

// Both read sides in one benchmark, alternating blocks, so the ratio is
// measured under identical conditions: ratio = ukern ns / liburcu ns.
void BM_ReadSideRatio(benchmark::State &state) {
  constexpr long kBlock = 20000;
  urcu_glue::RegisterThread();
  UkReadSideLoop(1);
  double uk_ns = 0, urcu_ns = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    UkReadSideLoop(kBlock);
    auto t1 = Clock::now();
    urcu_glue::ReadSideLoop(kBlock);
    auto t2 = Clock::now();
    uk_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    urcu_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
  }
  double n = static_cast<double>(state.iterations()) * kBlock;
  state.counters["ukern_ns"] = uk_ns / n;
  state.counters["urcu_memb_ns"] = urcu_ns / n;
  state.counters["ratio"] = uk_ns / urcu_ns;
  urcu_glue::UnregisterThread();
}
BENCHMARK(BM_ReadSideRatio);

// Reader threads that keep entering and leaving sections while the
// benchmark thread measures grace periods.
class BackgroundReaders {
 public:
  BackgroundReaders(int n, bool urcu) {
    for (int i = 0; i < n; i++) {
      threads_.emplace_back([this, urcu] {
        if (urcu) {
          urcu_glue::RegisterThread();
          while (!stop_.load(std::memory_order_relaxed))
            urcu_glue::ReadSideLoop(100);
          urcu_glue::UnregisterThread();
        } else {
          while (!stop_.load(std::memory_order_relaxed)) UkReadSideLoop(100);
        }
      });
    }
  }
  ~BackgroundReaders() {
    stop_ = true;
    for (auto &t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

void BM_SynchronizeRcu(benchmark::State &state) {
  BackgroundReaders readers(static_cast<int>(state.range(0)), false);
  for (auto _ : state) synchronize_rcu();
}
BENCHMARK(BM_SynchronizeRcu)->Arg(0)->Arg(2)->UseRealTime();

void BM_UrcuMembSynchronizeRcu(benchmark::State &state) {
  BackgroundReaders readers(static_cast<int>(state.range(0)), true);
  for (auto _ : state) urcu_glue::Synchronize();
}
BENCHMARK(BM_UrcuMembSynchronizeRcu)->Arg(0)->Arg(2)->UseRealTime();

struct Item {
  long pad[2];
  struct rcu_head rh;
};

void FreeItem(struct rcu_head *rh) { kfree(container_of(rh, Item, rh)); }

// call_rcu() of n objects freed by their callbacks, then rcu_barrier():
// items/s is the end-to-end callback throughput.
void BM_CallRcu(benchmark::State &state) {
  const long n = state.range(0);
  for (auto _ : state) {
    for (long i = 0; i < n; i++) {
      Item *it = static_cast<Item *>(kmalloc(sizeof(Item), GFP_KERNEL));
      call_rcu(&it->rh, FreeItem);
    }
    rcu_barrier();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CallRcu)->Arg(10000)->UseRealTime();

void BM_UrcuMembCallRcu(benchmark::State &state) {
  const long n = state.range(0);
  urcu_glue::RegisterThread();
  for (auto _ : state) urcu_glue::CallRcuBatch(n);
  state.SetItemsProcessed(state.iterations() * n);
  urcu_glue::UnregisterThread();
}
BENCHMARK(BM_UrcuMembCallRcu)->Arg(10000)->UseRealTime();

}  // namespace
