// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq.c on a bare queue (a test driver, no null_blk): freezing with
// and without an owner, quiescing a whole tag set, driver-private requests
// queued without waiting, polling one request, the in-flight checks and the
// plug's request cache for blk_mq_alloc_request(), and live changes of the
// number of hardware queues.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/completion.h>
#include <uk/linux/err.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include <uk/linux/sbitmap.h>
#include <uk/shim/printk.h>

#include "../../blk/blk-mq-tag.h"
#include "../../blk/blk-mq.h"
#include "testmain.h"

namespace {

// A driver that either completes each request at once or keeps it for the
// test to complete.
struct Driver {
  std::mutex mu;
  std::vector<struct request *> kept;
  std::atomic<int> queued{0};
  std::atomic<bool> keep{false};
  std::atomic<int> last_cpu{-1};  // where ->queue_rq() last ran
};

Driver *drv;

blk_status_t TestQueueRq(struct blk_mq_hw_ctx *,
                         const struct blk_mq_queue_data *bd) {
  drv->last_cpu = raw_smp_processor_id();
  blk_mq_start_request(bd->rq);
  if (drv->keep.load()) {
    {
      std::lock_guard<std::mutex> l(drv->mu);
      drv->kept.push_back(bd->rq);
    }
    // Counted once kept: a test that sees the count finds the request.
    drv->queued++;
    return BLK_STS_OK;
  }
  drv->queued++;
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

// Completes what the driver kept (the poll queue's requests).
int TestPoll(struct blk_mq_hw_ctx *, struct io_comp_batch *) {
  std::vector<struct request *> done;
  {
    std::lock_guard<std::mutex> l(drv->mu);
    done.swap(drv->kept);
  }
  for (struct request *rq : done) blk_mq_end_request(rq, BLK_STS_OK);
  return (int)done.size();
}

// One default queue (hctx 0) and one poll queue (hctx 1).
void TestMapQueues(struct blk_mq_tag_set *set) {
  set->map[HCTX_TYPE_DEFAULT].nr_queues = 1;
  set->map[HCTX_TYPE_DEFAULT].queue_offset = 0;
  set->map[HCTX_TYPE_READ].nr_queues = 0;
  set->map[HCTX_TYPE_POLL].nr_queues = 1;
  set->map[HCTX_TYPE_POLL].queue_offset = 1;
  blk_mq_map_queues(&set->map[HCTX_TYPE_DEFAULT]);
  blk_mq_map_queues(&set->map[HCTX_TYPE_POLL]);
}

const struct blk_mq_ops kOps = {
    .queue_rq = TestQueueRq,
};

const struct blk_mq_ops kPollOps = {
    .queue_rq = TestQueueRq,
    .poll = TestPoll,
    .map_queues = TestMapQueues,
};

// ->end_io of the driver-private requests: counts and frees them.
std::atomic<int> end_io_calls;

enum rq_end_io_ret CountEndIo(struct request *, blk_status_t) {
  end_io_calls++;
  return RQ_END_IO_FREE;
}

// Whether a request of @hctx holds a tag (the walk of blk-mq's static
// blk_mq_hctx_has_requests(), which CPU hotplug uses).
bool HctxHasRequests(struct blk_mq_hw_ctx *hctx) {
  struct Data {
    struct blk_mq_hw_ctx *hctx;
    bool has_rq;
  } data = {hctx, false};
  struct blk_mq_tags *tags = hctx->sched_tags ? hctx->sched_tags : hctx->tags;
  blk_mq_all_tag_iter(
      tags,
      [](struct request *rq, void *p) {
        auto *d = static_cast<Data *>(p);
        if (rq->mq_hctx != d->hctx) return true;
        d->has_rq = true;
        return false;
      },
      &data);
  return data.has_rq;
}

struct request *PrivateRequest(struct request_queue *q, blk_opf_t extra = 0) {
  struct request *rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN | extra, 0);
  if (IS_ERR(rq)) return nullptr;
  rq->end_io = CountEndIo;
  return rq;
}

class BlkMqTest : public ::testing::Test {
 protected:
  virtual unsigned int Depth() { return 8; }

  void SetUp() override {
    drv = new Driver;
    set_.ops = &kOps;
    set_.nr_hw_queues = 1;
    set_.queue_depth = Depth();
    set_.numa_node = -1;
    ASSERT_EQ(blk_mq_alloc_tag_set(&set_), 0);
    q_ = blk_mq_init_queue(&set_);
    ASSERT_FALSE(IS_ERR(q_));
  }

  void TearDown() override {
    blk_mq_destroy_queue(q_);
    blk_mq_free_tag_set(&set_);
    delete drv;
    drv = nullptr;
  }

  // Whether a request can be had without sleeping (false while frozen).
  bool CanAllocate() {
    struct request *rq =
        blk_mq_alloc_request(q_, REQ_OP_DRV_IN, BLK_MQ_REQ_NOWAIT);
    if (IS_ERR(rq)) return false;
    blk_mq_free_request(rq);
    return true;
  }

