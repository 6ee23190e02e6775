// SPDX-License-Identifier: GPL-2.0-only
// percpu_ref_get()+percpu_ref_put() next to a plain shared atomic refcount
// (atomic_long_inc + atomic_long_dec_and_test, as kref/refcount_t do), on
// 1, 2 and host-core threads. Compare items/s of the pair at equal threads.
#include <benchmark/benchmark.h>

#include <thread>

#include <uk/linux/atomic.h>
#include <uk/linux/percpu-refcount.h>

#include "benchmain.h"

namespace {

void NoRelease(struct percpu_ref *) {}

struct percpu_ref *SharedRef() {
  static struct percpu_ref *ref = [] {
    static struct percpu_ref r;
    if (percpu_ref_init(&r, NoRelease, 0, GFP_KERNEL)) abort();
    return &r;
  }();
  return ref;
}

struct alignas(64) AtomicRef {
  atomic_long_t count;
};
AtomicRef atomic_ref = {{1}};

int HostThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n < 2 ? 2 : static_cast<int>(n);
}

void BM_PercpuRefGetPut(benchmark::State &state) {
  struct percpu_ref *ref = SharedRef();
  for (auto _ : state) {
    for (int i = 0; i < 100; i++) {
      percpu_ref_get(ref);
      percpu_ref_put(ref);
    }
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

void BM_AtomicRefGetPut(benchmark::State &state) {
  for (auto _ : state) {
    for (int i = 0; i < 100; i++) {
      atomic_long_inc(&atomic_ref.count);
      if (atomic_long_dec_and_test(&atomic_ref.count)) abort();
    }
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

void Register() {
  int host = HostThreads();
  for (auto *b :
       {benchmark::RegisterBenchmark("BM_PercpuRefGetPut", BM_PercpuRefGetPut),
        benchmark::RegisterBenchmark("BM_AtomicRefGetPut",
                                     BM_AtomicRefGetPut)}) {
    b->Threads(1)->Threads(2);
    if (host > 2) b->Threads(host);
    b->UseRealTime();
  }
}
uk::bench::Registrar registrar(Register);

}  // namespace
