// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq.c on a bare queue (a test driver, no null_blk): freezing with
// and without an owner, quiescing a whole tag set, driver-private requests
// queued without waiting, polling one request, the in-flight checks and the
// plug's request cache for blk_mq_alloc_request().
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/err.h>
#include <uk/linux/sched.h>
#include <uk/linux/workqueue.h>

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
};

Driver *drv;

blk_status_t TestQueueRq(struct blk_mq_hw_ctx *,
                         const struct blk_mq_queue_data *bd) {
  blk_mq_start_request(bd->rq);
  drv->queued++;
  if (drv->keep.load()) {
    std::lock_guard<std::mutex> l(drv->mu);
    drv->kept.push_back(bd->rq);
    return BLK_STS_OK;
  }
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

const struct blk_mq_ops kOps = {
    .queue_rq = TestQueueRq,
};

class BlkMqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    drv = new Driver;
    set_.ops = &kOps;
    set_.nr_hw_queues = 1;
    set_.queue_depth = 8;
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

}  // namespace