  struct blk_mq_tag_set set_ = {};
  struct request_queue *q_ = nullptr;
};

TEST_F(BlkMqTest, FreezeWaitsForTheLastRequest) {
  struct request *rq = blk_mq_alloc_request(q_, REQ_OP_DRV_IN, 0);
  ASSERT_FALSE(IS_ERR(rq));

  std::atomic<struct task_struct *> task{nullptr};
  std::atomic<bool> frozen{false};
  std::thread t([&] {
    task = current;
    blk_mq_freeze_queue(q_);
    frozen = true;
  });
  // The freezer sleeps while the request holds its usage reference.
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
  EXPECT_FALSE(frozen.load());
  EXPECT_EQ(q_->mq_freeze_depth, 1);

  blk_mq_free_request(rq);
  t.join();
  EXPECT_TRUE(frozen.load());
  EXPECT_TRUE(percpu_ref_is_zero(&q_->q_usage_counter));
  EXPECT_FALSE(CanAllocate());

  blk_mq_unfreeze_queue(q_);
  EXPECT_EQ(q_->mq_freeze_depth, 0);
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, FreezesNestAndTheLastUnfreezeReopens) {
  blk_freeze_queue(q_);
  blk_mq_freeze_queue(q_);
  EXPECT_EQ(q_->mq_freeze_depth, 2);
  blk_mq_unfreeze_queue(q_);
  EXPECT_EQ(q_->mq_freeze_depth, 1);
  EXPECT_FALSE(CanAllocate());
  blk_mq_unfreeze_queue(q_);
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, NonOwnerUnfreezeFromAnotherTask) {
  std::thread starter([&] { blk_freeze_queue_start_non_owner(q_); });
  starter.join();
  blk_mq_freeze_queue_wait(q_);
  EXPECT_EQ(q_->mq_freeze_depth, 1);
  EXPECT_FALSE(CanAllocate());

  std::thread ender([&] { blk_mq_unfreeze_queue_non_owner(q_); });
  ender.join();
  EXPECT_EQ(q_->mq_freeze_depth, 0);
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, OwnerTrackingNeedsLockdep) {
  // Without lockdep no task owns a freeze: neither half reports one.
  EXPECT_FALSE(__blk_freeze_queue_start(q_, current));
  blk_mq_freeze_queue_wait(q_);
  EXPECT_FALSE(__blk_mq_unfreeze_queue(q_, false));
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, UnfreezeCanForceAtomicMode) {
  blk_mq_freeze_queue(q_);
  EXPECT_FALSE(__blk_mq_unfreeze_queue(q_, true));
  EXPECT_TRUE(q_->q_usage_counter.data->force_atomic);
  // The counter is alive again, in atomic mode.
  EXPECT_TRUE(CanAllocate());
  blk_mq_freeze_queue(q_);
  EXPECT_TRUE(percpu_ref_is_zero(&q_->q_usage_counter));
  blk_mq_unfreeze_queue(q_);
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, QuiesceTagsetHoldsBackAllButTheSkippedQueue) {
  struct queue_limits lim = {};
  lim.features = BLK_FEAT_SKIP_TAGSET_QUIESCE;
  struct request_queue *skip = blk_mq_alloc_queue(&set_, &lim, nullptr);
  ASSERT_FALSE(IS_ERR(skip));
  end_io_calls = 0;

  blk_mq_quiesce_tagset(&set_);
  EXPECT_TRUE(blk_queue_quiesced(q_));
  EXPECT_FALSE(blk_queue_quiesced(skip));

  struct request *held = PrivateRequest(q_);
  struct request *passes = PrivateRequest(skip);
  ASSERT_NE(held, nullptr);
  ASSERT_NE(passes, nullptr);
  blk_execute_rq_nowait(held, false);
  blk_execute_rq_nowait(passes, false);
  ASSERT_TRUE(uk::testing::WaitFor([] { return end_io_calls.load() == 1; }));
  EXPECT_EQ(drv->queued.load(), 1);

  blk_mq_unquiesce_tagset(&set_);
  EXPECT_FALSE(blk_queue_quiesced(q_));
  ASSERT_TRUE(uk::testing::WaitFor([] { return end_io_calls.load() == 2; }));
  EXPECT_EQ(drv->queued.load(), 2);

  blk_mq_destroy_queue(skip);
}

TEST_F(BlkMqTest, ExecuteNowaitWaitsForTheUnplugUnlessAtHead) {
  end_io_calls = 0;
  struct blk_plug plug;
  blk_start_plug(&plug);
  struct request *tail = PrivateRequest(q_);
  struct request *head = PrivateRequest(q_);
  ASSERT_NE(tail, nullptr);
  ASSERT_NE(head, nullptr);
  blk_execute_rq_nowait(tail, false);
  // On the plug: nothing reached the driver.
  EXPECT_EQ(drv->queued.load(), 0);
  blk_execute_rq_nowait(head, true);
  ASSERT_TRUE(uk::testing::WaitFor([] { return end_io_calls.load() == 1; }));
  blk_finish_plug(&plug);
  ASSERT_TRUE(uk::testing::WaitFor([] { return end_io_calls.load() == 2; }));
  EXPECT_EQ(drv->queued.load(), 2);
}

TEST_F(BlkMqTest, QueueInflightSeesOnlyStartedRequests) {
  EXPECT_FALSE(blk_mq_queue_inflight(q_));
  struct request *rq = PrivateRequest(q_);
  ASSERT_NE(rq, nullptr);
  // Allocated, not started.
  EXPECT_FALSE(blk_mq_queue_inflight(q_));

  drv->keep = true;
  blk_execute_rq_nowait(rq, false);
  ASSERT_TRUE(uk::testing::WaitFor([] { return drv->queued.load() == 1; }));
  EXPECT_TRUE(blk_mq_queue_inflight(q_));

  blk_mq_end_request(drv->kept.at(0), BLK_STS_OK);
  drv->kept.clear();
  EXPECT_FALSE(blk_mq_queue_inflight(q_));
}

TEST_F(BlkMqTest, WakeWaitersSendsASleeperBackToTheTags) {
  std::vector<struct request *> held;
  for (unsigned int i = 0; i < set_.queue_depth; i++) {
    struct request *rq = blk_mq_alloc_request(q_, REQ_OP_DRV_IN, 0);
    ASSERT_FALSE(IS_ERR(rq));
    held.push_back(rq);
  }

  std::atomic<struct task_struct *> task{nullptr};
  std::atomic<struct request *> got{nullptr};
  std::thread sleeper([&] {
    task = current;
    got = blk_mq_alloc_request(q_, REQ_OP_DRV_IN, 0);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));

  // Free the last tag behind the tags' back (no wake-up), and drop the
  // usage reference of the request that had it: its struct goes with the tag.
  struct request *last = held.back();
  held.pop_back();
  struct blk_mq_tags *tags = q_->queue_hw_ctx[0]->tags;
  sbitmap_clear_bit(&tags->bitmap_tags.sb, last->tag - tags->nr_reserved_tags);
  blk_queue_exit(q_);

  blk_mq_wake_waiters(q_);
  sleeper.join();
  ASSERT_FALSE(IS_ERR(got.load()));
  EXPECT_EQ(got.load(), last);

  blk_mq_free_request(got.load());
  for (struct request *rq : held) blk_mq_free_request(rq);
}

TEST_F(BlkMqTest, RqInitAndRqCpu) {
  struct request rq;
  memset((void *)&rq, 0x5a, sizeof(rq));
  blk_rq_init(q_, &rq);
  EXPECT_EQ(rq.q, q_);
  EXPECT_EQ(rq.tag, (int)BLK_MQ_NO_TAG);
  EXPECT_EQ(rq.internal_tag, (int)BLK_MQ_NO_TAG);
  EXPECT_EQ(blk_rq_pos(&rq), (sector_t)-1);
  EXPECT_EQ(blk_rq_bytes(&rq), 0u);
  EXPECT_EQ(rq.bio, nullptr);
  EXPECT_EQ(rq.mq_hctx, nullptr);
  EXPECT_TRUE(list_empty(&rq.queuelist));
  // Not on a hardware queue: no poll queue either.
  EXPECT_FALSE(blk_rq_is_poll(&rq));

  struct request *real = PrivateRequest(q_);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(blk_mq_rq_cpu(real), real->mq_ctx->cpu);
  EXPECT_LT(blk_mq_rq_cpu(real), (unsigned int)nr_cpu_ids);
  EXPECT_FALSE(blk_rq_is_poll(real));
  EXPECT_EQ(blk_rq_poll(real, nullptr, 0), 0);
  blk_mq_free_request(real);
}

// Runs one request through @q and reports whether the driver saw it.
bool OneRequestRuns(struct request_queue *q) {
  int before = drv->queued.load();
  struct request *rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN, 0);
  if (IS_ERR(rq)) return false;
  blk_status_t sts = blk_execute_rq(rq, false);
  blk_mq_free_request(rq);
  return sts == BLK_STS_OK && drv->queued.load() == before + 1;
}

