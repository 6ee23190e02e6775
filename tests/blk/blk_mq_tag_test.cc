// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq-tag.c: numbering, NOWAIT, batches, fair sharing, the sleep
// loop with hctx re-resolution, iterators, resize and unique tags.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>
#include <uk/shim/clock.h>

#include "../../blk/blk-mq-tag.h"
#include "testmain.h"

namespace {

// Two hardware queues: CPU 1 maps to hctx 1, every other CPU to hctx 0.
struct Fixture {
  struct blk_mq_tag_set set = {};
  struct request_queue q = {};
  struct blk_mq_hw_ctx hctx[2] = {};
  struct blk_mq_hw_ctx *hctxs[2] = {&hctx[0], &hctx[1]};
  struct blk_mq_tags *tags_arr[2] = {};

  Fixture(unsigned depth, unsigned reserved, unsigned flags = 0) {
    set.nr_hw_queues = 2;
    set.queue_depth = depth;
    set.reserved_tags = reserved;
    set.flags = flags;
    if (blk_mq_is_shared_tags(flags)) {
      set.shared_tags = blk_mq_init_tags(depth, reserved, -1,
                                         BLK_MQ_FLAG_TO_ALLOC_POLICY(flags));
      tags_arr[0] = tags_arr[1] = set.shared_tags;
    } else {
      for (int i = 0; i < 2; i++)
        tags_arr[i] = blk_mq_init_tags(depth, reserved, -1,
                                       BLK_MQ_FLAG_TO_ALLOC_POLICY(flags));
    }
    set.tags = tags_arr;
    q.tag_set = &set;
    q.nr_hw_queues = 2;
    q.queue_hw_ctx = hctxs;
    q.queue_ctx = alloc_percpu(struct blk_mq_ctx);
    // blk_mq_queue_tag_busy_iter() walks a queue only while it is live.
    auto release = [](struct percpu_ref *) {};
    EXPECT_EQ(percpu_ref_init(&q.q_usage_counter, release,
                              PERCPU_REF_ALLOW_REINIT, GFP_KERNEL),
              0);
    int cpu;
    for_each_possible_cpu(cpu) {
      struct blk_mq_ctx *ctx = per_cpu_ptr(q.queue_ctx, cpu);
      ctx->cpu = cpu;
      ctx->queue = &q;
      for (int t = 0; t < HCTX_MAX_TYPES; t++)
        ctx->hctxs[t] = &hctx[cpu == 1 ? 1 : 0];
    }
    for (int i = 0; i < 2; i++) {
      hctx[i].queue = &q;
      hctx[i].queue_num = i;
      hctx[i].tags = tags_arr[i];
      hctx[i].flags = flags;
      hctx[i].nr_ctx = 1;
    }
  }
  ~Fixture() {
    if (set.shared_tags) {
      blk_mq_free_tags(set.shared_tags);
    } else {
      for (auto *t : tags_arr) blk_mq_free_tags(t);
    }
    free_percpu(q.queue_ctx);
    percpu_ref_exit(&q.q_usage_counter);
  }
  struct blk_mq_alloc_data data(int cpu, blk_mq_req_flags_t flags = 0) {
    struct blk_mq_alloc_data d = {};
    d.q = &q;
    d.flags = flags;
    d.ctx = per_cpu_ptr(q.queue_ctx, cpu);
    d.hctx = d.ctx->hctxs[HCTX_TYPE_DEFAULT];
    return d;
  }
};

class BlkMqTagTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (nr_cpu_ids < 2) GTEST_SKIP() << "needs two virtual CPUs";
    uk::pin_thread_to_cpu(0);
  }
  void TearDown() override {
    blk_mq_run_hw_queue_hook = nullptr;
    uk::pin_thread_to_cpu(-1);
  }
};

