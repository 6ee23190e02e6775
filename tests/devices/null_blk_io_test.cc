// SPDX-License-Identifier: GPL-2.0-only
// null_blk's I/O path end to end: block-device file -> bio -> blk-mq ->
// null_queue_rq -> completion by irqmode -> bio_endio -> callback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/err.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/hardirq.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/shim/clock.h>

#include "../../blk/blk-mq.h"
#include "nullb_fixture.h"
#include "testmain.h"

namespace {

using uk::testing::WaitFor;

// What one asynchronous I/O saw when it completed.
struct Io {
  std::atomic<int> calls{0};
  long res = 0;
  bool hardirq = false;
  bool softirq = false;
  int cpu = -1;
  std::thread::id thread;
  int order = -1;
};

std::atomic<int> g_order{0};

// Direct I/O buffers: 512-byte (here page) aligned, as O_DIRECT requires.
struct Buf {
  unsigned char *p;
  explicit Buf(size_t n)
      : p(static_cast<unsigned char *>(aligned_alloc(4096, n))) {}
  ~Buf() { free(p); }
};

void io_done(void *priv, long res) {
  Io *io = static_cast<Io *>(priv);
  io->res = res;
  io->hardirq = in_irq();
  io->softirq = in_serving_softirq();
  io->cpu = smp_processor_id();
  io->thread = std::this_thread::get_id();
  io->order = g_order++;
  io->calls.fetch_add(1, std::memory_order_release);
}

class NullBlkIoTest : public uk::testing::NullbIoTest<Io, io_done> {
 protected:
  void SetUp() override {
    if (nr_cpu_ids < 2) GTEST_SKIP() << "needs two virtual CPUs";
    null_blk_reset_module_params();
    g_order = 0;
  }
};

TEST_F(NullBlkIoTest, LookupByNameAndPath) {
  struct block_device *b = Load("irqmode=0 gb=1");
  ASSERT_NE(b, nullptr);
  struct block_device *b2 = uk::blkdev_lookup("/dev/ukern/nullb0");
  EXPECT_EQ(b2, b);
  uk::blkdev_put(b2);
  EXPECT_EQ(uk::blkdev_lookup("nullb7"), nullptr);
  EXPECT_EQ(uk::blkdev_size(b), 1ULL << 30);
  // Misaligned, out of range.
  alignas(4096) char buf[4096] = {};
  EXPECT_EQ(Rw(b, false, 100, buf, 512), -EINVAL);
  EXPECT_EQ(Rw(b, false, 0, buf, 100), -EINVAL);
  EXPECT_EQ(Rw(b, false, 1LL << 30, buf, 512), 0);
  EXPECT_EQ(Rw(b, true, 1LL << 30, buf, 512), -ENOSPC);
  EXPECT_EQ(Rw(b, false, (1LL << 30) - 512, buf, 4096), 512);  // truncated
  // Buffers must be 512-byte aligned in address and length (dma alignment).
  EXPECT_EQ(Rw(b, false, 0, buf + 8, 512), -EINVAL);
  struct iovec iov[2] = {{buf, 100}, {buf + 512, 412}};
  EXPECT_EQ(blkdev_rw(b, 0, iov, 2, 0, nullptr, nullptr), -EINVAL);
}

// irqmode=0: the request ends inside null_queue_rq, in the submitter.
TEST_F(NullBlkIoTest, IrqmodeNoneCompletesInSubmitter) {
  struct block_device *b = Load("irqmode=0 gb=1");
  alignas(4096) char buf[4096];
  Io io;
  EXPECT_EQ(Rw(b, true, 4096, buf, sizeof(buf), 0, &io), -EIOCBQUEUED);
  ASSERT_EQ(io.calls.load(), 1);  // already done when blkdev_rw returned
  EXPECT_EQ(io.res, 4096);
  EXPECT_FALSE(io.hardirq);
  EXPECT_FALSE(io.softirq);
  EXPECT_EQ(io.thread, std::this_thread::get_id());
  EXPECT_EQ(Rw(b, false, 0, buf, sizeof(buf)), 4096);
}

// irqmode=1 with one hw queue: BLOCK_SOFTIRQ on the submitting CPU. In
// deterministic mode nothing runs until the test runs that CPU's softirqs,
// and then in submission order.
TEST_F(NullBlkIoTest, IrqmodeSoftirqDeterministic) {
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=1 submit_queues=1 poll_queues=0 gb=1");
  uk::pin_thread_to_cpu(1);
  alignas(4096) static char buf[8][512];
  Io io[8];
  for (int i = 0; i < 8; i++)
    ASSERT_EQ(Rw(b, i & 1, 512 * (7 - i), buf[i], 512, 0, &io[i]),
              -EIOCBQUEUED);
  for (auto &x : io)
    EXPECT_EQ(x.calls.load(), 0) << "completed before the softirq ran";
  EXPECT_TRUE(uk::softirq_pending(1) & (1u << BLOCK_SOFTIRQ));
  uk::softirq_run_pending(1);
  for (int i = 0; i < 8; i++) {
    ASSERT_EQ(io[i].calls.load(), 1);
    EXPECT_EQ(io[i].res, 512);
    EXPECT_TRUE(io[i].softirq);
    EXPECT_FALSE(io[i].hardirq);
    EXPECT_EQ(io[i].cpu, 1);
    EXPECT_EQ(io[i].order, i);
  }
}

// irqmode=1 with the default threads: ksoftirqd of the CPU completes.
TEST_F(NullBlkIoTest, IrqmodeSoftirqThreads) {
  struct block_device *b = Load("irqmode=1 submit_queues=1 poll_queues=0 gb=1");
  uk::pin_thread_to_cpu(0);
  alignas(4096) char buf[4096];
  Io io;
  ASSERT_EQ(Rw(b, false, 0, buf, sizeof(buf), 0, &io), -EIOCBQUEUED);
  ASSERT_TRUE(
      WaitFor([&] { return io.calls.load(std::memory_order_acquire) == 1; }));
  EXPECT_TRUE(io.softirq);
  EXPECT_EQ(io.cpu, 0);
  EXPECT_EQ(io.res, 4096);
  // Synchronous I/O waits for it.
  EXPECT_EQ(Rw(b, true, 0, buf, sizeof(buf)), 4096);
}

// irqmode=2: one hrtimer per command, fired in hardirq context after
// completion_nsec, in deadline order on the virtual clock.
TEST_F(NullBlkIoTest, IrqmodeTimerDeterministicOrder) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=2 completion_nsec=10000 gb=1");
  uk::pin_thread_to_cpu(0);
  alignas(4096) static char buf[4][512];
  Io io[4];
  // Submitted at t, t+2us, t+4us, t+6us: due at +10, +12, +14, +16 us.
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(Rw(b, false, 0, buf[i], 512, 0, &io[i]), -EIOCBQUEUED);
    if (i < 3) uk::virtual_clock_advance(2000);
  }
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 0);
  uk::virtual_clock_advance(6000);  // now t+12us: two due
  EXPECT_EQ(io[0].calls.load(), 1);
  EXPECT_EQ(io[1].calls.load(), 1);
  EXPECT_EQ(io[2].calls.load(), 0);
  uk::virtual_clock_advance(4000);
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(io[i].calls.load(), 1);
    EXPECT_TRUE(io[i].hardirq);
    EXPECT_EQ(io[i].cpu, 0);
    EXPECT_EQ(io[i].order, i);
  }
}