// Every hardware context of @q is mapped to the set's tags of its index.
void ExpectContextsOnTheSetsTags(struct request_queue *q,
                                 struct blk_mq_tag_set *set) {
  struct blk_mq_hw_ctx *hctx;
  unsigned long i;

  EXPECT_EQ(q->nr_hw_queues, set->nr_hw_queues);
  queue_for_each_hw_ctx(q, hctx, i) {
    EXPECT_EQ(hctx->queue_num, i);
    EXPECT_NE(set->tags[i], nullptr) << i;
    if (hctx->nr_ctx) {
      EXPECT_EQ(hctx->tags, set->tags[i]) << i;
    }
  }
}

TEST_F(BlkMqTest, UpdateNrHwQueuesGrowsAndShrinksLive) {
  unsigned int n = nr_cpu_ids;
  if (n < 2) GTEST_SKIP() << "one CPU: a single map caps the queues at one";

  blk_mq_update_nr_hw_queues(&set_, n);
  ExpectContextsOnTheSetsTags(q_, &set_);
  EXPECT_EQ(q_->nr_hw_queues, n);
  EXPECT_TRUE(OneRequestRuns(q_));

  // More queues than CPUs are capped at the CPU count; zero is refused.
  blk_mq_update_nr_hw_queues(&set_, n + 3);
  EXPECT_EQ(q_->nr_hw_queues, n);
  blk_mq_update_nr_hw_queues(&set_, 0);
  EXPECT_EQ(q_->nr_hw_queues, n);

  blk_mq_update_nr_hw_queues(&set_, 1);
  ExpectContextsOnTheSetsTags(q_, &set_);
  EXPECT_EQ(q_->nr_hw_queues, 1u);
  for (unsigned int i = 1; i < n; i++) EXPECT_EQ(set_.tags[i], nullptr) << i;
  EXPECT_TRUE(OneRequestRuns(q_));
}

TEST_F(BlkMqTest, UpdateNrHwQueuesFallsBackWhenAnAllocationFails) {
  unsigned int n = nr_cpu_ids;
  if (n < 2) GTEST_SKIP() << "one CPU: a single map caps the queues at one";

  // Fail each allocation of the grow in turn: the queue ends at the old
  // count or the new one, runs requests, and a failed grow leaves no
  // allocation behind.
  for (unsigned long nth = 1;; nth++) {
    long before = uk::kmalloc_nr_allocated() + uk::slab_total_allocated();
    ASSERT_EQ(uk::fail_nth_write(nth), 0);
    blk_mq_update_nr_hw_queues(&set_, n);
    bool reached = uk::fail_nth_read() == 0;
    uk::fail_nth_write(0);

    ExpectContextsOnTheSetsTags(q_, &set_);
    EXPECT_TRUE(OneRequestRuns(q_)) << nth;
    if (!reached) {
      EXPECT_EQ(q_->nr_hw_queues, n) << nth;
      break;
    }
    if (q_->nr_hw_queues == 1) {
      EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(), before)
          << nth;
      continue;
    }
    // The failure hit an allocation the grow can do without.
    EXPECT_EQ(q_->nr_hw_queues, n) << nth;
    blk_mq_update_nr_hw_queues(&set_, 1);
    ASSERT_EQ(q_->nr_hw_queues, 1u);
  }
}

TEST(BlkMqAllocTagSetTest, HalvesTheDepthWhenTheMapsDoNotFit) {
  // Fail each allocation of blk_mq_alloc_tag_set() in turn: a failed
  // request map is retried at half the depth, any other failure is -ENOMEM,
  // and neither leaves an allocation behind.
  drv = new Driver;
  // A queue an earlier test freed goes after a grace period: let it go
  // before counting.
  rcu_barrier();
  long before = uk::kmalloc_nr_allocated() + uk::slab_total_allocated();
  long pages_before = uk::page_alloc_nr_allocated();
  bool halved = false;
  for (unsigned long nth = 1;; nth++) {
    struct blk_mq_tag_set set = {};
    set.ops = &kOps;
    set.nr_hw_queues = 1;
    set.queue_depth = 64;
    set.numa_node = NUMA_NO_NODE;

    ASSERT_EQ(uk::fail_nth_write(nth), 0);
    int ret = blk_mq_alloc_tag_set(&set);
    bool reached = uk::fail_nth_read() == 0;
    uk::fail_nth_write(0);
    if (ret == 0) {
      EXPECT_TRUE(set.queue_depth == 64 || set.queue_depth == 32) << nth;
      halved |= set.queue_depth == 32;
      blk_mq_free_tag_set(&set);
    } else {
      EXPECT_EQ(ret, -ENOMEM) << nth;
    }
    EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(), before)
        << nth;
    EXPECT_EQ(uk::page_alloc_nr_allocated(), pages_before) << nth;
    if (!reached) {
      EXPECT_EQ(set.queue_depth, 64u);
      break;
    }
  }
  EXPECT_TRUE(halved);
  delete drv;
  drv = nullptr;
}

// Requests of a map come in blocks of pages: each block is the largest order
// up to 4 that the requests still left to place fill beyond its lower half.
size_t RqSize(const struct blk_mq_tag_set *set) {
  return round_up(sizeof(struct request) + set->cmd_size, 64);
}

long ExpectedPages(size_t rq_size, unsigned int depth,
                   size_t *blocks = nullptr) {
  size_t left = rq_size * depth;
  long pages = 0;
  if (blocks) *blocks = 0;
  for (unsigned int i = 0; i < depth;) {
    unsigned int order = 4;
    while (order && left < (PAGE_SIZE << (order - 1))) order--;
    unsigned int n =
        std::min<size_t>((PAGE_SIZE << order) / rq_size, depth - i);
    left -= n * rq_size;
    i += n;
    pages += 1L << order;
    if (blocks) ++*blocks;
  }
  return pages;
}

size_t ListLength(struct list_head *head) {
  size_t n = 0;
  for (struct list_head *p = head->next; p != head; p = p->next) n++;
  return n;
}

std::atomic<int> init_request_calls, exit_request_calls;

