// SPDX-License-Identifier: GPL-2.0-only
// Plugging (block/blk-core.c, block/blk-mq.c) on null_blk: requests wait on
// the task's plug until blk_finish_plug(), a full plug or a sleep; a plug
// sized with blk_start_plug_nr_ios() allocates its requests in one go, and
// what it does not use goes back with its queue references.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/bio.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>

#include "../../blk/blk-mq.h"
#include "nullb_fixture.h"
#include "testmain.h"

namespace {

using uk::testing::WaitFor;

alignas(4096) char g_buf[4096];

struct Done {
  std::atomic<int> n{0};
  std::atomic<int> errors{0};
  std::atomic<int> other_thread{0};
  std::thread::id submitter = std::this_thread::get_id();
};

void bio_done(struct bio *bio) {
  Done *d = static_cast<Done *>(bio->bi_private);
  if (bio->bi_status != BLK_STS_OK) d->errors++;
  if (std::this_thread::get_id() != d->submitter) d->other_thread++;
  d->n.fetch_add(1, std::memory_order_release);
  bio_put(bio);
}

int ListLength(struct rq_list *l) {
  int n = 0;
  struct request *rq;
  rq_list_for_each(l, rq) n++;
  return n;
}

class BlkPlugTest : public uk::testing::NullbTest {
 protected:
  void SetUp() override { null_blk_reset_module_params(); }
  // One 4 KiB write at 4 KiB block `blk`, completing into `d`.
  static void Submit(struct block_device *b, unsigned blk, Done *d) {
    struct bio *bio = bio_alloc(b, 1, REQ_OP_WRITE, GFP_KERNEL);
    ASSERT_NE(bio, nullptr);
    __bio_add_page(bio, virt_to_page(g_buf), 4096, 0);
    bio->bi_iter.bi_sector = (sector_t)blk * 8;
    bio->bi_end_io = bio_done;
    bio->bi_private = d;
    submit_bio(bio);
  }
  static struct blk_mq_tags *Tags(struct block_device *b) {
    return bdev_get_queue(b)->queue_hw_ctx[0]->tags;
  }
};

// Plugged bios reach the driver only at blk_finish_plug().
TEST_F(BlkPlugTest, RequestsWaitForFinishPlug) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  Done d;
  struct blk_plug plug;
  blk_start_plug(&plug);
  EXPECT_EQ(current->plug, &plug);
  for (unsigned i = 0; i < 4; i++) Submit(b, i, &d);
  EXPECT_EQ(d.n.load(), 0);
  EXPECT_EQ(plug.rq_count, 4);
  EXPECT_EQ(ListLength(&plug.mq_list), 4);
  EXPECT_FALSE(plug.multiple_queues);
  blk_finish_plug(&plug);
  EXPECT_EQ(current->plug, nullptr);
  EXPECT_EQ(d.n.load(), 4);
  EXPECT_EQ(d.errors.load(), 0);
  EXPECT_EQ(d.other_thread.load(), 0);  // irqmode=0: ended in ->queue_rqs()
  EXPECT_EQ(sbitmap_weight(&Tags(b)->bitmap_tags.sb), 0u);
}

// blk_start_plug_nr_ios(): the first bio takes a batch of tags and requests;
// the next bios use the cached ones; unused ones are freed at unplug, with
// their q_usage_counter references (a freeze afterwards does not hang).
TEST_F(BlkPlugTest, BatchAllocationCachesAndReturnsRequests) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  struct blk_mq_tags *tags = Tags(b);
  Done d;
  struct blk_plug plug;
  blk_start_plug_nr_ios(&plug, 8);
  EXPECT_EQ(plug.nr_ios, 8);
  Submit(b, 0, &d);
  EXPECT_EQ(plug.nr_ios, 1);
  EXPECT_EQ(ListLength(&plug.cached_rqs), 7);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 8u);
  Submit(b, 1, &d);
  Submit(b, 2, &d);
  EXPECT_EQ(ListLength(&plug.cached_rqs), 5);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 8u);
  EXPECT_EQ(d.n.load(), 0);
  blk_finish_plug(&plug);
  EXPECT_EQ(d.n.load(), 3);
  EXPECT_TRUE(rq_list_empty(&plug.cached_rqs));
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 0u);
  struct request_queue *q = bdev_get_queue(b);
  // A leaked cached-request reference would keep the freeze from finishing.
  blk_freeze_queue_start(q);
  EXPECT_GT(blk_mq_freeze_queue_wait_timeout(q, 5 * HZ), 0);
  blk_mq_unfreeze_queue(q);
  // nr_ios is capped at BLK_MAX_REQUEST_COUNT.
  blk_start_plug_nr_ios(&plug, 1000);
  EXPECT_EQ(plug.nr_ios, BLK_MAX_REQUEST_COUNT);
  blk_finish_plug(&plug);
}