// Data written through the whole path reads back, at every block size,
// with random offsets and lengths, several bios per I/O.
class NullBlkIoBsTest : public NullBlkIoTest,
                        public ::testing::WithParamInterface<int> {};

TEST_P(NullBlkIoBsTest, MemoryBackedIntegrity) {
  const int bs = GetParam();
  char params[160];
  snprintf(
      params, sizeof(params),
      "memory_backed=1 bs=%d gb=1 irqmode=1 submit_queues=2 max_sectors=64",
      bs);
  struct block_device *b = Load(params);
  const size_t span = 1 << 20;
  std::vector<unsigned char> shadow(span, 0);
  Buf bbuf(128 << 10), brd(128 << 10);
  unsigned char *buf = bbuf.p, *rd = brd.p;
  std::mt19937 rng(bs);
  for (int i = 0; i < 200; i++) {
    size_t blocks = 1 + rng() % ((64 << 10) / bs);
    size_t len = blocks * bs;
    loff_t pos = (rng() % ((span - len) / bs)) * bs;
    // Unaligned buffer start: segments cross pages.
    size_t off = (rng() % 8) * bs;  // block aligned, not page aligned
    if (rng() % 2) {
      for (size_t j = 0; j < len; j++) buf[off + j] = rng();
      ASSERT_EQ(Rw(b, true, pos, &buf[off], len), (ssize_t)len);
      memcpy(&shadow[pos], &buf[off], len);
    } else {
      ASSERT_EQ(Rw(b, false, pos, &rd[off], len), (ssize_t)len);
      ASSERT_EQ(memcmp(&rd[off], &shadow[pos], len), 0)
          << "pos " << pos << " len " << len;
    }
  }
  // Vectored, asynchronous, across the whole span.
  Buf ball(span);
  unsigned char *all = ball.p;
  struct iovec iov[3] = {{&all[0], 4096},
                         {&all[4096], span / 2 - 4096},
                         {&all[span / 2], span / 2}};
  Io io;
  ASSERT_EQ(blkdev_rw(b, 0, iov, 3, 0, io_done, &io), -EIOCBQUEUED);
  ASSERT_TRUE(
      WaitFor([&] { return io.calls.load(std::memory_order_acquire) == 1; }));
  EXPECT_EQ(io.res, (long)span);
  EXPECT_EQ(memcmp(all, shadow.data(), span), 0);
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, NullBlkIoBsTest,
                         ::testing::Values(512, 1024, 2048, 4096));