int CountInitRequest(struct blk_mq_tag_set *, struct request *rq, unsigned int,
                     unsigned int) {
  // The PDU follows the request and is zeroed, as the pages are.
  EXPECT_EQ(*(int *)blk_mq_rq_to_pdu(rq), 0);
  init_request_calls++;
  return 0;
}

void CountExitRequest(struct blk_mq_tag_set *, struct request *rq,
                      unsigned int) {
  exit_request_calls++;
}

const struct blk_mq_ops kPdusOps = {
    .queue_rq = TestQueueRq,
    .init_request = CountInitRequest,
    .exit_request = CountExitRequest,
};

class BlkMqRqPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    drv = new Driver;
    init_request_calls = 0;
    exit_request_calls = 0;
    kmalloc_before_ = uk::kmalloc_nr_allocated() + uk::slab_total_allocated();
    pages_before_ = uk::page_alloc_nr_allocated();
    set_.ops = &kPdusOps;
    set_.nr_hw_queues = 1;
    set_.queue_depth = 64;
    set_.cmd_size = 3000;
    set_.numa_node = NUMA_NO_NODE;
    ASSERT_EQ(blk_mq_alloc_tag_set(&set_), 0);
    ASSERT_EQ(set_.queue_depth, 64u);
  }

  void TearDown() override {
    blk_mq_free_tag_set(&set_);
    EXPECT_EQ(exit_request_calls.load(), init_request_calls.load());
    EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(),
              kmalloc_before_);
    EXPECT_EQ(uk::page_alloc_nr_allocated(), pages_before_);
    delete drv;
    drv = nullptr;
  }

  struct blk_mq_tag_set set_ = {};
  long kmalloc_before_ = 0, pages_before_ = 0;
};

TEST_F(BlkMqRqPagesTest, RequestsFillBlocksOfUpToOrderFour) {
  size_t rq_size = RqSize(&set_);
  size_t blocks;
  long pages = ExpectedPages(rq_size, 64, &blocks);
  struct blk_mq_tags *tags = set_.tags[0];

  // 64 requests of over 3 KiB: more than one block, and one page per
  // request would be more than the blocks take.
  EXPECT_GT(blocks, 1u);
  EXPECT_LT(pages, 64);
  EXPECT_EQ(uk::page_alloc_nr_allocated() - pages_before_, pages);
  EXPECT_EQ(ListLength(&tags->page_list), blocks);
  EXPECT_EQ(init_request_calls.load(), 64);

  unsigned int per_block = (PAGE_SIZE << 4) / rq_size;
  for (unsigned int i = 0; i < 64; i++) {
    char *rq = (char *)tags->static_rqs[i];
    ASSERT_NE(rq, nullptr) << i;
    EXPECT_EQ(tags->static_rqs[i]->state, MQ_RQ_IDLE) << i;
    if (i % per_block == 0) {
      // Each block starts with a request, on a page boundary.
      EXPECT_EQ((uintptr_t)rq % PAGE_SIZE, 0u) << i;
    } else {
      EXPECT_EQ(rq - (char *)tags->static_rqs[i - 1], (ptrdiff_t)rq_size) << i;
    }
  }
}

TEST_F(BlkMqRqPagesTest, SmallerOrdersWhenABlockCannotBeHad) {
  // Fail each allocation of another map in turn: a failed block is
  // retried at the next lower order, so the map still comes up, with more
  // and smaller blocks; any other failure gives NULL and leaves nothing.
  size_t rq_size = RqSize(&set_);
  long kmalloc_base = uk::kmalloc_nr_allocated() + uk::slab_total_allocated();
  long pages_base = uk::page_alloc_nr_allocated();
  bool fell_back = false;
  for (unsigned long nth = 1;; nth++) {
    int inits = init_request_calls.load();
    ASSERT_EQ(uk::fail_nth_write(nth), 0);
    struct blk_mq_tags *tags = blk_mq_alloc_map_and_rqs(&set_, 0, 16);
    bool reached = uk::fail_nth_read() == 0;
    uk::fail_nth_write(0);
    if (tags) {
      size_t blocks = ListLength(&tags->page_list);
      // 16 requests: one order-4 block (19 fit) unless it failed.
      EXPECT_GE(blocks, 1u) << nth;
      fell_back |= blocks > 1;
      EXPECT_EQ(init_request_calls.load() - inits, 16) << nth;
      for (unsigned int i = 0; i < 16; i++)
        EXPECT_NE(tags->static_rqs[i], nullptr) << nth << " " << i;
      if (blocks == 1) {
        EXPECT_EQ(uk::page_alloc_nr_allocated() - pages_base,
                  ExpectedPages(rq_size, 16))
            << nth;
      }
      blk_mq_free_map_and_rqs(&set_, tags, 0);
    }
    EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(),
              kmalloc_base)
        << nth;
    EXPECT_EQ(uk::page_alloc_nr_allocated(), pages_base) << nth;
    if (!reached) break;
  }
  EXPECT_TRUE(fell_back);
}

TEST_F(BlkMqRqPagesTest, FreeingAnotherMapClearsTheDriverTagsPointingIntoIt) {
  // A second map on hctx 0 (as scheduler tags are): the driver tag that
  // points at one of its requests is cleared when it is freed, the one that
  // points at a driver request is left.
  struct blk_mq_tags *drv_tags = set_.tags[0];
  struct blk_mq_tags *other = blk_mq_alloc_map_and_rqs(&set_, 0, 8);
  ASSERT_NE(other, nullptr);
  drv_tags->rqs[3] = other->static_rqs[5];
  drv_tags->rqs[4] = drv_tags->static_rqs[4];
  int exits = exit_request_calls.load();

  blk_mq_free_map_and_rqs(&set_, other, 0);
  EXPECT_EQ(exit_request_calls.load() - exits, 8);
  EXPECT_EQ(drv_tags->rqs[3], nullptr);
  EXPECT_EQ(drv_tags->rqs[4], drv_tags->static_rqs[4]);
  drv_tags->rqs[4] = nullptr;

  // Freeing the driver map's own requests leaves its tags alone: they
  // are the mapping being torn down.
  struct request *own = drv_tags->static_rqs[6];
  drv_tags->rqs[6] = own;
  blk_mq_free_rqs(&set_, drv_tags, 0);
  EXPECT_EQ(drv_tags->rqs[6], own);
  EXPECT_EQ(drv_tags->static_rqs[6], nullptr);
  EXPECT_TRUE(list_empty(&drv_tags->page_list));
  drv_tags->rqs[6] = nullptr;
  // A second free finds no pages and does nothing (TearDown's).
}

struct completion *async_done;

// Leaves the request to the test, which frees it after the wait.
enum rq_end_io_ret CompleteEndIo(struct request *, blk_status_t) {
  complete(async_done);
  return RQ_END_IO_NONE;
}

