// SPDX-License-Identifier: GPL-2.0-only
// The micro-benchmark of commit 78c1d78488a3 ("radix-tree: introduce
// bit-optimized iterator"): a tree in which every <step>-th slot is filled
// and tagged, scanned 14 slots (one 2012 pagevec) at a time by gang lookups,
// tagged and normal; ns per full scan. "before" is the v3.3 engine
// (radix_tree_gang_lookup*_v33: one descent per call, bit-by-bit tag scan),
// "after" the same API on the chunk iterator, and "iter" the raw
// radix_tree_for_each_slot/_tagged loop. All run side by side in one binary;
// a table of medians and after/before ratios is printed at the end.
//
// Sizes: 1024 slots, and 1M slots by default or 128M with --full
// (`tools/ukern bench radix --full`).
#include <benchmark/benchmark.h>

#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>

#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "benchmain.h"

namespace {

using uk::bench::Median;

constexpr unsigned kPagevec = 14;  // PAGEVEC_SIZE in 2012

enum Engine { kBefore, kAfter, kIter };
const char *const kEngineName[] = {"before", "after", "iter"};

inline void *item_of(unsigned long index) {
  return reinterpret_cast<void *>((index + 1) << 2);
}
inline unsigned long index_of(void *item) {
  return (reinterpret_cast<uintptr_t>(item) >> 2) - 1;
}

// One tree at a time, rebuilt when the (size, step) changes; benchmarks are
// registered grouped by tree so each is built once.
struct TreeCache {
  radix_tree_root root = RADIX_TREE_INIT(GFP_KERNEL);
  unsigned long size = 0, step = 0, items = 0;

  void clear() {
    for (unsigned long i = 0; i < size; i += step) radix_tree_delete(&root, i);
    rcu_barrier();
    size = step = items = 0;
  }

  radix_tree_root *get(unsigned long want_size, unsigned long want_step) {
    if (want_size == size && want_step == step) return &root;
    clear();
    size = want_size;
    step = want_step;
    for (unsigned long i = 0; i < size; i += step) {
      if (radix_tree_insert(&root, i, item_of(i)) == 0) {
        radix_tree_tag_set(&root, i, 0);
        items++;
      }
    }
    return &root;
  }
} tree_cache;

template <Engine kEngine, bool kTagged>
unsigned long ScanOnce(radix_tree_root *root) {
  unsigned long sink = 0;

  rcu_read_lock();
  if constexpr (kEngine == kIter) {
    radix_tree_iter iter;
    void **slot;
    if constexpr (kTagged) {
      radix_tree_for_each_tagged(slot, root, &iter, 0, 0) sink ^=
          reinterpret_cast<uintptr_t>(*slot);
    } else {
      radix_tree_for_each_slot(slot, root, &iter, 0) sink ^=
          reinterpret_cast<uintptr_t>(*slot);
    }
  } else {
    void *results[kPagevec];
    unsigned long index = 0;
    for (;;) {
      unsigned n;
      if constexpr (kEngine == kBefore)
        n = kTagged
                ? radix_tree_gang_lookup_tag_v33(root, results, index, kPagevec,
                                                 0)
                : radix_tree_gang_lookup_v33(root, results, index, kPagevec);
      else
        n = kTagged
                ? radix_tree_gang_lookup_tag(root, results, index, kPagevec, 0)
                : radix_tree_gang_lookup(root, results, index, kPagevec);
      if (!n) break;
      for (unsigned i = 0; i < n; i++)
        sink ^= reinterpret_cast<uintptr_t>(results[i]);
      index = index_of(results[n - 1]) + 1;
      if (!index) break;
    }
  }
  rcu_read_unlock();
  return sink;
}

using Key = std::tuple<unsigned long, unsigned long, bool,
                       int>;  // size, step, tagged, engine
std::map<Key, std::vector<double>> &samples() {
  static auto *s = new std::map<Key, std::vector<double>>;  // read at exit
  return *s;
}

double ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <Engine kEngine, bool kTagged>
void BM_Scan(benchmark::State &state, unsigned long size, unsigned long step) {
  radix_tree_root *root = tree_cache.get(size, step);
  unsigned long expect = 0;
  for (unsigned long i = 0; i < size; i += step)
    expect ^= reinterpret_cast<uintptr_t>(item_of(i));
  if (ScanOnce<kEngine, kTagged>(root) != expect) {
    state.SkipWithError("scan result differs from the tree's contents");
    return;
  }

  // The summary uses this thread's CPU time: on a shared, loaded host the
  // wall clock also counts time spent descheduled.
  double t0 = ThreadCpuNs();
  for (auto _ : state)
    benchmark::DoNotOptimize(ScanOnce<kEngine, kTagged>(root));
  double ns = (ThreadCpuNs() - t0) / static_cast<double>(state.iterations());
  samples()[Key{size, step, kTagged, kEngine}].push_back(ns);
  state.counters["items"] = static_cast<double>(tree_cache.items);
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * tree_cache.items));
}