// shared_tags: two devices, one tag set; the second queue turns on fair
// sharing on both.
TEST_F(NullBlkIoTest, SharedTagsAcrossDevices) {
  struct block_device *b0 =
      Load("shared_tags=1 nr_devices=2 irqmode=0 gb=1 hw_queue_depth=8");
  struct block_device *b1 = Open("nullb1");
  ASSERT_TRUE(b0 && b1);
  struct request_queue *q0 = bdev_get_queue(b0), *q1 = bdev_get_queue(b1);
  EXPECT_EQ(q0->tag_set, q1->tag_set);
  EXPECT_EQ(q0->queue_hw_ctx[0]->tags, q1->queue_hw_ctx[0]->tags);
  EXPECT_TRUE(q0->queue_hw_ctx[0]->flags & BLK_MQ_F_TAG_QUEUE_SHARED);
  EXPECT_TRUE(q1->queue_hw_ctx[0]->flags & BLK_MQ_F_TAG_QUEUE_SHARED);
  alignas(4096) char buf[4096];
  for (int i = 0; i < 50; i++) {
    EXPECT_EQ(Rw(i & 1 ? b1 : b0, true, i * 4096, buf, 4096), 4096);
  }
  EXPECT_EQ(q0->queue_hw_ctx[0]->tags->active_queues, 2u);
}

// shared_tag_bitmap: 20 hw queues, one bitmap; I/O from every CPU.
TEST_F(NullBlkIoTest, HctxSharedBitmap) {
  const unsigned saved = nr_cpu_ids;
  uk::set_nr_cpu_ids(20);
  {
    struct block_device *b = Load(
        "shared_tag_bitmap=1 submit_queues=20 poll_queues=0 irqmode=1 gb=1 "
        "hw_queue_depth=16");
    struct request_queue *q = bdev_get_queue(b);
    ASSERT_EQ(q->nr_hw_queues, 20u);
    struct blk_mq_tags *shared = q->tag_set->shared_tags;
    ASSERT_NE(shared, nullptr);
    for (unsigned i = 0; i < q->nr_hw_queues; i++) {
      EXPECT_EQ(q->queue_hw_ctx[i]->tags, shared);
      EXPECT_EQ(q->queue_hw_ctx[i]->nr_ctx, 1);
    }
    std::vector<std::thread> ts;
    std::atomic<int> ok{0};
    for (int cpu = 0; cpu < 20; cpu++) {
      ts.emplace_back([&, cpu] {
        uk::pin_thread_to_cpu(cpu);
        alignas(4096) char buf[512];
        for (int i = 0; i < 20; i++)
          if (Rw(b, i & 1, (cpu * 20 + i) * 512, buf, 512) == 512) ok++;
        uk::pin_thread_to_cpu(-1);
      });
    }
    for (auto &t : ts) t.join();
    EXPECT_EQ(ok.load(), 400);
    EXPECT_EQ(sbitmap_weight(&shared->bitmap_tags.sb), 0u);
    for (auto *x : bdevs_) uk::blkdev_put(x);
    bdevs_.clear();
    null_exit();
  }
  uk::set_nr_cpu_ids(saved);
}

