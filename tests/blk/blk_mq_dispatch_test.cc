// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq.c's dispatch: dispatch budgets (->get_budget/->put_budget and
// the request's budget token), and a request that still needs a driver tag
// waiting for one (blk_mq_mark_tag_wait(), blk_mq_dispatch_wake()).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <uk/linux/blk-mq.h>
#include <uk/linux/err.h>
#include <uk/linux/workqueue.h>

#include "../../blk/blk-mq-tag.h"
#include "../../blk/blk-mq.h"
#include "testmain.h"

namespace {

// A driver that keeps every request it is given (the test completes them)
// and hands out at most `budget_limit` dispatch budgets at a time.
struct Driver {
  std::mutex mu;
  std::vector<struct request *> queued;
  int budget_limit = 1 << 30;
  int budget_in_use = 0;
  int budget_max_seen = 0;
  int budget_refused = 0;
  int next_token = 100;
};

Driver *drv;

blk_status_t TestQueueRq(struct blk_mq_hw_ctx *,
                         const struct blk_mq_queue_data *bd) {
  blk_mq_start_request(bd->rq);
  std::lock_guard<std::mutex> l(drv->mu);
  drv->queued.push_back(bd->rq);
  return BLK_STS_OK;
}

int TestGetBudget(struct request_queue *) {
  std::lock_guard<std::mutex> l(drv->mu);
  if (drv->budget_in_use >= drv->budget_limit) {
    drv->budget_refused++;
    return -1;
  }
  drv->budget_in_use++;
  if (drv->budget_in_use > drv->budget_max_seen)
    drv->budget_max_seen = drv->budget_in_use;
  return drv->next_token++;
}

void TestPutBudget(struct request_queue *, int) {
  std::lock_guard<std::mutex> l(drv->mu);
  drv->budget_in_use--;
}

void TestSetToken(struct request *rq, int token) {
  *static_cast<int *>(blk_mq_rq_to_pdu(rq)) = token;
}

int TestGetToken(struct request *rq) {
  return *static_cast<int *>(blk_mq_rq_to_pdu(rq));
}

const struct blk_mq_ops kBudgetOps = {
    .queue_rq = TestQueueRq,
    .get_budget = TestGetBudget,
    .put_budget = TestPutBudget,
    .set_rq_budget_token = TestSetToken,
    .get_rq_budget_token = TestGetToken,
};

const struct blk_mq_ops kPlainOps = {
    .queue_rq = TestQueueRq,
};

class DispatchTest : public ::testing::Test {
 protected:
  void InitQueue(const struct blk_mq_ops *ops, unsigned depth, unsigned flags) {
    drv = &driver_;
    set_.ops = ops;
    set_.nr_hw_queues = 1;
    set_.queue_depth = depth;
    set_.cmd_size = sizeof(int);
    set_.numa_node = -1;
    set_.flags = flags;
    ASSERT_EQ(blk_mq_alloc_tag_set(&set_), 0);
    q_ = blk_mq_init_queue(&set_);
    ASSERT_FALSE(IS_ERR(q_));
    hctx_ = q_->queue_hw_ctx[0];
  }

  void TearDown() override {
    if (q_ && !IS_ERR(q_)) blk_mq_destroy_queue(q_);
    if (set_.tags) blk_mq_free_tag_set(&set_);
    drv = nullptr;
  }

  struct request *Alloc() {
    struct request *rq =
        blk_mq_alloc_request(q_, REQ_OP_READ, BLK_MQ_REQ_NOWAIT);
    EXPECT_FALSE(IS_ERR(rq));
    return rq;
  }

  int Locked(int Driver::*field) {
    std::lock_guard<std::mutex> l(driver_.mu);
    return driver_.*field;
  }

  struct request *QueuedAt(size_t i) {
    std::lock_guard<std::mutex> l(driver_.mu);
    return driver_.queued.at(i);
  }

  size_t Queued() {
    std::lock_guard<std::mutex> l(driver_.mu);
    return driver_.queued.size();
  }

  // Waits (bounded) until the driver has been given `n` requests.
  bool WaitQueued(size_t n) {
    return uk::testing::WaitFor([&] { return Queued() >= n; });
  }

  bool OnDispatchList(struct request *rq) {
    struct request *pos;
    bool found = false;

    spin_lock(&hctx_->lock);
    list_for_each_entry(pos, &hctx_->dispatch, queuelist) {
      if (pos == rq) found = true;
    }
    spin_unlock(&hctx_->lock);
    return found;
  }