TEST(BlkMqCpuMaskTest, AsyncRunsGoToTheHctxsOwnCpus) {
  if (nr_cpu_ids < 2) GTEST_SKIP() << "one CPU: one hctx, run unbound";
  drv = new Driver;
  struct blk_mq_tag_set set = {};
  set.ops = &kOps;
  set.nr_hw_queues = 2;
  set.queue_depth = 4;
  set.reserved_tags = 1;
  set.numa_node = NUMA_NO_NODE;
  set.flags = BLK_MQ_F_BLOCKING;  // every run is asynchronous, on kblockd
  ASSERT_EQ(blk_mq_alloc_tag_set(&set), 0);
  struct request_queue *q = blk_mq_init_queue(&set);
  ASSERT_FALSE(IS_ERR(q));

  // Each CPU is in the mask of the hctx its software queue maps to, and
  // in no other.
  for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
    unsigned int idx = set.map[HCTX_TYPE_DEFAULT].mq_map[cpu];
    for (unsigned int i = 0; i < q->nr_hw_queues; i++)
      EXPECT_EQ(cpumask_test_cpu(cpu, q->queue_hw_ctx[i]->cpumask), i == idx)
          << cpu << " " << i;
  }

  // Runs of each hctx happen on its CPUs, whichever CPU asks.
  struct completion done;
  async_done = &done;
  for (int round = 0; round < 2 * BLK_MQ_CPU_WORK_BATCH; round++) {
    for (unsigned int i = 0; i < q->nr_hw_queues; i++) {
      struct blk_mq_hw_ctx *hctx = q->queue_hw_ctx[i];
      init_completion(&done);
      struct request *rq = blk_mq_alloc_request_hctx(
          q, REQ_OP_DRV_IN, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED, i);
      ASSERT_FALSE(IS_ERR(rq));
      rq->end_io = CompleteEndIo;
      blk_execute_rq_nowait(rq, false);
      wait_for_completion(&done);
      blk_mq_free_request(rq);
      int cpu = drv->last_cpu.load();
      ASSERT_GE(cpu, 0);
      EXPECT_TRUE(cpumask_test_cpu(cpu, hctx->cpumask))
          << "hctx " << i << " ran on CPU " << cpu;
    }
  }
  async_done = nullptr;

  blk_mq_destroy_queue(q);
  blk_mq_free_tag_set(&set);
  delete drv;
  drv = nullptr;
}

TEST(BlkMqSqTagSetTest, OneQueueOneMap) {
  drv = new Driver;
  struct blk_mq_tag_set set;
  memset((void *)&set, 0x5a, sizeof(set));
  ASSERT_EQ(blk_mq_alloc_sq_tag_set(&set, &kOps, 16, 0), 0);
  EXPECT_EQ(set.nr_hw_queues, 1u);
  EXPECT_EQ(set.nr_maps, 1u);
  EXPECT_EQ(set.queue_depth, 16u);
  EXPECT_EQ(set.numa_node, NUMA_NO_NODE);
  EXPECT_EQ(set.flags & BLK_MQ_F_BLOCKING, 0u);
  EXPECT_EQ(set.cmd_size, 0u);

  struct request_queue *q = blk_mq_init_queue(&set);
  ASSERT_FALSE(IS_ERR(q));
  struct request *rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN, 0);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_EQ(blk_execute_rq(rq, false), BLK_STS_OK);
  blk_mq_free_request(rq);
  EXPECT_EQ(drv->queued.load(), 1);

  blk_mq_destroy_queue(q);
  blk_mq_free_tag_set(&set);
  delete drv;
  drv = nullptr;
}

// A request on the poll queue: blk_execute_rq() completes it by polling.
TEST(BlkMqPollTest, ExecuteRqPollsAPollQueueRequest) {
  drv = new Driver;
  drv->keep = true;
  struct blk_mq_tag_set set = {};
  set.ops = &kPollOps;
  set.nr_hw_queues = 2;
  set.nr_maps = HCTX_MAX_TYPES;
  set.queue_depth = 4;
  set.numa_node = NUMA_NO_NODE;
  ASSERT_EQ(blk_mq_alloc_tag_set(&set), 0);
  struct request_queue *q = blk_mq_init_queue(&set);
  ASSERT_FALSE(IS_ERR(q));
  EXPECT_TRUE(blk_mq_can_poll(q));

  struct request *rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN | REQ_POLLED, 0);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_TRUE(blk_rq_is_poll(rq));
  // Kept by the driver; only the poll loop completes it.
  EXPECT_EQ(blk_execute_rq(rq, false), BLK_STS_OK);
  EXPECT_TRUE(drv->kept.empty());
  blk_mq_free_request(rq);

  // blk_rq_poll() on a request still in the driver finds it.
  rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN | REQ_POLLED, 0);
  ASSERT_FALSE(IS_ERR(rq));
  end_io_calls = 0;
  rq->end_io = CountEndIo;
  blk_execute_rq_nowait(rq, false);
  ASSERT_TRUE(uk::testing::WaitFor([] { return drv->queued.load() == 2; }));
  EXPECT_EQ(blk_rq_poll(rq, nullptr, 0), 1);
  EXPECT_EQ(end_io_calls.load(), 1);

  blk_mq_destroy_queue(q);
  blk_mq_free_tag_set(&set);
  delete drv;
  drv = nullptr;
}

// Deep enough that a plug's batch finds its tags in one sbitmap word.
class BlkMqPlugCacheTest : public BlkMqTest {
 protected:
  unsigned int Depth() override { return 64; }
};

TEST_F(BlkMqPlugCacheTest, AllocRequestTakesFromThePlugCache) {
  struct blk_plug plug;
  blk_start_plug_nr_ios(&plug, 4);
  struct request *first = blk_mq_alloc_request(q_, REQ_OP_DRV_IN, 0);
  ASSERT_FALSE(IS_ERR(first));
  // The first allocation took four tags and left three on the plug.
  EXPECT_EQ(plug.nr_ios, 1);
  int cached = 0;
  for (struct request *rq = rq_list_peek(&plug.cached_rqs); rq;
       rq = rq->rq_next)
    cached++;
  EXPECT_EQ(cached, 3);

  struct request *next = rq_list_peek(&plug.cached_rqs);
  struct request *second = blk_mq_alloc_request(q_, REQ_OP_DRV_OUT, 0);
  ASSERT_FALSE(IS_ERR(second));
  EXPECT_EQ(second, next);
  EXPECT_EQ(second->cmd_flags, (blk_opf_t)REQ_OP_DRV_OUT);
  EXPECT_EQ(blk_rq_bytes(second), 0u);
  EXPECT_EQ(blk_rq_pos(second), (sector_t)-1);
  EXPECT_EQ(second->bio, nullptr);
  EXPECT_TRUE(list_empty(&second->queuelist));

  blk_mq_free_request(first);
  blk_mq_free_request(second);
  // The unplug frees the cached rest with their usage references.
  blk_finish_plug(&plug);
  blk_freeze_queue_start(q_);
  EXPECT_GT(blk_mq_freeze_queue_wait_timeout(q_, 10 * HZ), 0);
  blk_mq_unfreeze_queue(q_);
}