// requeue fault injection: BLK_STS_RESOURCE (re-run) and driver requeues
// alternate; every request still completes exactly once.
TEST_F(NullBlkIoTest, RequeueInjectionCompletesEachOnce) {
  struct block_device *b =
      Load("requeue=1,50,0,60 irqmode=1 hw_queue_depth=8 gb=1");
  const int n = 300;
  std::vector<Io> io(n);
  alignas(4096) static char buf[512];
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, i & 1, (i % 64) * 512, buf, 512, 0, &io[i]), -EIOCBQUEUED);
  ASSERT_TRUE(WaitFor([&] {
    for (auto &x : io)
      if (x.calls.load(std::memory_order_acquire) == 0) return false;
    return true;
  }));
  if (kblockd_workqueue) flush_workqueue(kblockd_workqueue);
  for (auto &x : io) {
    EXPECT_EQ(x.calls.load(), 1);
    EXPECT_EQ(x.res, 512);
  }
  struct nullb *nb = null_lookup_dev("nullb0");
  EXPECT_EQ(atomic_read(&nb->dev->requeue_config.attr.times), 0)
      << "injections not used up";
  // One increment per injection, but a plain one: ->queue_rq() of the
  // queue runs on the submitter and on kblockd at once, and as in the
  // kernel a concurrent dispatch can lose an increment.
  EXPECT_GT(nb->queues[0].requeue_selection, 0u);
  EXPECT_LE(nb->queues[0].requeue_selection, 60u);
}

// timeout fault injection: faked-lost requests are completed by the
// timeout handler with -ETIMEDOUT, exactly once, after ->timeout (5 s).
TEST_F(NullBlkIoTest, TimeoutInjectionCompletesEachOnce) {
  uk::clock_use_virtual();
  struct block_device *b = Load("timeout=1,100,0,3 irqmode=0 gb=1");
  const int n = 10;
  std::vector<Io> io(n);
  alignas(4096) static char buf[512];
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, false, i * 512, buf, 512, 0, &io[i]), -EIOCBQUEUED);
  for (int i = 0; i < 3; i++) EXPECT_EQ(io[i].calls.load(), 0);
  for (int i = 3; i < n; i++) EXPECT_EQ(io[i].calls.load(), 1);
  uk::virtual_clock_advance(4ULL * 1000 * 1000 * 1000);
  flush_workqueue(kblockd_workqueue);
  for (int i = 0; i < 3; i++)
    EXPECT_EQ(io[i].calls.load(), 0) << "timed out too early";
  uk::virtual_clock_advance(3ULL * 1000 * 1000 * 1000);
  flush_workqueue(kblockd_workqueue);
  ASSERT_TRUE(WaitFor(
      [&] { return io[2].calls.load(std::memory_order_acquire) == 1; }));
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(io[i].calls.load(), 1);
    EXPECT_EQ(io[i].res, -ETIMEDOUT);
  }
  uk::virtual_clock_advance(10ULL * 1000 * 1000 * 1000);
  flush_workqueue(kblockd_workqueue);
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 1);
}

// A real (slow) request that times out completes once, with the error.
TEST_F(NullBlkIoTest, SlowRequestTimesOutOnce) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=2 completion_nsec=8000000000 gb=1");
  uk::pin_thread_to_cpu(0);
  alignas(4096) static char buf[512];
  Io io;
  ASSERT_EQ(Rw(b, false, 0, buf, 512, 0, &io), -EIOCBQUEUED);
  uk::virtual_clock_advance(7ULL * 1000 * 1000 * 1000);
  flush_workqueue(
      kblockd_workqueue);  // the timeout handler ran: error set, not completed
  EXPECT_EQ(io.calls.load(), 0);
  uk::virtual_clock_advance(2ULL * 1000 * 1000 * 1000);
  ASSERT_EQ(io.calls.load(), 1);
  EXPECT_EQ(io.res, -ETIMEDOUT);
}