// A plug holds at most BLK_MAX_REQUEST_COUNT requests: the next one sends
// the full list first.
TEST_F(BlkPlugTest, FullPlugFlushesAtMaxRequestCount) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  Done d;
  struct blk_plug plug;
  blk_start_plug(&plug);
  for (unsigned i = 0; i < BLK_MAX_REQUEST_COUNT; i++) Submit(b, i, &d);
  EXPECT_EQ(d.n.load(), 0);
  Submit(b, BLK_MAX_REQUEST_COUNT, &d);
  EXPECT_EQ(d.n.load(), BLK_MAX_REQUEST_COUNT);
  EXPECT_EQ(plug.rq_count, 1);
  blk_finish_plug(&plug);
  EXPECT_EQ(d.n.load(), BLK_MAX_REQUEST_COUNT + 1);
}

// Only the outermost plug is installed and only its finish flushes.
TEST_F(BlkPlugTest, NestedPlugIsANoop) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  Done d;
  struct blk_plug outer, inner;
  blk_start_plug(&outer);
  blk_start_plug(&inner);
  EXPECT_EQ(current->plug, &outer);
  Submit(b, 0, &d);
  blk_finish_plug(&inner);
  EXPECT_EQ(d.n.load(), 0);
  EXPECT_EQ(current->plug, &outer);
  blk_finish_plug(&outer);
  EXPECT_EQ(d.n.load(), 1);
}

// A stacking driver's unplug callback (blk_check_plugged()): one per
// (callback, data) pair, run once at unplug with from_schedule false, and
// it owns (frees) its blk_plug_cb. Without a plug there is none.
struct PlugCb {
  struct blk_plug_cb cb;
  int payload;
};
int g_cb_runs;
bool g_cb_from_schedule;

void plug_cb(struct blk_plug_cb *cb, bool from_schedule) {
  g_cb_runs++;
  g_cb_from_schedule = from_schedule;
  kfree(cb);
}

TEST_F(BlkPlugTest, UnplugCallbackRunsOnceAtFinish) {
  int key = 0;
  g_cb_runs = 0;
  g_cb_from_schedule = true;
  EXPECT_EQ(blk_check_plugged(plug_cb, &key, sizeof(PlugCb)), nullptr);
  struct blk_plug plug;
  blk_start_plug(&plug);
  struct blk_plug_cb *cb = blk_check_plugged(plug_cb, &key, sizeof(PlugCb));
  ASSERT_NE(cb, nullptr);
  EXPECT_EQ(cb->data, &key);
  EXPECT_EQ(reinterpret_cast<PlugCb *>(cb)->payload, 0);  // zeroed
  EXPECT_EQ(blk_check_plugged(plug_cb, &key, sizeof(PlugCb)), cb);
  int other = 0;
  struct blk_plug_cb *cb2 = blk_check_plugged(plug_cb, &other, sizeof(PlugCb));
  EXPECT_NE(cb2, cb);
  EXPECT_EQ(g_cb_runs, 0);
  blk_finish_plug(&plug);
  EXPECT_EQ(g_cb_runs, 2);
  EXPECT_FALSE(g_cb_from_schedule);
  EXPECT_TRUE(list_empty(&plug.cb_list));
}