struct BioResult {
  std::atomic<int> calls{0};
  std::atomic<blk_status_t> status{BLK_STS_OK};
};

void RecordBioEnd(struct bio *bio) {
  auto *res = static_cast<BioResult *>(bio->bi_private);
  res->status = bio->bi_status;
  res->calls++;
}

TEST_F(BlkMqTest, SubmitBioFailsAnUnalignedBio) {
  q_->limits.logical_block_size = 4096;
  struct block_device bdev = {};
  bdev.bd_queue = q_;

  struct {
    unsigned int size;
    sector_t sector;
  } cases[] = {{512, 0}, {4096, 1}, {0, 7}};
  for (const auto &c : cases) {
    BioResult res;
    struct bio bio;
    bio_init(&bio, &bdev, nullptr, 0, REQ_OP_READ);
    bio.bi_iter.bi_size = c.size;
    bio.bi_iter.bi_sector = c.sector;
    bio.bi_end_io = RecordBioEnd;
    bio.bi_private = &res;
    blk_mq_submit_bio(&bio);
    EXPECT_EQ(res.calls.load(), 1) << c.size << "@" << c.sector;
    EXPECT_EQ(res.status.load(), BLK_STS_IOERR) << c.size << "@" << c.sector;
    EXPECT_EQ(blk_status_to_errno(res.status.load()), -EIO);
    bio_uninit(&bio);
  }
  EXPECT_EQ(drv->queued.load(), 0);
  EXPECT_FALSE(HctxHasRequests(q_->queue_hw_ctx[0]));
  // Every failed bio gave its q_usage_counter reference back.
  blk_freeze_queue_start(q_);
  EXPECT_GT(blk_mq_freeze_queue_wait_timeout(q_, 10 * HZ), 0);
  blk_mq_unfreeze_queue(q_);
}

// Two hardware queues (default and poll) with one reserved tag each.
TEST(BlkMqAllocHctxTest, ReservedRequestOnTheGivenHctx) {
  drv = new Driver;
  struct blk_mq_tag_set set = {};
  set.ops = &kPollOps;
  set.nr_hw_queues = 2;
  set.nr_maps = HCTX_MAX_TYPES;
  set.queue_depth = 4;
  set.reserved_tags = 1;
  set.numa_node = NUMA_NO_NODE;
  ASSERT_EQ(blk_mq_alloc_tag_set(&set), 0);
  struct request_queue *q = blk_mq_init_queue(&set);
  ASSERT_FALSE(IS_ERR(q));
  const blk_mq_req_flags_t flags = BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_RESERVED;
  struct blk_mq_hw_ctx *poll_hctx = q->queue_hw_ctx[1];

  struct request *rq = blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN, flags, 1);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_EQ(rq->mq_hctx, poll_hctx);
  EXPECT_EQ(rq->mq_ctx->hctxs[HCTX_TYPE_POLL], poll_hctx);
  EXPECT_TRUE(rq->rq_flags & RQF_RESV);
  EXPECT_LT((unsigned int)rq->tag, poll_hctx->tags->nr_reserved_tags);
  EXPECT_EQ(blk_rq_bytes(rq), 0u);
  EXPECT_EQ(blk_rq_pos(rq), (sector_t)-1);
  EXPECT_EQ(rq->bio, nullptr);
  EXPECT_TRUE(HctxHasRequests(poll_hctx));
  EXPECT_FALSE(HctxHasRequests(q->queue_hw_ctx[0]));

  // The hctx's one reserved tag is taken; hctx 0 has its own.
  struct request *none = blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN, flags, 1);
  ASSERT_TRUE(IS_ERR(none));
  EXPECT_EQ(PTR_ERR(none), -EWOULDBLOCK);
  struct request *other = blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN, flags, 0);
  ASSERT_FALSE(IS_ERR(other));
  EXPECT_EQ(other->mq_hctx, q->queue_hw_ctx[0]);

  // No such hctx, and a request that could sleep or take a normal tag.
  EXPECT_EQ(PTR_ERR(blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN, flags, 2)),
            -EIO);
  uk::testing::AllowWarnings();
  EXPECT_EQ(PTR_ERR(blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN,
                                              BLK_MQ_REQ_RESERVED, 1)),
            -EINVAL);
  EXPECT_EQ(PTR_ERR(blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN,
                                              BLK_MQ_REQ_NOWAIT, 1)),
            -EINVAL);

  blk_mq_free_request(rq);
  blk_mq_free_request(other);
  EXPECT_FALSE(HctxHasRequests(poll_hctx));
  // The freed reserved tag can be had again.
  rq = blk_mq_alloc_request_hctx(q, REQ_OP_DRV_IN, flags, 1);
  ASSERT_FALSE(IS_ERR(rq));
  blk_mq_free_request(rq);

  blk_mq_destroy_queue(q);
  blk_mq_free_tag_set(&set);
  delete drv;
  drv = nullptr;
}

std::string *printk_lines;

void CapturePrintk(int level, const char *text) {
  *printk_lines += std::to_string(level) + ":" + text;
}

TEST_F(BlkMqTest, DumpRqFlagsPrintsPositionAndCurrentSegment) {
  alignas(4096) static char buf[4096];
  struct bio_vec vecs[2];
  bvec_set_virt(&vecs[0], buf, 1024);
  bvec_set_virt(&vecs[1], buf + 1024, 3072);
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 2, REQ_OP_READ);
  bio.bi_vcnt = 2;
  bio.bi_iter.bi_size = 4096;

  struct request *rq = PrivateRequest(q_);
  ASSERT_NE(rq, nullptr);
  rq->bio = rq->biotail = &bio;
  rq->__sector = 8;
  rq->__data_len = 4096;

  std::string lines;
  printk_lines = &lines;
  uk::printk_hook = CapturePrintk;
  char msg[] = "dump";
  blk_dump_rq_flags(rq, msg);
  uk::printk_hook = nullptr;
  printk_lines = nullptr;

  char flags[32];
  snprintf(flags, sizeof(flags), "%llx", (unsigned long long)rq->cmd_flags);
  char ptrs[64];
  snprintf(ptrs, sizeof(ptrs), "%p, biotail %p", (void *)&bio, (void *)&bio);
  // No disk behind the queue: "?". Eight sectors, the first segment two.
  EXPECT_EQ(lines, std::string("6:dump: dev ?: flags=") + flags +
                       "\n6:  sector 8, nr/cnr 8/2\n6:  bio " + ptrs +
                       ", len 4096\n");

  rq->bio = rq->biotail = nullptr;
  rq->__data_len = 0;
  EXPECT_EQ(blk_rq_cur_sectors(rq), 0u);
  blk_mq_free_request(rq);
  bio_uninit(&bio);
}