// Freeze waits for in-flight I/O; I/O submitted while frozen waits for
// the unfreeze.
TEST_F(NullBlkIoTest, FreezeWaitsForInFlight) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=2 completion_nsec=1000000 gb=1");
  struct request_queue *q = bdev_get_queue(b);
  uk::pin_thread_to_cpu(0);
  alignas(4096) static char buf[4][512];
  Io io[4];
  for (int i = 0; i < 4; i++)
    ASSERT_EQ(Rw(b, true, i * 512, buf[i], 512, 0, &io[i]), -EIOCBQUEUED);

  std::atomic<struct task_struct *> freezer{nullptr};
  std::atomic<bool> frozen{false};
  std::thread f([&] {
    freezer = get_current();
    blk_mq_freeze_queue(q);
    frozen = true;
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(freezer));
  EXPECT_FALSE(frozen.load());
  uk::virtual_clock_advance(1000000);  // the four complete
  f.join();
  EXPECT_TRUE(frozen.load());
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 1);

  std::atomic<struct task_struct *> submitter{nullptr};
  std::atomic<ssize_t> got{-1};
  std::thread s([&] {
    submitter = get_current();
    alignas(4096) char sbuf[512];
    got = Rw(b, false, 0, sbuf,
             512);  // sync: waits in bio_queue_enter, then for its timer
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(submitter));
  EXPECT_EQ(got.load(), -1);
  blk_mq_unfreeze_queue(q);
  // It enters, issues, and waits for its hrtimer: fire it.
  ASSERT_TRUE(WaitFor([&] {
    uk::virtual_clock_advance(1000000);
    return got.load() != -1;
  }));
  s.join();
  EXPECT_EQ(got.load(), 512);
}

// Quiesce: requests wait in the software queue until unquiesce.
TEST_F(NullBlkIoTest, QuiesceHoldsDispatch) {
  struct block_device *b = Load("irqmode=0 gb=1");
  struct request_queue *q = bdev_get_queue(b);
  blk_mq_quiesce_queue(q);
  alignas(4096) static char buf[3][512];
  Io io[3];
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(Rw(b, false, 0, buf[i], 512, 0, &io[i]), -EIOCBQUEUED);
  blk_mq_run_hw_queues(q, false);
  flush_workqueue(kblockd_workqueue);
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 0);
  blk_mq_unquiesce_queue(q);
  ASSERT_TRUE(WaitFor([&] {
    for (auto &x : io)
      if (x.calls.load(std::memory_order_acquire) == 0) return false;
    return true;
  }));
  for (auto &x : io) EXPECT_EQ(x.res, 512);
}

// mbps: I/O past the tick's budget stops the queue (BLK_STS_DEV_RESOURCE)
// until the bandwidth timer refills it.
TEST_F(NullBlkIoTest, ThrottlingStallsUntilRefill) {
  uk::clock_use_virtual();
  struct block_device *b = Load("mbps=1 irqmode=0 gb=1");
  // 1 MiB/s = 20971 bytes per 20 ms tick: five 4 KiB writes per tick.
  const int n = 12;
  alignas(4096) static char buf[n][4096];
  std::vector<Io> io(n);
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, true, i * 4096, buf[i], 4096, 0, &io[i]), -EIOCBQUEUED);
  auto done = [&] {
    int c = 0;
    for (auto &x : io) c += x.calls.load(std::memory_order_acquire);
    return c;
  };
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(done(), 5);
  EXPECT_TRUE(blk_mq_queue_stopped(bdev_get_queue(b)));
  uk::virtual_clock_advance(20 * 1000 * 1000);
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(done(), 10);
  uk::virtual_clock_advance(20 * 1000 * 1000);
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(done(), 12);
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 1);
  // The tick after the last writes refills the budget; the one after that
  // finds it untouched and stops the timer. The next request restarts it.
  struct nullb *nb = null_lookup_dev("nullb0");
  uk::virtual_clock_advance(20 * 1000 * 1000);
  EXPECT_TRUE(hrtimer_active(&nb->bw_timer));
  uk::virtual_clock_advance(20 * 1000 * 1000);
  EXPECT_FALSE(hrtimer_active(&nb->bw_timer));
  Io last;
  ASSERT_EQ(Rw(b, true, 0, buf[0], 4096, 0, &last), -EIOCBQUEUED);
  EXPECT_EQ(last.calls.load(), 1);
  EXPECT_EQ(last.res, 4096);
  EXPECT_TRUE(hrtimer_active(&nb->bw_timer));
  EXPECT_EQ(atomic_long_read(&nb->cur_bytes), (1 << 20) / 50 - 4096);
}