TEST_F(BlkMqTagTest, ReservedAndNormalNumbering) {
  Fixture f(8, 2);
  struct blk_mq_tags *tags = f.hctx[0].tags;
  ASSERT_NE(tags, nullptr);
  EXPECT_EQ(tags->bitmap_tags.sb.depth, 6u);
  EXPECT_EQ(tags->breserved_tags.sb.depth, 2u);
  std::vector<bool> seen(8);
  for (int i = 0; i < 2; i++) {
    auto d = f.data(0, BLK_MQ_REQ_RESERVED | BLK_MQ_REQ_NOWAIT);
    unsigned t = blk_mq_get_tag(&d);
    ASSERT_LT(t, 2u);
    EXPECT_TRUE(blk_mq_tag_is_reserved(tags, t));
    seen[t] = true;
  }
  auto d = f.data(0, BLK_MQ_REQ_RESERVED | BLK_MQ_REQ_NOWAIT);
  EXPECT_EQ(blk_mq_get_tag(&d), BLK_MQ_NO_TAG);
  for (int i = 0; i < 6; i++) {
    auto d2 = f.data(0, BLK_MQ_REQ_NOWAIT);
    unsigned t = blk_mq_get_tag(&d2);
    ASSERT_GE(t, 2u);
    ASSERT_LT(t, 8u);
    EXPECT_FALSE(seen[t]);
    seen[t] = true;
  }
  auto d3 = f.data(0, BLK_MQ_REQ_NOWAIT);
  EXPECT_EQ(blk_mq_get_tag(&d3), BLK_MQ_NO_TAG);
  // Put one of each kind back, then they come back again.
  blk_mq_put_tag(tags, f.data(0).ctx, 5);
  blk_mq_put_tag(tags, f.data(0).ctx, 1);
  auto d4 = f.data(0, BLK_MQ_REQ_NOWAIT);
  EXPECT_EQ(blk_mq_get_tag(&d4), 5u);
  auto d5 = f.data(0, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tag(&d5), 1u);
}

TEST_F(BlkMqTagTest, ReservedWithoutReservedTagsWarns) {
  Fixture f(8, 0);
  uk::testing::AllowWarnings();
  auto d = f.data(0, BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tag(&d), BLK_MQ_NO_TAG);
}

TEST_F(BlkMqTagTest, InitRejectsTooDeep) {
  EXPECT_EQ(blk_mq_init_tags(BLK_MQ_TAG_MAX + 1u, 0, -1, BLK_TAG_ALLOC_FIFO),
            nullptr);
}

TEST_F(BlkMqTagTest, BatchedGetAndPut) {
  Fixture f(64, 4);
  struct blk_mq_tags *tags = f.hctx[0].tags;
  *per_cpu_ptr(tags->bitmap_tags.sb.alloc_hint, 0) = 0;
  auto d = f.data(0);
  unsigned int off = 0;
  unsigned long mask = blk_mq_get_tags(&d, 4, &off);
  EXPECT_EQ(mask, 0xful);
  EXPECT_EQ(off, 4u);  // bit 0 of the normal map is tag 4
  int arr[4];
  for (int i = 0; i < 4; i++) arr[i] = off + i;
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 4u);
  blk_mq_put_tags(tags, arr, 4);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 0u);
  // No batches for reserved or shallow allocations (shared queues:
  // BatchRefusedOnSharedQueue).
  auto dr = f.data(0, BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tags(&dr, 2, &off), 0ul);
  auto ds = f.data(0);
  ds.shallow_depth = 8;
  EXPECT_EQ(blk_mq_get_tags(&ds, 2, &off), 0ul);
}

// A queue shared with others (TAG_QUEUE_SHARED) never takes tags in batches,
// which would bypass the fair-share limit.
TEST_F(BlkMqTagTest, BatchRefusedOnSharedQueue) {
  Fixture f(64, 4, BLK_MQ_F_TAG_QUEUE_SHARED);
  struct blk_mq_tags *tags = f.hctx[0].tags;
  *per_cpu_ptr(tags->bitmap_tags.sb.alloc_hint, 0) = 0;
  auto d = f.data(0);
  unsigned int off = 99;
  EXPECT_EQ(blk_mq_get_tags(&d, 4, &off), 0ul);
  EXPECT_EQ(off, 99u);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 0u);
  // The hctx flag decides: once the queue is no longer shared, it batches.
  f.hctx[0].flags &= ~BLK_MQ_F_TAG_QUEUE_SHARED;
  auto d2 = f.data(0);
  EXPECT_EQ(blk_mq_get_tags(&d2, 4, &off), 0xful);
  EXPECT_EQ(off, 4u);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 4u);
}