// An error completion prints one line (blk_print_req_error()), unless the
// request is quiet or its disk is dead; the disk here is one made for a queue
// its driver keeps (blk_mq_alloc_disk_for_queue()).
TEST_F(BlkMqTest, ReqErrorIsPrintedUnlessQuietOrTheDiskIsDead) {
  ASSERT_EQ(refcount_read(&q_->refs), 1u);
  struct gendisk *disk = blk_mq_alloc_disk_for_queue(q_, nullptr);
  ASSERT_NE(disk, nullptr);
  EXPECT_EQ(refcount_read(&q_->refs), 2u);
  EXPECT_EQ(q_->disk, disk);
  EXPECT_FALSE(test_bit(GD_OWNS_QUEUE, &disk->state));
  snprintf(disk->disk_name, DISK_NAME_LEN, "tdisk");

  auto fail_one = [&](req_flags_t flags) {
    alignas(4096) static char buf[4096];
    struct bio_vec vec;
    bvec_set_virt(&vec, buf, 4096);
    BioResult res;
    struct bio bio;
    bio_init(&bio, nullptr, &vec, 1, REQ_OP_READ);
    bio.bi_vcnt = 1;
    bio.bi_iter.bi_size = 4096;
    bio.bi_end_io = RecordBioEnd;
    bio.bi_private = &res;
    struct request *rq = blk_mq_alloc_request(q_, REQ_OP_READ, 0);
    EXPECT_FALSE(IS_ERR(rq));
    rq->rq_flags |= flags;
    rq->bio = rq->biotail = &bio;
    rq->__sector = 8;
    rq->__data_len = 4096;
    rq->nr_phys_segments = 3;
    bio.bi_ioprio = 2 << IOPRIO_CLASS_SHIFT;
    unsigned int cmd_flags = rq->cmd_flags & ~REQ_OP_MASK;
    blk_mq_end_request(rq, BLK_STS_IOERR);
    EXPECT_EQ(res.calls.load(), 1);
    EXPECT_EQ(res.status.load(), BLK_STS_IOERR);
    bio_uninit(&bio);
    return cmd_flags;
  };

  std::string lines;
  printk_lines = &lines;
  uk::printk_hook = CapturePrintk;
  unsigned int cmd_flags = fail_one(0);
  char expect[160];
  snprintf(expect, sizeof(expect),
           "3:I/O error, dev tdisk, sector 8 op 0x0:(READ) flags 0x%x "
           "phys_seg 3 prio class 2\n",
           cmd_flags);
  EXPECT_EQ(lines, expect);
  lines.clear();
  fail_one(RQF_QUIET);
  EXPECT_EQ(lines, "");
  set_bit(GD_DEAD, &disk->state);
  fail_one(0);
  EXPECT_EQ(lines, "");
  uk::printk_hook = nullptr;
  printk_lines = nullptr;

  // The disk does not own the queue: putting it leaves the queue working.
  put_disk(disk);
  EXPECT_EQ(q_->disk, nullptr);
  EXPECT_EQ(refcount_read(&q_->refs), 1u);
  EXPECT_TRUE(CanAllocate());
}

TEST_F(BlkMqTest, AllocDiskForQueueFailsOnADyingQueue) {
  blk_queue_flag_set(QUEUE_FLAG_DYING, q_);
  EXPECT_EQ(blk_mq_alloc_disk_for_queue(q_, nullptr), nullptr);
  EXPECT_EQ(refcount_read(&q_->refs), 1u);
  blk_queue_flag_clear(QUEUE_FLAG_DYING, q_);
}

TEST_F(BlkMqTest, StealBiosAppendsTheRequestsBios) {
  struct bio b0, b1, b2;
  bio_init(&b0, nullptr, nullptr, 0, REQ_OP_WRITE);
  bio_init(&b1, nullptr, nullptr, 0, REQ_OP_WRITE);
  bio_init(&b2, nullptr, nullptr, 0, REQ_OP_WRITE);
  struct bio_list list;
  bio_list_init(&list);
  list.head = list.tail = &b0;

  struct request *rq = PrivateRequest(q_);
  ASSERT_NE(rq, nullptr);
  b1.bi_next = &b2;
  rq->bio = &b1;
  rq->biotail = &b2;
  rq->__data_len = 8192;
  blk_steal_bios(&list, rq);
  EXPECT_EQ(rq->bio, nullptr);
  EXPECT_EQ(rq->biotail, nullptr);
  EXPECT_EQ(blk_rq_bytes(rq), 0u);
  EXPECT_EQ(bio_list_pop(&list), &b0);
  EXPECT_EQ(bio_list_pop(&list), &b1);
  EXPECT_EQ(bio_list_pop(&list), &b2);
  EXPECT_TRUE(bio_list_empty(&list));
  EXPECT_EQ(list.tail, nullptr);

  // Into an empty list, and from a request without bios.
  rq->bio = rq->biotail = &b1;
  rq->__data_len = 4096;
  blk_steal_bios(&list, rq);
  EXPECT_EQ(list.head, &b1);
  EXPECT_EQ(list.tail, &b1);
  blk_steal_bios(&list, rq);
  EXPECT_EQ(list.head, &b1);
  EXPECT_EQ(bio_list_pop(&list), &b1);

  blk_mq_free_request(rq);
  bio_uninit(&b0);
  bio_uninit(&b1);
  bio_uninit(&b2);
}

// nr_requests: only a frozen queue changes it; without a scheduler the driver
// tags shrink and grow back, never past their size or down to the reserved.
// Counts the clones ->bio_ctr() sees and fails the one numbered fail_at.
struct CloneCtr {
  int seen = 0;
  int fail_at = -1;
  std::vector<std::pair<struct bio *, struct bio *>> pairs;
};

int CountCloneCtr(struct bio *bio, struct bio *bio_src, void *data) {
  auto *c = static_cast<CloneCtr *>(data);
  c->pairs.emplace_back(bio, bio_src);
  return c->seen++ == c->fail_at ? -EIO : 0;
}