// Bad blocks met by requests: with badblocks_partial_io the blocks in front
// of the first bad one are written, read or discarded before the request
// fails, and badblocks_once clears the range each request hit.
TEST_F(NullBlkIoTest, BadblocksPartialIoThroughRequests) {
  struct nullb_device *dev = nullb_group_make("badio");
  ASSERT_FALSE(IS_ERR(dev));
  auto set = [&](const char *name, const char *val) {
    EXPECT_EQ(nullb_attr_store(dev, name, val), (ssize_t)strlen(val)) << name;
  };
  set("memory_backed", "1");
  set("discard", "1");
  set("blocksize", "4096");
  set("size", "1");
  set("irqmode", "0");
  set("badblocks_partial_io", "1");
  set("badblocks_once", "1");
  set("badblocks", "+20-20");  // in the 4 KiB block at sector 16
  set("power", "1");
  struct block_device *b = Open("badio");
  ASSERT_NE(b, nullptr);
  Buf w(16384), r(16384);
  memset(w.p, 'x', 16384);
  // The first 8 KiB are written, then the request fails.
  EXPECT_EQ(Rw(b, true, 0, w.p, 16384), -EIO);
  memset(r.p, 0xee, 16384);
  EXPECT_EQ(Rw(b, false, 0, r.p, 16384), 16384);  // the range is clear
  for (int i = 0; i < 16384; i++) ASSERT_EQ(r.p[i], i < 8192 ? 'x' : 0) << i;
  // A read stops in front of the bad block as well.
  set("badblocks", "+16-16");
  memset(r.p, 0xee, 16384);
  EXPECT_EQ(Rw(b, false, 0, r.p, 16384), -EIO);
  for (int i = 0; i < 8192; i++) ASSERT_EQ(r.p[i], 'x') << i;
  // A discard frees the 8 KiB in front of it and fails.
  set("badblocks", "+16-16");
  struct bio *bio = bio_alloc(b, 0, REQ_OP_DISCARD, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  bio->bi_iter.bi_sector = 0;
  bio->bi_iter.bi_size = 16384;
  EXPECT_EQ(submit_bio_wait(bio), -EIO);
  bio_put(bio);
  memset(r.p, 0xee, 16384);
  EXPECT_EQ(Rw(b, false, 0, r.p, 16384), 16384);
  for (int i = 0; i < 16384; i++) ASSERT_EQ(r.p[i], 0) << i;
}

// Poll queues: a REQ_POLLED request waits on the poll hctx until polled.
TEST_F(NullBlkIoTest, PollQueue) {
  struct block_device *b = Load("poll_queues=1 submit_queues=1 irqmode=1 gb=1");
  struct request_queue *q = bdev_get_queue(b);
  ASSERT_EQ(q->nr_hw_queues, 2u);
  EXPECT_EQ(q->queue_hw_ctx[1]->type, HCTX_TYPE_POLL);
  EXPECT_TRUE(test_bit(QUEUE_FLAG_POLL, &q->queue_flags));
  alignas(4096) static char buf[2][512];
  Io io[2];
  for (int i = 0; i < 2; i++)
    ASSERT_EQ(Rw(b, false, 0, buf[i], 512, BLKDEV_RW_POLLED, &io[i]),
              -EIOCBQUEUED);
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 0);
  EXPECT_EQ(blk_mq_poll(q, 1, nullptr, 0), 2);
  for (auto &x : io) {
    EXPECT_EQ(x.calls.load(), 1);
    EXPECT_EQ(x.thread, std::this_thread::get_id());
    EXPECT_FALSE(x.softirq);
  }
  // Synchronous polled I/O polls for itself.
  EXPECT_EQ(Rw(b, false, 0, buf[0], 512, BLKDEV_RW_POLLED), 512);
}