// Requests of two devices in one plug: each goes to its own queue.
TEST_F(BlkPlugTest, MultipleQueuesInOnePlug) {
  struct block_device *b0 =
      Load("irqmode=0 submit_queues=1 nr_devices=2 gb=1", "nullb0");
  struct block_device *b1 = Open("nullb1");
  Done d0, d1;
  struct blk_plug plug;
  blk_start_plug(&plug);
  for (unsigned i = 0; i < 6; i++)
    Submit(i & 1 ? b1 : b0, i, i & 1 ? &d1 : &d0);
  EXPECT_TRUE(plug.multiple_queues);
  EXPECT_EQ(d0.n.load() + d1.n.load(), 0);
  blk_finish_plug(&plug);
  EXPECT_EQ(d0.n.load(), 3);
  EXPECT_EQ(d1.n.load(), 3);
  EXPECT_EQ(sbitmap_weight(&Tags(b0)->bitmap_tags.sb), 0u);
  EXPECT_EQ(sbitmap_weight(&Tags(b1)->bitmap_tags.sb), 0u);
}

// A plugged task that sleeps sends its requests first (sched_submit_work):
// submit_bio_wait() under a plug would otherwise wait for itself. From
// schedule() they go through kblockd, so they end on its thread.
TEST_F(BlkPlugTest, SleepFlushesThePlug) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  Done d;
  std::atomic<int> ret{1};
  std::atomic<bool> finished{false};
  std::thread t([&] {
    d.submitter = std::this_thread::get_id();
    struct blk_plug plug;
    blk_start_plug_nr_ios(&plug, 4);
    Submit(b, 0, &d);
    struct bio *bio = bio_alloc(b, 1, REQ_OP_READ, GFP_KERNEL);
    __bio_add_page(bio, virt_to_page(g_buf), 4096, 0);
    bio->bi_iter.bi_sector = 64;
    ret = submit_bio_wait(bio);
    bio_put(bio);
    blk_finish_plug(&plug);
    finished = true;
  });
  bool ok = WaitFor([&] { return finished.load(); });
  if (!ok) {
    t.detach();
    FAIL() << "submit_bio_wait() under a plug never completed";
  }
  t.join();
  EXPECT_EQ(ret.load(), 0);
  EXPECT_EQ(d.n.load(), 1);
  EXPECT_EQ(d.other_thread.load(), 1);
  // That request ends on kblockd, which frees its tag only after bio_endio()
  // has counted it: wait for the free, not just the count.
  EXPECT_TRUE(
      WaitFor([&] { return sbitmap_weight(&Tags(b)->bitmap_tags.sb) == 0; }));
}

// Requeue fault injection through ->queue_rqs(): BLK_STS_RESOURCE leaves a
// request on the plug for direct issue, a driver requeue sends it through
// the requeue list; each request still completes exactly once.
TEST_F(BlkPlugTest, RequeueInjectionUnderPlugCompletesEachOnce) {
  struct block_device *b = Load(
      "requeue=1,50,0,40 irqmode=0 submit_queues=1 hw_queue_depth=16 gb=1");
  const int rounds = 20, per = 8;
  std::vector<Done> d(rounds);
  for (int r = 0; r < rounds; r++) {
    struct blk_plug plug;
    blk_start_plug_nr_ios(&plug, per);
    for (int i = 0; i < per; i++) Submit(b, r * per + i, &d[r]);
    blk_finish_plug(&plug);
  }
  ASSERT_TRUE(WaitFor([&] {
    for (auto &x : d)
      if (x.n.load(std::memory_order_acquire) < per) return false;
    return true;
  }));
  if (kblockd_workqueue) flush_workqueue(kblockd_workqueue);
  for (auto &x : d) {
    EXPECT_EQ(x.n.load(), per);
    EXPECT_EQ(x.errors.load(), 0);
  }
  struct nullb *nb = null_lookup_dev("nullb0");
  EXPECT_EQ(atomic_read(&nb->dev->requeue_config.attr.times), 0)
      << "injections not used up";
  EXPECT_EQ(sbitmap_weight(&Tags(b)->bitmap_tags.sb), 0u);
}

}  // namespace