// BLK_MQ_S_INACTIVE (the hctx's CPUs are going offline): the tag just taken
// goes back and the caller gets BLK_MQ_NO_TAG, normal or reserved.
TEST_F(BlkMqTagTest, InactiveHctxPutsTagBack) {
  Fixture f(8, 2);
  struct blk_mq_tags *tags = f.hctx[0].tags;
  *per_cpu_ptr(tags->bitmap_tags.sb.alloc_hint, 0) = 3;
  set_bit(BLK_MQ_S_INACTIVE, &f.hctx[0].state);
  for (int i = 0; i < 10; i++) {
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    EXPECT_EQ(blk_mq_get_tag(&d), BLK_MQ_NO_TAG);
    auto dr = f.data(0, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED);
    EXPECT_EQ(blk_mq_get_tag(&dr), BLK_MQ_NO_TAG);
  }
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 0u);
  EXPECT_EQ(sbitmap_weight(&tags->breserved_tags.sb), 0u);
  // The other hctx is not affected.
  auto d1 = f.data(1, BLK_MQ_REQ_NOWAIT);
  EXPECT_LT(blk_mq_get_tag(&d1), 8u);
  // Active again: the put-back tag (bit 3, tag 5) is the one handed out.
  clear_bit(BLK_MQ_S_INACTIVE, &f.hctx[0].state);
  auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
  EXPECT_EQ(blk_mq_get_tag(&d), 5u);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 1u);
}

// Same, for a tag found in the sleep loop: the map is full, the queue run
// before sleeping frees a tag and the hctx goes inactive meanwhile.
TEST_F(BlkMqTagTest, InactiveHctxPutsBackTagFoundAfterQueueRun) {
  Fixture f(4, 0);
  static struct blk_mq_tags *tags;
  static unsigned freed_tag;
  static int runs;
  tags = f.hctx[0].tags;
  runs = 0;
  for (int i = 0; i < 4; i++) {
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    freed_tag = blk_mq_get_tag(&d);
    ASSERT_LT(freed_tag, 4u);
  }
  blk_mq_run_hw_queue_hook = [](struct blk_mq_hw_ctx *hctx, bool) {
    runs++;
    blk_mq_put_tag(tags, per_cpu_ptr(hctx->queue->queue_ctx, 0), freed_tag);
    set_bit(BLK_MQ_S_INACTIVE, &hctx->state);
  };
  auto d = f.data(0);
  EXPECT_EQ(blk_mq_get_tag(&d), BLK_MQ_NO_TAG);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(sbitmap_weight(&tags->bitmap_tags.sb), 3u);
  EXPECT_EQ(atomic_read(&tags->bitmap_tags.ws_active), 0);
  clear_bit(BLK_MQ_S_INACTIVE, &f.hctx[0].state);
  blk_mq_run_hw_queue_hook = nullptr;
  auto d2 = f.data(0, BLK_MQ_REQ_NOWAIT);
  EXPECT_EQ(blk_mq_get_tag(&d2), freed_tag);
}

// hctx_may_queue(): a map of depth 1 is never split, whatever the users
// and the active count.
TEST_F(BlkMqTagTest, MayQueueDepthOneIsNotShared) {
  for (unsigned depth : {1u, 2u}) {
    Fixture f(depth, 0, BLK_MQ_F_TAG_QUEUE_SHARED);
    struct blk_mq_hw_ctx *h = &f.hctx[0];
    blk_mq_tag_busy(h);
    WRITE_ONCE(h->tags->active_queues, 4u);
    atomic_set(&h->nr_active, 100);
    // Depth 2 is limited (100 >= max(ceil(2/4), 4)); depth 1 is not.
    EXPECT_EQ(hctx_may_queue(h, &h->tags->bitmap_tags), depth == 1) << depth;
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    EXPECT_EQ(blk_mq_get_tag(&d), depth == 1 ? 0u : BLK_MQ_NO_TAG) << depth;
    atomic_set(&h->nr_active, 0);
    WRITE_ONCE(h->tags->active_queues, 1u);
    blk_mq_tag_idle(h);
  }
}