// Batched completion: ->poll() gathers what it completed on the poller's
// io_comp_batch, and blk_mq_end_request_batch() ends the bios, gives the tags
// back in one go and drops the queue usage references.
TEST_F(NullBlkIoTest, PollQueueBatchedCompletion) {
  struct block_device *b =
      Load("poll_queues=1 submit_queues=1 irqmode=1 gb=1 hw_queue_depth=8");
  struct request_queue *q = bdev_get_queue(b);
  struct blk_mq_tags *tags = q->queue_hw_ctx[1]->tags;
  constexpr int n = 6;
  alignas(4096) static char buf[n][512];
  Io io[n];
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, false, i * 512, buf[i], 512, BLKDEV_RW_POLLED, &io[i]),
              -EIOCBQUEUED);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), unsigned{n});

  DEFINE_IO_COMP_BATCH(iob);
  EXPECT_EQ(blk_mq_poll(q, 1, &iob, 0), n);
  EXPECT_EQ(iob.complete, blk_mq_end_request_batch);
  int gathered = 0;
  for (struct request *rq = iob.req_list.head; rq; rq = rq->rq_next) gathered++;
  EXPECT_EQ(gathered, n);
  for (auto &x : io) EXPECT_EQ(x.calls.load(), 0);  // gathered, not ended
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), unsigned{n});

  iob.complete(&iob);
  EXPECT_TRUE(rq_list_empty(&iob.req_list));
  for (auto &x : io) {
    EXPECT_EQ(x.calls.load(), 1);
    EXPECT_EQ(x.res, 512);
  }
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 0u);
  // A reference left behind would keep the freeze from finishing.
  blk_freeze_queue_start(q);
  EXPECT_GT(blk_mq_freeze_queue_wait_timeout(q, 5 * HZ), 0);
  blk_mq_unfreeze_queue(q);
}

// What blk_mq_add_to_batch() leaves to the caller: no batch, a failed
// request, one with ->end_io or scheduler tags, another ->complete.
TEST_F(NullBlkIoTest, AddToBatchRules) {
  struct request rq[5] = {};
  auto other = [](struct io_comp_batch *) {};
  DEFINE_IO_COMP_BATCH(iob);
  EXPECT_FALSE(
      blk_mq_add_to_batch(&rq[0], nullptr, false, blk_mq_end_request_batch));
  EXPECT_FALSE(
      blk_mq_add_to_batch(&rq[0], &iob, true, blk_mq_end_request_batch));
  rq[1].end_io = [](struct request *, blk_status_t) { return RQ_END_IO_NONE; };
  EXPECT_FALSE(
      blk_mq_add_to_batch(&rq[1], &iob, false, blk_mq_end_request_batch));
  rq[2].rq_flags = RQF_SCHED_TAGS;
  EXPECT_FALSE(
      blk_mq_add_to_batch(&rq[2], &iob, false, blk_mq_end_request_batch));
  EXPECT_TRUE(rq_list_empty(&iob.req_list));
  EXPECT_EQ(iob.complete, nullptr);

  EXPECT_TRUE(
      blk_mq_add_to_batch(&rq[0], &iob, false, blk_mq_end_request_batch));
  EXPECT_FALSE(blk_mq_add_to_batch(&rq[3], &iob, false, other));
  // A failed passthrough request still batches: its status is the driver's.
  rq[4].cmd_flags = REQ_OP_DRV_IN;
  EXPECT_TRUE(
      blk_mq_add_to_batch(&rq[4], &iob, true, blk_mq_end_request_batch));
  EXPECT_EQ(iob.req_list.head, &rq[0]);
  EXPECT_EQ(iob.req_list.tail, &rq[4]);
}

// A device deleted under an open block device fails new I/O.
TEST_F(NullBlkIoTest, DeletedDeviceFailsIo) {
  struct block_device *b = Load("irqmode=0 gb=1");
  null_exit();
  alignas(4096) char buf[512];
  EXPECT_EQ(Rw(b, false, 0, buf, 512), -ENODEV);
}