TEST_F(BlkMqTest, PrepCloneClonesTheBiosAndUnprepFreesThem) {
  struct gendisk *disk = blk_mq_alloc_disk_for_queue(q_, nullptr);
  ASSERT_NE(disk, nullptr);
  struct bio_set bs = {};
  ASSERT_EQ(bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS), 0);
  long before = uk::kmalloc_nr_allocated() + uk::slab_total_allocated();

  alignas(4096) static char buf[8192];
  struct bio_vec v0, v1;
  struct bio b0, b1;
  bio_init(&b0, nullptr, &v0, 1, REQ_OP_WRITE);
  bio_init(&b1, nullptr, &v1, 1, REQ_OP_WRITE);
  __bio_add_page(&b0, virt_to_page(buf), 4096, 0);
  __bio_add_page(&b1, virt_to_page(buf + 4096), 2048, 0);
  struct request *src = PrivateRequest(q_);
  struct request *rq = PrivateRequest(q_);
  ASSERT_NE(src, nullptr);
  ASSERT_NE(rq, nullptr);
  b0.bi_next = &b1;
  src->bio = &b0;
  src->biotail = &b1;
  src->__sector = 24;
  src->__data_len = 6144;
  src->nr_phys_segments = 2;

  CloneCtr ctr;
  ASSERT_EQ(blk_rq_prep_clone(rq, src, &bs, GFP_KERNEL, CountCloneCtr, &ctr),
            0);
  EXPECT_EQ(blk_rq_pos(rq), 24u);
  EXPECT_EQ(blk_rq_bytes(rq), 6144u);
  EXPECT_EQ(rq->nr_phys_segments, 2);
  ASSERT_NE(rq->bio, nullptr);
  ASSERT_EQ(ctr.pairs.size(), 2u);
  // In order, on the queue's disk, sharing the source's pages.
  EXPECT_EQ(rq->bio, ctr.pairs[0].first);
  EXPECT_EQ(rq->bio->bi_next, ctr.pairs[1].first);
  EXPECT_EQ(rq->biotail, ctr.pairs[1].first);
  EXPECT_EQ(ctr.pairs[0].second, &b0);
  EXPECT_EQ(ctr.pairs[1].second, &b1);
  EXPECT_EQ(rq->bio->bi_bdev, disk->part0);
  EXPECT_EQ(rq->bio->bi_io_vec, b0.bi_io_vec);
  EXPECT_EQ(rq->biotail->bi_iter.bi_size, 2048u);
  EXPECT_NE(rq->bio, &b0);

  blk_rq_unprep_clone(rq);
  EXPECT_EQ(rq->bio, nullptr);
  EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(), before);

  // A clone that ->bio_ctr() rejects: -ENOMEM, and no clone is left.
  CloneCtr fail;
  fail.fail_at = 1;
  EXPECT_EQ(blk_rq_prep_clone(rq, src, &bs, GFP_KERNEL, CountCloneCtr, &fail),
            -ENOMEM);
  EXPECT_EQ(fail.seen, 2);
  EXPECT_EQ(rq->bio, nullptr);
  EXPECT_EQ(uk::kmalloc_nr_allocated() + uk::slab_total_allocated(), before);

  src->bio = src->biotail = nullptr;
  blk_mq_free_request(src);
  blk_mq_free_request(rq);
  bio_uninit(&b0);
  bio_uninit(&b1);
  bioset_exit(&bs);
  put_disk(disk);
}

TEST_F(BlkMqTest, UpdateNrRequestsResizesTheDriverTags) {
  // WARN_ON_ONCE: it prints on the first run only (--gtest_repeat).
  static bool warned;
  long warns = uk::warn_count;
  uk::testing::AllowWarnings();
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 4), -EINVAL);
  EXPECT_EQ(uk::warn_count, warns + (warned ? 0 : 1));
  warned = true;

  blk_mq_freeze_queue(q_);
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 8), 0);
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 16), -EINVAL);
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 0), -EINVAL);
  EXPECT_EQ(q_->nr_requests, 8u);
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 4), 0);
  EXPECT_EQ(q_->nr_requests, 4u);
  EXPECT_EQ(q_->queue_hw_ctx[0]->tags->bitmap_tags.sb.depth, 4u);
  EXPECT_FALSE(blk_queue_quiesced(q_));
  blk_mq_unfreeze_queue(q_);

  std::vector<struct request *> rqs;
  for (;;) {
    struct request *rq =
        blk_mq_alloc_request(q_, REQ_OP_DRV_IN, BLK_MQ_REQ_NOWAIT);
    if (IS_ERR(rq)) {
      EXPECT_EQ(PTR_ERR(rq), -EWOULDBLOCK);
      break;
    }
    rqs.push_back(rq);
    ASSERT_LE(rqs.size(), 8u);
  }
  EXPECT_EQ(rqs.size(), 4u);
  for (struct request *rq : rqs) blk_mq_free_request(rq);

  blk_mq_freeze_queue(q_);
  EXPECT_EQ(blk_mq_update_nr_requests(q_, 8), 0);
  blk_mq_unfreeze_queue(q_);
  EXPECT_EQ(q_->queue_hw_ctx[0]->tags->bitmap_tags.sb.depth, 8u);
}

// The contexts outlive blk_mq_destroy_queue() while a reference is held, and
// go with the last one (blk_mq_release()); a disk from blk_mq_alloc_disk()
// owns its queue.
TEST_F(BlkMqTest, ContextsAreFreedWithTheLastQueueReference) {
  size_t percpu_before = uk::percpu_bytes_in_use();
  struct request_queue *q = blk_mq_init_queue(&set_);
  ASSERT_FALSE(IS_ERR(q));
  ASSERT_NE(q->mq_ctxs, nullptr);
  int cpu;
  for_each_possible_cpu(cpu) {
    EXPECT_EQ(per_cpu_ptr(q->queue_ctx, cpu)->ctxs, q->mq_ctxs);
  }
  ASSERT_TRUE(blk_get_queue(q));
  blk_mq_destroy_queue(q);
  EXPECT_NE(q->queue_ctx, nullptr);
  EXPECT_NE(q->queue_hw_ctx, nullptr);
  EXPECT_GT(uk::percpu_bytes_in_use(), percpu_before);
  blk_put_queue(q);
  rcu_barrier();  // q_usage_counter goes after a grace period
  EXPECT_EQ(uk::percpu_bytes_in_use(), percpu_before);

  struct gendisk *disk = blk_mq_alloc_disk(&set_, nullptr, nullptr);
  ASSERT_FALSE(IS_ERR(disk));
  EXPECT_TRUE(test_bit(GD_OWNS_QUEUE, &disk->state));
  EXPECT_EQ(disk->queue->disk, disk);
  EXPECT_EQ(refcount_read(&disk->queue->refs), 2u);
  put_disk(disk);
  rcu_barrier();
  EXPECT_EQ(uk::percpu_bytes_in_use(), percpu_before);
}

}  // namespace