// The ratio table, printed (atexit) once every benchmark has run.
void PrintSummary() {
  {
    auto &s = samples();
    if (s.empty()) return;
    printf(
        "\nradix tree gang lookup, %u slots per call, thread CPU ns per full "
        "scan (median of runs)\n",
        kPagevec);
    printf("%10s %6s %7s %14s %14s %8s %14s %8s\n", "slots", "step", "mode",
           "before(v3.3)", "after(v3.4)", "aft/bef", "for_each", "it/bef");
    bool ok_tagged = true, ok_normal = true, have_target = false;
    for (auto &[key, v] : s) {
      auto [size, step, tagged, engine] = key;
      if (engine != kBefore) continue;
      auto a = s.find(Key{size, step, tagged, kAfter});
      auto it = s.find(Key{size, step, tagged, kIter});
      if (a == s.end() || it == s.end()) continue;
      double b = Median(v), af = Median(a->second), r = Median(it->second);
      printf("%10lu %6lu %7s %14.0f %14.0f %8.2f %14.0f %8.2f\n", size, step,
             tagged ? "tagged" : "normal", b, af, af / b, r, r / b);
      if (size == 1024 && step == 16) {
        have_target = true;
        if (tagged)
          ok_tagged = af / b <= 0.5;
        else
          ok_normal = af / b >= 0.75 && af / b <= 1.25;
      }
    }
    if (have_target) {
      printf(
          "target (1024 slots, step 16): tagged after/before <= 0.50: %s; "
          "normal after/before within +-25%%: %s\n",
          ok_tagged ? "met" : "NOT met", ok_normal ? "met" : "NOT met");
    }
  }
  fflush(stdout);
}

void RegisterRadix() {
  std::atexit(PrintSummary);
  std::vector<unsigned long> small_steps;
  for (unsigned long s = 1; s <= 16; s++) small_steps.push_back(s);
  const std::vector<unsigned long> kernel_steps = {1,  2,   7,   15,  63,   64,
                                                   65, 128, 256, 512, 12345};
  for (unsigned long s : kernel_steps)
    if (s > 16) small_steps.push_back(s);

  std::vector<std::pair<unsigned long, std::vector<unsigned long>>> configs = {
      {1024, small_steps},
      {uk::bench::full ? 128UL << 20 : 1UL << 20, kernel_steps},
  };
  for (const auto &config : configs) {
    // Plain locals rather than a structured binding: clang 14 lambdas may not
    // capture those.
    const unsigned long size = config.first;
    const std::vector<unsigned long> &steps = config.second;
    for (unsigned long step : steps) {
      auto name = [&](const char *mode, Engine e) {
        return "radix/" + std::string(mode) + "/" + kEngineName[e] +
               "/slots:" + std::to_string(size) +
               "/step:" + std::to_string(step);
      };
      benchmark::RegisterBenchmark(name("tagged", kBefore).c_str(),
                                   BM_Scan<kBefore, true>, size, step);
      benchmark::RegisterBenchmark(name("tagged", kAfter).c_str(),
                                   BM_Scan<kAfter, true>, size, step);
      benchmark::RegisterBenchmark(name("tagged", kIter).c_str(),
                                   BM_Scan<kIter, true>, size, step);
      benchmark::RegisterBenchmark(name("normal", kBefore).c_str(),
                                   BM_Scan<kBefore, false>, size, step);
      benchmark::RegisterBenchmark(name("normal", kAfter).c_str(),
                                   BM_Scan<kAfter, false>, size, step);
      benchmark::RegisterBenchmark(name("normal", kIter).c_str(),
                                   BM_Scan<kIter, false>, size, step);
    }
  }
}

uk::bench::Registrar registrar(RegisterRadix);

}  // namespace
