// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq-tag.c: numbering, NOWAIT, batches, fair sharing, the sleep
// loop with hctx re-resolution, iterators, resize and unique tags.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/smp.h>

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
      set.shared_tags = blk_mq_init_tags(depth, reserved, flags, -1);
      tags_arr[0] = tags_arr[1] = set.shared_tags;
    } else {
      for (int i = 0; i < 2; i++)
        tags_arr[i] = blk_mq_init_tags(depth, reserved, flags, -1);
    }
    set.tags = tags_arr;
    q.tag_set = &set;
    q.nr_hw_queues = 2;
    q.queue_hw_ctx = hctxs;
    q.queue_ctx = alloc_percpu(struct blk_mq_ctx);
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
      blk_mq_free_tags(&set, set.shared_tags);
    } else {
      for (auto *t : tags_arr) blk_mq_free_tags(&set, t);
    }
    free_percpu(q.queue_ctx);
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
  EXPECT_EQ(blk_mq_init_tags(BLK_MQ_TAG_MAX + 1u, 0, 0, -1), nullptr);
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
  // No batches for reserved, shallow or shared-queue allocations.
  auto dr = f.data(0, BLK_MQ_REQ_RESERVED);
  EXPECT_EQ(blk_mq_get_tags(&dr, 2, &off), 0ul);
  auto ds = f.data(0);
  ds.shallow_depth = 8;
  EXPECT_EQ(blk_mq_get_tags(&ds, 2, &off), 0ul);
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
  tags->rqs = nullptr;
  tags->static_rqs = nullptr;
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
  while (!task.load()) std::this_thread::yield();
  ASSERT_TRUE(uk::wait_task_blocked(task.load()));
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
        d.hctx = blk_mq_map_queue(0, d.ctx);
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
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.load() < (int)nthreads &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  bool hung = done.load() < (int)nthreads;
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