// Host-wide tags (TAG_HCTX_SHARED): the queue's active flag and the
// queue-wide count of active requests decide, not the hctx's own ones.
TEST_F(BlkMqTagTest, MayQueueHostWideUsesQueueCount) {
  Fixture f(16, 0, BLK_MQ_F_TAG_QUEUE_SHARED | BLK_MQ_F_TAG_HCTX_SHARED);
  struct sbitmap_queue *bt = &f.set.shared_tags->bitmap_tags;
  atomic_t *shared = &f.q.nr_active_requests_shared_tags;
  // The queue is not active yet: no limit.
  atomic_set(shared, 100);
  EXPECT_TRUE(hctx_may_queue(&f.hctx[0], bt));
  atomic_set(shared, 0);
  blk_mq_tag_busy(&f.hctx[0]);
  ASSERT_TRUE(test_bit(QUEUE_FLAG_HCTX_ACTIVE, &f.q.queue_flags));
  ASSERT_FALSE(test_bit(BLK_MQ_S_TAG_ACTIVE, &f.hctx[0].state));
  // Three users: ceil(16 / 3) = 6 per queue.
  WRITE_ONCE(f.set.shared_tags->active_queues, 3u);
  atomic_set(&f.hctx[0].nr_active, 100);  // not the count used here
  atomic_set(shared, 5);
  EXPECT_TRUE(hctx_may_queue(&f.hctx[0], bt));
  atomic_set(shared, 6);
  EXPECT_FALSE(hctx_may_queue(&f.hctx[0], bt));
  EXPECT_FALSE(hctx_may_queue(&f.hctx[1], bt));  // same queue, same count
  // Eight users: ceil(16 / 8) = 2, raised to the minimum of 4.
  WRITE_ONCE(f.set.shared_tags->active_queues, 8u);
  atomic_set(shared, 3);
  EXPECT_TRUE(hctx_may_queue(&f.hctx[1], bt));
  atomic_set(shared, 4);
  EXPECT_FALSE(hctx_may_queue(&f.hctx[1], bt));
  // Through blk_mq_get_tag(), from both hctxs: six tags for the queue in
  // all, not six per hctx.
  atomic_set(&f.hctx[0].nr_active, 0);
  atomic_set(shared, 0);
  WRITE_ONCE(f.set.shared_tags->active_queues, 3u);
  unsigned got = 0;
  for (int i = 0; i < 16; i++) {
    auto d = f.data(i % 2, BLK_MQ_REQ_NOWAIT);
    if (blk_mq_get_tag(&d) == BLK_MQ_NO_TAG) continue;
    blk_mq_inc_active_requests(d.hctx);
    got++;
  }
  EXPECT_EQ(got, 6u);
  EXPECT_EQ(atomic_read(shared), 6);
  EXPECT_EQ(atomic_read(&f.hctx[0].nr_active), 0);
  EXPECT_EQ(atomic_read(&f.hctx[1].nr_active), 0);
  EXPECT_EQ(sbitmap_weight(&bt->sb), 6u);
}

// BLK_TAG_ALLOC_RR: tags come out in increasing order; a freed tag is not
// reused until the hint wraps to the start of the map.
TEST_F(BlkMqTagTest, RoundRobinTagsIncreaseAndWrap) {
  Fixture f(18, 2, BLK_ALLOC_POLICY_TO_MQ_FLAG(BLK_TAG_ALLOC_RR));
  struct blk_mq_tags *tags = f.hctx[0].tags;
  ASSERT_TRUE(tags->bitmap_tags.sb.round_robin);
  ASSERT_TRUE(tags->breserved_tags.sb.round_robin);
  ASSERT_EQ(tags->bitmap_tags.sb.depth, 16u);  // 4 words of 4 bits
  auto get = [&f] {
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    return blk_mq_get_tag(&d);
  };
  for (unsigned want = 2; want <= 9; want++) EXPECT_EQ(get(), want);
  blk_mq_put_tag(tags, f.data(0).ctx, 3);
  // Tag 3 is free, but the round goes on from tag 10.
  for (unsigned want = 10; want <= 16; want++) EXPECT_EQ(get(), want);
  // Bit 14 (tag 16) used: the next hint, 15, is >= depth - 1 and resets to
  // 0 (upstream never starts at the last bit). The round starts over: tag 3
  // comes back first, then the search goes on to the last free tag.
  EXPECT_EQ(get(), 3u);
  EXPECT_EQ(get(), 17u);
  EXPECT_EQ(get(), BLK_MQ_NO_TAG);
  // Reserved tags are round-robin too.
  auto dr = f.data(0, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tag(&dr), 0u);
  auto dr2 = f.data(0, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tag(&dr2), 1u);
}

