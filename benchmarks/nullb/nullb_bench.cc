// SPDX-License-Identifier: GPL-2.0-only
// Suite "nullb": the block path end to end on an emulated null_blk.
// - BM_NullbIoIrqmode0: one 4 KiB write through blkdev_rw -> bio ->
//   blk_mq_submit_bio -> blk_mq_get_tag -> null_queue_rq -> inline
//   completion -> bio_endio -> callback, one thread.
// - BM_NullbBioIrqmode0: the same from submit_bio() with a reused bio
//   (blk-mq tags + null_blk only).
// - BM_NullbBioPlugged/<batch>: `batch` such bios per plug
//   (blk_start_plug_nr_ios), ns per I/O.
// - BM_NullbPolledBatch/<batch>: the same on a poll queue, ended by one
//   poll through an io_comp_batch (blk_mq_end_request_batch).
// - BM_NullbIops/<depth>/<scheme>: the 6.2 sbitmap wake-up patch's fio run
//   in miniature: N submitters, each keeping 64 random 4 KiB writes in
//   flight (async, completion callback) on a single-hctx nullb (irqmode=1)
//   with hw_queue_depth 2..64, v6.1 wake-ups vs today's; and
//   BM_NullbIopsShared: 20 hctx sharing one tag bitmap, 2 x N submitters.
//   A summary prints today/v6.1 per depth.
// - BM_NullbIopsPaired/<depth>/<shared>: the same two schemes alternating
//   (ABBA) for UKERN_NULLB_ROUNDS rounds in one benchmark: median IOPS and
//   median per-round ratio, the stable form of the comparison.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/sbitmap.h>
#include <uk/shim/cpu.h>
#include <uk/shim/ctxsw.h>

#include "benchmain.h"