TEST_F(NullBlkIoTest, ConcurrentAsyncStress) {
  struct block_device *b =
      Load("irqmode=1 submit_queues=2 hw_queue_depth=4 gb=1");
  const unsigned nthreads = uk::testing::StressThreads();
  const int per = 400;
  std::atomic<long> completed{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < nthreads; t++) {
    ts.emplace_back([&, t] {
      std::vector<Io> io(per);
      alignas(4096) static thread_local char buf[512];
      for (int i = 0; i < per; i++)
        ASSERT_EQ(
            Rw(b, i & 1, ((t * per + i) % 1000) * 512, buf, 512, 0, &io[i]),
            -EIOCBQUEUED);
      ASSERT_TRUE(WaitFor([&] {
        for (auto &x : io)
          if (x.calls.load(std::memory_order_acquire) == 0) return false;
        return true;
      }));
      for (auto &x : io) {
        EXPECT_EQ(x.calls.load(), 1);
        EXPECT_EQ(x.res, 512);
      }
      completed += per;
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(completed.load(), (long)nthreads * per);
}

// The configuration the nullb IOPS benchmark reported as stalling with
// irqmode=1: one hw queue with 2 (then 8) tags, 2 x StressThreads() unpinned
// submitters each keeping up to 64 writes in flight, so most of them sleep
// in blk_mq_get_tag() while BLOCK_SOFTIRQ (ksoftirqd or irq exit) completes.
// Every I/O must complete; a stall fails on the deadline instead of hanging
// (the test process exits: in-flight I/O pins the device and the stack).
struct QdSubmitter {
  std::atomic<int> inflight{0};
  std::atomic<long> completed{0};
  std::atomic<long> errors{0};
};

void qd_done(void *priv, long res) {
  QdSubmitter *s = static_cast<QdSubmitter *>(priv);
  if (res != 4096) s->errors.fetch_add(1, std::memory_order_relaxed);
  s->completed.fetch_add(1, std::memory_order_relaxed);
  s->inflight.fetch_sub(1, std::memory_order_release);
}

void RunQd64(struct block_device *b, long per_thread) {
  const unsigned nthreads = 2 * uk::testing::StressThreads();
  // Leaked on a stall: late completions must not touch freed memory.
  auto *subs = new std::vector<QdSubmitter>(nthreads);
  std::atomic<unsigned> finished{0};
  std::atomic<bool> timed_out{false};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < nthreads; t++) {
    ts.emplace_back([&, t] {
      alignas(4096) static thread_local char buf[4096];
      struct iovec iov = {buf, sizeof(buf)};
      QdSubmitter &s = (*subs)[t];
      for (long i = 0; i < per_thread && !timed_out.load(); i++) {
        if (!uk::testing::WaitUntil(
                [&] { return s.inflight.load(std::memory_order_acquire) < 64; },
                deadline)) {
          timed_out = true;
          return;
        }
        s.inflight.fetch_add(1, std::memory_order_relaxed);
        loff_t pos = (loff_t)(((t * 7919 + i * 104729) % 4096) * 4096);
        if (blkdev_rw(b, pos, &iov, 1, BLKDEV_RW_WRITE, qd_done, &s) !=
            -EIOCBQUEUED) {
          s.errors.fetch_add(1);
          s.inflight.fetch_sub(1);
        }
      }
      if (!uk::testing::WaitUntil(
              [&] { return s.inflight.load(std::memory_order_acquire) == 0; },
              deadline)) {
        timed_out = true;
        return;
      }
      finished++;
    });
  }
  for (auto &th : ts) th.join();
  if (timed_out.load()) {
    for (unsigned t = 0; t < nthreads; t++)
      fprintf(stderr, "submitter %u: %ld completed, %d in flight\n", t,
              (*subs)[t].completed.load(), (*subs)[t].inflight.load());
    ADD_FAILURE() << "irqmode=1 I/O stalled (deadline passed)";
    fflush(stdout);
    fflush(stderr);
    std::_Exit(1);
  }
  EXPECT_EQ(finished.load(), nthreads);
  for (auto &s : *subs) {
    EXPECT_EQ(s.completed.load(), per_thread);
    EXPECT_EQ(s.errors.load(), 0);
  }
  delete subs;
}

TEST_F(NullBlkIoTest, IrqmodeSoftirqQd64SmallDepthNoStall) {
  for (int depth : {2, 8}) {
    char params[128];
    snprintf(params, sizeof(params),
             "irqmode=1 submit_queues=1 poll_queues=0 gb=1 hw_queue_depth=%d",
             depth);
    struct block_device *b = Load(params);
    ASSERT_NE(b, nullptr);
    RunQd64(b, 1500);
    for (auto *d : bdevs_) uk::blkdev_put(d);
    bdevs_.clear();
    null_exit();
    null_blk_reset_module_params();
  }
}

}  // namespace