// Fair share: max(ceil(depth / users), 4) tags per active queue.
TEST_F(BlkMqTagTest, FairShareLimit) {
  struct {
    unsigned depth, users, want;
  } cases[] = {{64, 1, 64}, {64, 3, 22}, {64, 16, 4}, {64, 32, 4}, {10, 3, 4}};
  for (auto c : cases) {
    Fixture f(c.depth, 0, BLK_MQ_F_TAG_QUEUE_SHARED);
    struct blk_mq_hw_ctx *h = &f.hctx[0];
    blk_mq_tag_busy(h);
    EXPECT_EQ(h->tags->active_queues, 1u);
    WRITE_ONCE(h->tags->active_queues, c.users);
    unsigned got = 0;
    for (;;) {
      auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
      unsigned t = blk_mq_get_tag(&d);
      if (t == BLK_MQ_NO_TAG) break;
      blk_mq_inc_active_requests(h);
      got++;
    }
    EXPECT_EQ(got, c.want) << c.depth << "/" << c.users;
    WRITE_ONCE(h->tags->active_queues, 1u);
    blk_mq_tag_idle(h);
    EXPECT_EQ(h->tags->active_queues, 0u);
    EXPECT_FALSE(test_bit(BLK_MQ_S_TAG_ACTIVE, &h->state));
  }
}

TEST_F(BlkMqTagTest, BusyIdleRecalculatesWakeBatch) {
  Fixture f(64, 0, BLK_MQ_F_TAG_QUEUE_SHARED);
  struct blk_mq_tags *t0 = f.hctx[0].tags;
  f.hctx[1].tags = t0;  // both hctxs share one map, as two queues would
  EXPECT_EQ(t0->bitmap_tags.wake_batch, 8u);
  blk_mq_tag_busy(&f.hctx[0]);
  blk_mq_tag_busy(&f.hctx[0]);  // already active: no double count
  EXPECT_EQ(t0->active_queues, 1u);
  blk_mq_tag_busy(&f.hctx[1]);
  EXPECT_EQ(t0->active_queues, 2u);
  EXPECT_EQ(t0->bitmap_tags.wake_batch, 4u);  // ceil(64/2)/8
  blk_mq_tag_idle(&f.hctx[1]);
  EXPECT_EQ(t0->active_queues, 1u);
  EXPECT_EQ(t0->bitmap_tags.wake_batch, 8u);
  blk_mq_tag_idle(&f.hctx[0]);
  f.hctx[1].tags = f.tags_arr[1];
}

TEST_F(BlkMqTagTest, HctxSharedUsesQueueFlag) {
  Fixture f(32, 0, BLK_MQ_F_TAG_QUEUE_SHARED | BLK_MQ_F_TAG_HCTX_SHARED);
  EXPECT_EQ(f.hctx[0].tags, f.hctx[1].tags);
  blk_mq_tag_busy(&f.hctx[0]);
  blk_mq_tag_busy(&f.hctx[1]);  // same queue: counted once
  EXPECT_TRUE(test_bit(QUEUE_FLAG_HCTX_ACTIVE, &f.q.queue_flags));
  EXPECT_EQ(f.set.shared_tags->active_queues, 1u);
  blk_mq_tag_resize_shared_tags(&f.set, 16);
  EXPECT_EQ(f.set.shared_tags->bitmap_tags.sb.depth, 16u);
  EXPECT_EQ(f.set.shared_tags->bitmap_tags.wake_batch, 2u);
  blk_mq_tag_idle(&f.hctx[0]);
  EXPECT_FALSE(test_bit(QUEUE_FLAG_HCTX_ACTIVE, &f.q.queue_flags));
}

TEST_F(BlkMqTagTest, UniqueTags) {
  struct blk_mq_hw_ctx h = {};
  h.queue_num = 3;
  struct request rq = {};
  rq.mq_hctx = &h;
  rq.tag = 17;
  u32 u = blk_mq_unique_tag(&rq);
  EXPECT_EQ(u, (3u << 16) | 17u);
  EXPECT_EQ(blk_mq_unique_tag_to_hwq(u), 3);
  EXPECT_EQ(blk_mq_unique_tag_to_tag(u), 17);
  rq.tag = 0x12345;
  EXPECT_EQ(blk_mq_unique_tag_to_tag(blk_mq_unique_tag(&rq)), 0x2345);
}