namespace {

using uk::bench::Median;

struct block_device *LoadNullb(const char *params) {
  null_exit();
  null_blk_reset_module_params();
  if (null_blk_module_params(params) || null_init()) {
    std::fprintf(stderr, "nullb: cannot create device with '%s'\n", params);
    std::abort();
  }
  return uk::blkdev_lookup("nullb0");
}

void Unload(struct block_device *b) {
  uk::blkdev_put(b);
  null_exit();
  null_blk_reset_module_params();
}

void count_done(void *priv, long res) { ++*static_cast<long *>(priv); }

void BM_NullbIoIrqmode0(benchmark::State &state) {
  struct block_device *b =
      LoadNullb("irqmode=0 submit_queues=1 poll_queues=0 gb=1");
  alignas(4096) static char buf[4096];
  struct iovec iov = {buf, sizeof(buf)};
  long done = 0;
  loff_t pos = 0;
  for (auto _ : state) {
    blkdev_rw(b, pos, &iov, 1, BLKDEV_RW_WRITE, count_done, &done);
    pos = (pos + 4096) & ((1 << 28) - 1);
  }
  if (done != (long)state.iterations()) state.SkipWithError("lost completions");
  Unload(b);
}
BENCHMARK(BM_NullbIoIrqmode0);

void bio_done(struct bio *bio) { ++*static_cast<long *>(bio->bi_private); }

// Re-initializes a reused one-vec bio as a 4 KiB write of `buf` at `sector`.
void PrepWrite(struct bio *bio, struct block_device *b, char *buf,
               sector_t sector, long *done) {
  bio_reset(bio, b, REQ_OP_WRITE);
  __bio_add_page(bio, virt_to_page(buf), 4096, 0);
  bio->bi_iter.bi_sector = sector;
  bio->bi_end_io = bio_done;
  bio->bi_private = done;
}

void BM_NullbBioIrqmode0(benchmark::State &state) {
  struct block_device *b =
      LoadNullb("irqmode=0 submit_queues=1 poll_queues=0 gb=1");
  alignas(4096) static char buf[4096];
  struct bio *bio = bio_alloc(b, 1, REQ_OP_WRITE, GFP_KERNEL);
  long done = 0;
  sector_t sector = 0;
  for (auto _ : state) {
    PrepWrite(bio, b, buf, sector, &done);
    submit_bio(bio);
    sector = (sector + 8) & ((1 << 19) - 1);
  }
  if (done != (long)state.iterations()) state.SkipWithError("lost completions");
  bio_put(bio);
  Unload(b);
}
BENCHMARK(BM_NullbBioIrqmode0);

// `batch` bios at a time under a plug sized for them
// (blk_start_plug_nr_ios): one batched tag allocation, one ->queue_rqs() per
// batch. Unpolled, each request ends inside null_queue_rq (irqmode=0), one by
// one. Polled (REQ_POLLED, on the poll queue), as io_uring drives a polled
// null_blk: one poll per batch gathers them on an io_comp_batch and
// blk_mq_end_request_batch() ends them with one batched tag free.
// ns_per_op is per I/O.
void RunPlugged(benchmark::State &state, bool polled) {
  const int batch = static_cast<int>(state.range(0));
  struct block_device *b =
      LoadNullb(polled ? "irqmode=0 submit_queues=1 poll_queues=1 gb=1"
                       : "irqmode=0 submit_queues=1 poll_queues=0 gb=1");
  alignas(4096) static char buf[4096];
  std::vector<struct bio *> bios(batch);
  for (auto &bio : bios) bio = bio_alloc(b, 1, REQ_OP_WRITE, GFP_KERNEL);
  long done = 0;
  sector_t sector = 0;
  for (auto _ : state) {
    struct blk_plug plug;
    blk_start_plug_nr_ios(&plug, batch);
    for (struct bio *bio : bios) {
      PrepWrite(bio, b, buf, sector, &done);
      if (polled) bio->bi_opf |= REQ_POLLED;
      submit_bio(bio);
      sector = (sector + 8) & ((1 << 19) - 1);
    }
    blk_finish_plug(&plug);
    if (polled) {
      DEFINE_IO_COMP_BATCH(iob);
      bio_poll(bios[0], &iob, 0);
      if (!rq_list_empty(&iob.req_list)) iob.complete(&iob);
    }
  }
  if (done != (long)state.iterations() * batch)
    state.SkipWithError("lost completions");
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * batch,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  for (struct bio *bio : bios) bio_put(bio);
  Unload(b);
}

void BM_NullbBioPlugged(benchmark::State &state) { RunPlugged(state, false); }
BENCHMARK(BM_NullbBioPlugged)->Arg(1)->Arg(8)->Arg(16)->Arg(32);

void BM_NullbPolledBatch(benchmark::State &state) { RunPlugged(state, true); }
BENCHMARK(BM_NullbPolledBatch)->Arg(1)->Arg(8)->Arg(16)->Arg(32);

unsigned Submitters() { return uk::bench::DefaultSubmitters(); }

// One submitter keeping `qd` writes in flight until `stop`.
struct Submitter {
  std::atomic<int> inflight{0};
  std::atomic<long> completed{0};
};

void sub_done(void *priv, long res) {
  Submitter *s = static_cast<Submitter *>(priv);
  s->completed.fetch_add(1, std::memory_order_relaxed);
  // The submitter sleeps at 64 (queue full) and, when draining, until 0:
  // wake it on both edges. Completions run on other threads with irqmode=1
  // (ksoftirqd), so a drain that waited for a change nobody notifies would
  // hang (it did: the "irqmode=1 stall" was this).
  int old = s->inflight.fetch_sub(1, std::memory_order_release);
  if (old == 64 || old == 1) s->inflight.notify_one();
}

struct IopsResult {
  double iops = 0;
  double wakeups_per_kio = 0;
  long rescues = 0;  // watchdog wake_alls needed to end the run: lost wake-ups
};

// The tag bitmap I/O allocates from (the shared one for shared tags).
struct sbitmap_queue *TagBitmap(struct block_device *b) {
  struct request_queue *q = bdev_get_queue(b);
  struct blk_mq_tags *tags = q->tag_set->shared_tags ? q->tag_set->shared_tags
                                                     : q->queue_hw_ctx[0]->tags;
  return &tags->bitmap_tags;
}

IopsResult RunIops(struct block_device *b, unsigned nthreads, bool pin,
                   double seconds) {
  std::vector<Submitter> subs(nthreads);
  std::atomic<bool> stop{false};
  std::atomic<unsigned> finished{0};
  std::vector<std::thread> ts;
  const u64 span_blocks = (uk::blkdev_size(b) >> 12) - 1;
  uk::CtxswCounts c0 = uk::ctxsw_counts_process();
  auto t0 = std::chrono::steady_clock::now();
  for (unsigned t = 0; t < nthreads; t++) {
    ts.emplace_back([&, t] {
      if (pin) uk::pin_thread_to_cpu(t % nr_cpu_ids);
      alignas(4096) static thread_local char buf[4096];
      struct iovec iov = {buf, sizeof(buf)};
      Submitter &s = subs[t];
      u64 x = 88172645463325252ULL + t;
      while (!stop.load(std::memory_order_relaxed)) {
        int cur = s.inflight.load(std::memory_order_acquire);
        if (cur >= 64) {
          s.inflight.wait(cur, std::memory_order_acquire);
          continue;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.inflight.fetch_add(1, std::memory_order_relaxed);
        ssize_t r = blkdev_rw(b, (loff_t)(x % span_blocks) << 12, &iov, 1,
                              BLKDEV_RW_WRITE, sub_done, &s);
        if (r != -EIOCBQUEUED) std::abort();
      }
      for (int cur; (cur = s.inflight.load(std::memory_order_acquire)) != 0;)
        s.inflight.wait(cur, std::memory_order_acquire);
      if (pin) uk::pin_thread_to_cpu(-1);
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  std::this_thread::sleep_for(
      std::chrono::duration<double>(seconds));  // the measured interval
  long n0 = 0;
  for (auto &s : subs) n0 += s.completed.load();
  double el =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  stop = true;
  for (auto &s : subs) s.inflight.notify_all();
  // Watchdog: blk_mq_get_tag() sleeps without a timeout, as in the kernel,
  // so a lost wake-up (the v6.1 scheme's flaw) strands a submitter for good.
  // After a grace second, kick every wait queue of the tag bitmap until all
  // submitters are done, and count the kicks: each one ended a stranded wait.
  long rescues = 0;
  auto t_stop = std::chrono::steady_clock::now();
  while (finished.load(std::memory_order_acquire) < nthreads) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // polling, not sync
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_stop)
            .count();
    if (waited > 1.0) {
      sbitmap_queue_wake_all(TagBitmap(b));
      rescues++;
    }
    if (waited > 60.0) {
      fprintf(stderr, "nullb bench: submitters still stuck after 60 s\n");
      std::abort();
    }
  }
  for (auto &t : ts) t.join();
  uk::CtxswCounts c = uk::ctxsw_counts_process() - c0;
  IopsResult r;
  r.rescues = rescues;
  r.iops = n0 / el;
  r.wakeups_per_kio = n0 ? 1000.0 * c.voluntary / n0 : 0;
  return r;
}

std::map<std::pair<int, int>, std::map<int, IopsResult>>
    g_best;  // (shared, depth) -> scheme

void SetScheme(struct block_device *b, int scheme) {
  sbitmap_queue_set_wake_scheme(TagBitmap(b), (enum sbq_wake_scheme)scheme);
}

// irqmode for the IOPS runs: UKERN_NULLB_IRQMODE (default 0; the modes are in docs/null_blk.md).
int IrqMode() {
  const char *e = getenv("UKERN_NULLB_IRQMODE");
  return e ? atoi(e) : 0;
}

double Seconds() { return uk::bench::full ? 2.0 : 0.25; }

// null_blk parameters of the IOPS cases: one hctx, or 20 sharing one tag
// bitmap (the caller sets nr_cpu_ids to 20 for those).
std::string IopsParams(int depth, bool shared) {
  char params[200];
  snprintf(
      params, sizeof(params),
      "irqmode=%d %ssubmit_queues=%d poll_queues=0 gb=16 hw_queue_depth=%d",
      IrqMode(), shared ? "shared_tag_bitmap=1 " : "", shared ? 20 : 1, depth);
  return params;
}

void BM_NullbIops(benchmark::State &state) {
  const int depth = state.range(0), scheme = state.range(1);
  const std::string params = IopsParams(depth, false);
  IopsResult r;
  for (auto _ : state) {
    struct block_device *b = LoadNullb(params.c_str());
    SetScheme(b, scheme);
    r = RunIops(b, Submitters(), false, Seconds());
    Unload(b);
    state.SetIterationTime(Seconds());
  }
  state.counters["submitters"] = Submitters();
  state.counters["lost_wakeup_rescues"] = r.rescues;
  state.counters["iops"] = r.iops;
  state.counters["wakeups_per_kio"] = r.wakeups_per_kio;
  state.SetLabel(scheme == SBQ_WAKE_V61 ? "v6.1" : "today");
  IopsResult &best = g_best[{0, depth}][scheme];
  if (r.iops > best.iops) best = r;
}

void BM_NullbIopsShared(benchmark::State &state) {
  const int depth = state.range(0), scheme = state.range(1);
  const unsigned saved = nr_cpu_ids;
  uk::set_nr_cpu_ids(20);
  const std::string params = IopsParams(depth, true);
  IopsResult r;
  for (auto _ : state) {
    struct block_device *b = LoadNullb(params.c_str());
    SetScheme(b, scheme);
    r = RunIops(b, 2 * Submitters(), true, Seconds());
    Unload(b);
    state.SetIterationTime(Seconds());
  }
  uk::set_nr_cpu_ids(saved);
  state.counters["submitters"] = 2 * Submitters();
  state.counters["lost_wakeup_rescues"] = r.rescues;
  state.counters["iops"] = r.iops;
  state.counters["wakeups_per_kio"] = r.wakeups_per_kio;
  state.SetLabel(scheme == SBQ_WAKE_V61 ? "v6.1" : "today");
  IopsResult &best = g_best[{1, depth}][scheme];
  if (r.iops > best.iops) best = r;
}

void BM_NullbIopsSummary(benchmark::State &state) {
  for (auto _ : state) {
  }
  static bool printed;
  if (printed) return;
  printed = true;
  for (int shared : {0, 1}) {
    std::printf(
        "\nnullb %s, %u submitters x 64 in flight, 4 KiB random writes, "
        "irqmode=%d "
        "(best IOPS of the repetitions)\n",
        shared ? "20 hctx sharing one tag bitmap" : "single hctx",
        shared ? 2 * Submitters() : Submitters(), IrqMode());
    std::printf("%6s %12s %12s %10s %14s %14s\n", "depth", "v6.1", "today",
                "today/v6.1", "v6.1 wk/kIO", "today wk/kIO");
    for (auto &[key, m] : g_best) {
      if (key.first != shared) continue;
      IopsResult o = m[SBQ_WAKE_V61], n = m[SBQ_WAKE_CURRENT];
      std::printf("%6d %12.0f %12.0f %10.3f %14.1f %14.1f\n", key.second,
                  o.iops, n.iops, o.iops > 0 ? n.iops / o.iops : 0.0,
                  o.wakeups_per_kio, n.wakeups_per_kio);
    }
  }
  std::fflush(stdout);
}

// Rounds of BM_NullbIopsPaired: UKERN_NULLB_ROUNDS (default 5).
int Rounds() {
  const char *e = getenv("UKERN_NULLB_ROUNDS");
  int n = e ? atoi(e) : 5;
  return n > 0 ? n : 5;
}

struct PairedResult {
  double v61 = 0, today = 0, ratio = 0, ratio_lo = 0, ratio_hi = 0;
};
std::map<std::pair<int, int>, PairedResult> g_paired;  // (shared, depth)

// The ratio measurement: v6.1 and today's scheme alternate within one
// benchmark, Rounds() rounds, each pair in swapped order every other round
// (ABBA), so load that drifts during the run hits both alike. Reports the
// median IOPS of each scheme and the median of the per-round ratios.
void BM_NullbIopsPaired(benchmark::State &state) {
  const int depth = state.range(0), shared = state.range(1);
  const unsigned saved = nr_cpu_ids;
  const unsigned nsub = shared ? 2 * Submitters() : Submitters();
  const std::string params = IopsParams(depth, shared);
  if (shared) uk::set_nr_cpu_ids(20);
  std::vector<double> v61, today, ratio;
  for (auto _ : state) {
    for (int round = 0; round < Rounds(); round++) {
      double iops[2] = {0, 0};
      for (int k = 0; k < 2; k++) {
        const int scheme = (k ^ (round & 1)) ? SBQ_WAKE_CURRENT : SBQ_WAKE_V61;
        struct block_device *b = LoadNullb(params.c_str());
        SetScheme(b, scheme);
        iops[scheme == SBQ_WAKE_CURRENT] =
            RunIops(b, nsub, shared, Seconds()).iops;
        Unload(b);
      }
      v61.push_back(iops[0]);
      today.push_back(iops[1]);
      ratio.push_back(iops[0] > 0 ? iops[1] / iops[0] : 0);
    }
    state.SetIterationTime(2 * Seconds() * Rounds());
  }
  if (shared) uk::set_nr_cpu_ids(saved);
  PairedResult &r = g_paired[{shared, depth}];
  r.v61 = Median(v61);
  r.today = Median(today);
  r.ratio = Median(ratio);
  r.ratio_lo = *std::min_element(ratio.begin(), ratio.end());
  r.ratio_hi = *std::max_element(ratio.begin(), ratio.end());
  state.counters["submitters"] = nsub;
  state.counters["v61_iops"] = r.v61;
  state.counters["today_iops"] = r.today;
  state.counters["today_over_v61"] = r.ratio;
  state.counters["ratio_min"] = r.ratio_lo;
  state.counters["ratio_max"] = r.ratio_hi;
}

void BM_NullbIopsPairedSummary(benchmark::State &state) {
  for (auto _ : state) {
  }
  static bool printed;
  if (printed || g_paired.empty()) return;
  printed = true;
  std::printf(
      "\nnullb paired runs, irqmode=%d, %d rounds of %.2f s per scheme "
      "(medians; ratio = median of per-round today/v6.1)\n",
      IrqMode(), Rounds(), Seconds());
  std::printf("%8s %6s %12s %12s %10s %10s %10s\n", "case", "depth", "v6.1",
              "today", "today/v6.1", "min", "max");
  for (auto &[key, r] : g_paired)
    std::printf("%8s %6d %12.0f %12.0f %10.3f %10.3f %10.3f\n",
                key.first ? "shared" : "single", key.second, r.v61, r.today,
                r.ratio, r.ratio_lo, r.ratio_hi);
  std::fflush(stdout);
}

void RegisterIops() {
  for (int depth : {2, 4, 8, 16, 32, 64})
    for (int scheme : {SBQ_WAKE_V61, SBQ_WAKE_CURRENT})
      benchmark::RegisterBenchmark("BM_NullbIops", BM_NullbIops)
          ->Args({depth, scheme})
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
  for (int depth : {2, 4, 8, 16, 32, 64})
    for (int scheme : {SBQ_WAKE_V61, SBQ_WAKE_CURRENT})
      benchmark::RegisterBenchmark("BM_NullbIopsShared", BM_NullbIopsShared)
          ->Args({depth, scheme})
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_NullbIopsSummary", BM_NullbIopsSummary)
      ->Iterations(1);
  for (int shared : {0, 1})
    for (int depth : {2, 4, 8, 16, 32, 64})
      benchmark::RegisterBenchmark("BM_NullbIopsPaired", BM_NullbIopsPaired)
          ->Args({depth, shared})
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_NullbIopsPairedSummary",
                               BM_NullbIopsPairedSummary)
      ->Iterations(1);
}
uk::bench::Registrar reg(RegisterIops);

}  // namespace