  // Gives the hctx a scheduler tag map, as an I/O scheduler would, so that
  // `rq` can be without a driver tag: its tag goes back to the map and
  // another user takes it, leaving the map full. Then `rq` is inserted and
  // the hctx run. Returns the tag the other user holds.
  int StrandWithoutDriverTag(struct request *rq) {
    sched_tags_ = blk_mq_init_tags(2, 0, -1, BLK_TAG_ALLOC_FIFO);
    EXPECT_NE(sched_tags_, nullptr);
    hctx_->sched_tags = sched_tags_;
    blk_mq_put_tag(hctx_->tags, rq->mq_ctx, rq->tag);
    rq->tag = BLK_MQ_NO_TAG;
    rq->internal_tag = 0;
    int other = __sbitmap_queue_get(&hctx_->tags->bitmap_tags);
    EXPECT_GE(other, 0);
    blk_mq_insert_request(rq, 0);
    blk_mq_run_hw_queue(hctx_, false);
    flush_workqueue(kblockd_workqueue);
    return other;
  }

  void FreeSchedTags() {
    flush_workqueue(kblockd_workqueue);
    hctx_->sched_tags = nullptr;
    blk_mq_free_tags(sched_tags_);
    sched_tags_ = nullptr;
  }

  Driver driver_;
  struct blk_mq_tags *sched_tags_ = nullptr;
  struct blk_mq_tag_set set_ = {};
  struct request_queue *q_ = nullptr;
  struct blk_mq_hw_ctx *hctx_ = nullptr;
};

// With one budget, the second request waits on hctx->dispatch until the
// driver gives the first one's budget back and that request completes; the
// token ->get_budget returned is stored in the request.
TEST_F(DispatchTest, BudgetHoldsBackDispatchUntilPut) {
  InitQueue(&kBudgetOps, 8, 0);
  {
    std::lock_guard<std::mutex> l(driver_.mu);
    driver_.budget_limit = 1;
  }

  struct request *a = Alloc();
  struct request *b = Alloc();
  blk_mq_insert_request(a, 0);
  blk_mq_insert_request(b, 0);
  blk_mq_run_hw_queue(hctx_, false);

  ASSERT_EQ(Queued(), 1u);
  EXPECT_EQ(QueuedAt(0), a);
  EXPECT_EQ(TestGetToken(a), 100);
  EXPECT_TRUE(OnDispatchList(b));
  EXPECT_GE(Locked(&Driver::budget_refused), 1);

  // The runs the refusal arranged (at once, then every 3 ms while the
  // restart bit is set) keep finding no budget.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(Queued(), 1u);
  EXPECT_TRUE(OnDispatchList(b));

  // What the driver does on completion: budget back, then end the request.
  TestPutBudget(q_, TestGetToken(a));
  blk_mq_end_request(a, BLK_STS_OK);

  ASSERT_TRUE(WaitQueued(2));
  EXPECT_EQ(QueuedAt(1), b);
  EXPECT_GT(TestGetToken(b), 100);
  EXPECT_FALSE(OnDispatchList(b));
  EXPECT_EQ(Locked(&Driver::budget_max_seen), 1);

  TestPutBudget(q_, TestGetToken(b));
  blk_mq_end_request(b, BLK_STS_OK);
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(Locked(&Driver::budget_in_use), 0);
}

// A driver without budget ops always has one: nothing is held back.
TEST_F(DispatchTest, NoBudgetOpsNeverHoldsBack) {
  InitQueue(&kPlainOps, 8, 0);

  struct request *rqs[4];
  for (auto &rq : rqs) {
    rq = Alloc();
    blk_mq_insert_request(rq, 0);
  }
  blk_mq_run_hw_queue(hctx_, false);
  ASSERT_EQ(Queued(), 4u);
  EXPECT_EQ(READ_ONCE(hctx_->dispatch_busy), 0u);
  for (auto *rq : rqs) blk_mq_end_request(rq, BLK_STS_OK);
}

// While the driver is busy (hctx->dispatch_busy), the software queues are
// dispatched one request at a time, each with a budget taken first; when no
// budget is left the rest stay on the software queues, not on
// hctx->dispatch.
TEST_F(DispatchTest, BusyDispatchTakesOneBudgetPerRequest) {
  InitQueue(&kBudgetOps, 8, 0);
  {
    std::lock_guard<std::mutex> l(driver_.mu);
    driver_.budget_limit = 2;
  }

  struct request *rqs[3];
  for (auto &rq : rqs) {
    rq = Alloc();
    blk_mq_insert_request(rq, 0);
  }
  WRITE_ONCE(hctx_->dispatch_busy, 16u);
  blk_mq_run_hw_queue(hctx_, false);

  ASSERT_EQ(Queued(), 2u);
  EXPECT_EQ(QueuedAt(0), rqs[0]);
  EXPECT_EQ(QueuedAt(1), rqs[1]);
  EXPECT_EQ(TestGetToken(rqs[0]), 100);
  EXPECT_EQ(TestGetToken(rqs[1]), 101);
  EXPECT_FALSE(OnDispatchList(rqs[2]));
  EXPECT_TRUE(sbitmap_any_bit_set(&hctx_->ctx_map));
  EXPECT_NE(READ_ONCE(hctx_->dispatch_from), nullptr);
  // Two dispatches went through: 16 -> 14 -> 12.
  EXPECT_EQ(READ_ONCE(hctx_->dispatch_busy), 12u);

  TestPutBudget(q_, TestGetToken(rqs[0]));
  blk_mq_end_request(rqs[0], BLK_STS_OK);
  blk_mq_run_hw_queue(hctx_, false);
  ASSERT_TRUE(WaitQueued(3));
  EXPECT_EQ(QueuedAt(2), rqs[2]);
  EXPECT_EQ(TestGetToken(rqs[2]), 102);
  EXPECT_FALSE(sbitmap_any_bit_set(&hctx_->ctx_map));

  for (int i = 1; i < 3; i++) {
    TestPutBudget(q_, TestGetToken(rqs[i]));
    blk_mq_end_request(rqs[i], BLK_STS_OK);
  }
  flush_workqueue(kblockd_workqueue);
  EXPECT_EQ(Locked(&Driver::budget_in_use), 0);
  EXPECT_EQ(Locked(&Driver::budget_max_seen), 2);
}

// Shared map (BLK_MQ_F_TAG_HCTX_SHARED): with every driver tag taken, the
// hctx's dispatch_wait joins the map's wait queue and the request waits on
// hctx->dispatch. Freeing a tag wakes dispatch_wait, which leaves the queue
// and runs the hctx, even with SCHED_RESTART clear (the tag may be freed by
// another queue, whose restart does not concern this one).
TEST_F(DispatchTest, SharedMapNoDriverTagWaitsForWakeUp) {
  InitQueue(&kPlainOps, 2, BLK_MQ_F_TAG_HCTX_SHARED);
  struct sbitmap_queue *bt = &hctx_->tags->bitmap_tags;
  struct request *a = Alloc();
  struct request *b = Alloc();
  // The other user of the freed tag stands for another queue of the set.
  int other = StrandWithoutDriverTag(b);
  ASSERT_GE(other, 0);

  EXPECT_EQ(Queued(), 0u);
  EXPECT_TRUE(OnDispatchList(b));
  EXPECT_EQ(b->tag, static_cast<int>(BLK_MQ_NO_TAG));
  EXPECT_FALSE(list_empty_careful(&hctx_->dispatch_wait.entry));
  EXPECT_EQ(atomic_read(&bt->ws_active), 1);

  clear_bit(BLK_MQ_S_SCHED_RESTART, &hctx_->state);
  blk_mq_put_tag(hctx_->tags, b->mq_ctx, other);

  ASSERT_TRUE(WaitQueued(1));
  EXPECT_EQ(QueuedAt(0), b);
  EXPECT_NE(b->tag, static_cast<int>(BLK_MQ_NO_TAG));
  EXPECT_TRUE(list_empty_careful(&hctx_->dispatch_wait.entry));
  EXPECT_EQ(atomic_read(&bt->ws_active), 0);

  b->internal_tag = BLK_MQ_NO_TAG;
  blk_mq_end_request(b, BLK_STS_OK);
  blk_mq_free_request(a);
  FreeSchedTags();
}

// A map of the hctx's own: no wait queue, SCHED_RESTART instead, and the
// next request freed on this hctx runs it.
TEST_F(DispatchTest, OwnMapNoDriverTagMarksRestart) {
  InitQueue(&kPlainOps, 2, 0);
  struct request *a = Alloc();
  struct request *b = Alloc();
  int other = StrandWithoutDriverTag(b);
  ASSERT_GE(other, 0);

  EXPECT_EQ(Queued(), 0u);
  EXPECT_TRUE(OnDispatchList(b));
  EXPECT_TRUE(test_bit(BLK_MQ_S_SCHED_RESTART, &hctx_->state));
  EXPECT_TRUE(list_empty_careful(&hctx_->dispatch_wait.entry));
  EXPECT_EQ(atomic_read(&hctx_->tags->bitmap_tags.ws_active), 0);

  blk_mq_free_request(a);
  ASSERT_TRUE(WaitQueued(1));
  EXPECT_EQ(QueuedAt(0), b);
  EXPECT_NE(b->tag, static_cast<int>(BLK_MQ_NO_TAG));

  b->internal_tag = BLK_MQ_NO_TAG;
  blk_mq_end_request(b, BLK_STS_OK);
  blk_mq_put_tag(hctx_->tags, b->mq_ctx, other);
  FreeSchedTags();
}

}  // namespace