TEST_F(BlkMqTagTest, Iterators) {
  Fixture f(8, 2);
  struct blk_mq_tags *tags = f.hctx[0].tags;
  struct request rqs[8] = {};
  struct request *rqp[8], *srqp[8];
  for (int i = 0; i < 8; i++) {
    rqs[i].q = &f.q;
    rqs[i].mq_hctx = &f.hctx[0];
    rqs[i].tag = -1;
    srqp[i] = &rqs[i];
    rqp[i] = nullptr;
  }
  tags->rqs = rqp;
  tags->static_rqs = srqp;
  // Allocate reserved 0 and normal 2, 3; start 0 and 3; tag 3 has no rqs[].
  unsigned got[3];
  auto dr = f.data(0, BLK_MQ_REQ_RESERVED | BLK_MQ_REQ_NOWAIT);
  got[0] = blk_mq_get_tag(&dr);
  for (int i = 1; i < 3; i++) {
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    got[i] = blk_mq_get_tag(&d);
  }
  for (unsigned t : got) {
    rqs[t].tag = t;
    atomic_set(&rqs[t].ref, 1);
  }
  rqp[got[0]] = &rqs[got[0]];
  rqp[got[1]] = &rqs[got[1]];
  rqs[got[0]].state = MQ_RQ_IN_FLIGHT;
  rqs[got[1]].state = MQ_RQ_IDLE;
  auto count = [](struct request *rq, void *data) {
    static_cast<std::vector<int> *>(data)->push_back(rq->tag);
    return true;
  };
  std::vector<int> seen;
  blk_mq_all_tag_iter(tags, count, &seen);  // static_rqs: all set bits
  EXPECT_EQ(seen.size(), 3u);
  seen.clear();
  blk_mq_tagset_busy_iter(&f.set, count, &seen);  // started + rqs[] only
  EXPECT_EQ(seen, std::vector<int>{(int)got[0]});
  seen.clear();
  blk_mq_queue_tag_busy_iter(&f.q, count, &seen);  // rqs[] of this q
  EXPECT_EQ(seen, (std::vector<int>{(int)got[0], (int)got[1]}));
  for (unsigned t : got) EXPECT_EQ(atomic_read(&rqs[t].ref), 1);
  // Another queue's request on the same tags is filtered out.
  struct request_queue other = {};
  rqs[got[1]].q = &other;
  seen.clear();
  blk_mq_queue_tag_busy_iter(&f.q, count, &seen);
  EXPECT_EQ(seen, std::vector<int>{(int)got[0]});
  // A frozen queue (q_usage_counter killed and drained to zero) is not
  // walked; once it is live again, it is.
  percpu_ref_kill(&f.q.q_usage_counter);
  rcu_barrier();  // the switch to atomic mode ends: the count reaches zero
  ASSERT_TRUE(percpu_ref_is_zero(&f.q.q_usage_counter));
  seen.clear();
  blk_mq_queue_tag_busy_iter(&f.q, count, &seen);
  EXPECT_TRUE(seen.empty());
  percpu_ref_resurrect(&f.q.q_usage_counter);
  blk_mq_queue_tag_busy_iter(&f.q, count, &seen);
  EXPECT_EQ(seen, std::vector<int>{(int)got[0]});
  tags->rqs = nullptr;
  tags->static_rqs = nullptr;
}

// blk_mq_tagset_wait_completed_request() sleeps 5 ms between polls: on the
// virtual clock each of its sleeps lasts until the test advances the clock.
class BlkMqTagWaitTest : public BlkMqTagTest {
 protected:
  void SetUp() override {
    BlkMqTagTest::SetUp();
    uk::pin_thread_to_cpu(-1);
    uk::clock_use_virtual();
  }
  void TearDown() override {
    uk::clock_use_host();
    BlkMqTagTest::TearDown();
  }
};

// Runs blk_mq_tagset_wait_completed_request() on its own thread. The thread
// stays alive after the call until Finish(), so its task can be looked at.
class WaitCompletedThread {
 public:
  explicit WaitCompletedThread(struct blk_mq_tag_set *set)
      : thread_([this, set] {
          task_.store(current);
          blk_mq_tagset_wait_completed_request(set);
          done_.store(true);
          while (!release_.load()) std::this_thread::yield();
        }) {
    while (!task_.load()) std::this_thread::yield();
  }
  ~WaitCompletedThread() {
    Finish([] {});
  }

  // True once the call sleeps, false once it has returned.
  bool Sleeping() {
    while (!done_.load()) {
      if (uk::task_is_blocked(task_.load())) return true;
      std::this_thread::yield();
    }
    return false;
  }
  // Ends the current sleep (msleep(5) is a few jiffies).
  void Tick() { uk::virtual_clock_advance(NSEC_PER_SEC); }
  // Makes the call return (calling `settle` while it sleeps) and joins.
  template <typename F>
  void Finish(F settle) {
    if (!thread_.joinable()) return;
    while (Sleeping()) {
      settle();
      Tick();
    }
    release_.store(true);
    thread_.join();
  }

 private:
  std::atomic<struct task_struct *> task_{nullptr};
  std::atomic<bool> done_{false}, release_{false};
  std::thread thread_;
};

// Requests in rqs[] for both hctxs' maps, each holding a tag unless told.
struct WaitRequests {
  Fixture &f;
  struct request rqs[2][8] = {};
  struct request *rqp[2][8] = {};

  explicit WaitRequests(Fixture &fx) : f(fx) {
    for (int h = 0; h < 2; h++) f.tags_arr[h]->rqs = rqp[h];
  }
  ~WaitRequests() {
    for (int h = 0; h < 2; h++) f.tags_arr[h]->rqs = nullptr;
  }
  struct request *Add(int h, enum mq_rq_state state, bool hold_tag = true) {
    unsigned tag = 0;
    if (hold_tag) {
      auto d = f.data(h, BLK_MQ_REQ_NOWAIT);
      tag = blk_mq_get_tag(&d);
    } else {
      while (tag < 8 && (rqp[h][tag] ||
                         sbitmap_test_bit(&f.tags_arr[h]->bitmap_tags.sb, tag)))
        tag++;
    }
    EXPECT_LT(tag, 8u);
    if (tag >= 8) return nullptr;
    struct request *rq = &rqs[h][tag];
    rq->q = &f.q;
    rq->mq_hctx = &f.hctx[h];
    rq->tag = tag;
    rq->state = state;
    atomic_set(&rq->ref, 1);
    rqp[h][tag] = rq;
    return rq;
  }
  void SettleAll() {
    for (auto &row : rqs)
      for (auto &rq : row) WRITE_ONCE(rq.state, MQ_RQ_IDLE);
  }
  void ExpectRefsUntouched() {
    for (int h = 0; h < 2; h++)
      for (auto *rq : rqp[h]) {
        if (!rq) continue;
        EXPECT_EQ(atomic_read(&rq->ref), 1) << h << "/" << rq->tag;
      }
  }
};

TEST_F(BlkMqTagWaitTest, WaitCompletedReturnsAtOnceWithoutCompletedRequests) {
  Fixture f(8, 0);
  WaitRequests r(f);
  r.Add(0, MQ_RQ_IN_FLIGHT);
  r.Add(1, MQ_RQ_IN_FLIGHT);
  r.Add(1, MQ_RQ_IDLE);
  // Completed, but its tag is already free: not a request of the set.
  r.Add(0, MQ_RQ_COMPLETE, /*hold_tag=*/false);
  WaitCompletedThread w(&f.set);
  EXPECT_FALSE(w.Sleeping()) << "slept with no request in MQ_RQ_COMPLETE";
  w.Finish([&r] { r.SettleAll(); });
  r.ExpectRefsUntouched();
}

TEST_F(BlkMqTagWaitTest, WaitCompletedWaitsForEveryHctx) {
  Fixture f(8, 0);
  WaitRequests r(f);
  struct request *c0 = r.Add(0, MQ_RQ_COMPLETE);
  struct request *c1 = r.Add(1, MQ_RQ_COMPLETE);
  ASSERT_NE(c0, nullptr);
  ASSERT_NE(c1, nullptr);
  r.Add(0, MQ_RQ_IN_FLIGHT);
  WaitCompletedThread w(&f.set);
  EXPECT_TRUE(w.Sleeping()) << "returned with two completed requests";
  // hctx 0's completion is handled (the request is freed or requeued)...
  WRITE_ONCE(c0->state, MQ_RQ_IDLE);
  w.Tick();
  // ...but hctx 1 still has one.
  EXPECT_TRUE(w.Sleeping()) << "returned with a completed request on hctx 1";
  WRITE_ONCE(c1->state, MQ_RQ_IN_FLIGHT);  // requeued and restarted
  w.Tick();
  EXPECT_FALSE(w.Sleeping()) << "still waiting with nothing completed";
  w.Finish([&r] { r.SettleAll(); });
  r.ExpectRefsUntouched();
}

// The sleep loop: a sleeper on hctx 0 that wakes up on CPU 1 re-resolves
// its hctx, allocates there, and hands a compensating wake-up back to the
// old map so the next sleeper there is not starved.
TEST_F(BlkMqTagTest, SleeperMovesHctxAndCompensates) {
  Fixture f(4, 0);
  struct blk_mq_tags *t0 = f.hctx[0].tags;
  ASSERT_EQ(t0->bitmap_tags.wake_batch, 1u);
  std::vector<unsigned> held;
  for (int i = 0; i < 4; i++) {
    auto d = f.data(0, BLK_MQ_REQ_NOWAIT);
    held.push_back(blk_mq_get_tag(&d));
  }
  static std::atomic<int> kicks;
  kicks = 0;
  // Runs in the sleeper before it sleeps: it will wake up on CPU 1.
  blk_mq_run_hw_queue_hook = [](struct blk_mq_hw_ctx *, bool) {
    if (kicks++ == 0) uk::pin_thread_to_cpu(1);
  };
  std::atomic<struct task_struct *> task{nullptr};
  unsigned a_tag = BLK_MQ_NO_TAG;
  struct blk_mq_hw_ctx *a_hctx = nullptr;
  std::thread a([&] {
    uk::pin_thread_to_cpu(0);
    task = get_current();
    auto d = f.data(0);
    a_tag = blk_mq_get_tag(&d);
    a_hctx = d.hctx;
    uk::pin_thread_to_cpu(-1);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  // A second sleeper on the same wait queue of the old map.
  struct {
    struct sbq_wait w = {};
    bool woken = false;
  } b;
  b.w.wait.func = [](struct wait_queue_entry *e, unsigned, int, void *) {
    auto *bw = container_of(e, struct sbq_wait, wait);
    reinterpret_cast<decltype(&b)>(bw)->woken = true;
    list_del_init(&e->entry);
    return 1;
  };
  INIT_LIST_HEAD(&b.w.wait.entry);
  struct sbq_wait_state *ws = &t0->bitmap_tags.ws[0];
  ASSERT_TRUE(waitqueue_active(&ws->wait));
  sbitmap_prepare_to_wait(&t0->bitmap_tags, ws, &b.w, TASK_UNINTERRUPTIBLE);
  __set_current_state(TASK_RUNNING);
  // One free on the old map wakes A (first in line); A's compensating
  // wake-up then wakes B.
  blk_mq_put_tag(t0, f.data(0).ctx, held[0]);
  a.join();
  EXPECT_EQ(a_hctx, &f.hctx[1]);
  EXPECT_LT(a_tag, 4u);
  EXPECT_EQ(sbitmap_weight(&f.hctx[1].tags->bitmap_tags.sb), 1u);
  EXPECT_TRUE(b.woken) << "no compensating wake-up on the old map";
  sbitmap_finish_wait(&t0->bitmap_tags, ws, &b.w);
  EXPECT_EQ(atomic_read(&t0->bitmap_tags.ws_active), 0);
}

TEST_F(BlkMqTagTest, StressSleepingAllocation) {
  uk::pin_thread_to_cpu(-1);
  Fixture f(6, 2);
  const unsigned nthreads = uk::testing::StressThreads() * 2;
  const int iters = 2000;
  std::vector<std::atomic<int>> owner(2 * 8);
  for (auto &o : owner) o = 0;
  std::atomic<int> dup{0}, done{0}, bad{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < nthreads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < iters; i++) {
        blk_mq_req_flags_t fl = (i % 7 == 0) ? BLK_MQ_REQ_RESERVED : 0;
        struct blk_mq_alloc_data d = {};
        d.q = &f.q;
        d.flags = fl;
        d.ctx = blk_mq_get_ctx(&f.q);
        d.hctx = blk_mq_map_queue(d.q, 0, d.ctx);
        unsigned tag = blk_mq_get_tag(&d);
        if (tag >= 6) {
          bad++;
          continue;
        }
        int slot = d.hctx->queue_num * 8 + tag;
        if (owner[slot].exchange(1) != 0) dup++;
        owner[slot].store(0);
        blk_mq_put_tag(d.hctx->tags, d.ctx, tag);
      }
      done++;
    });
  }
  bool hung = !uk::testing::WaitFor(
      [&] { return done.load() >= (int)nthreads; }, std::chrono::seconds(30));
  while (done.load() < (int)nthreads) {
    for (auto *t : f.tags_arr) blk_mq_tag_wakeup_all(t, true);
    std::this_thread::yield();
  }
  for (auto &t : ts) t.join();
  EXPECT_FALSE(hung) << "a sleeper was never woken";
  EXPECT_EQ(dup.load(), 0);
  EXPECT_EQ(bad.load(), 0);
  for (auto *t : f.tags_arr) {
    EXPECT_EQ(sbitmap_weight(&t->bitmap_tags.sb), 0u);
    EXPECT_EQ(sbitmap_weight(&t->breserved_tags.sb), 0u);
  }
}

}  // namespace
