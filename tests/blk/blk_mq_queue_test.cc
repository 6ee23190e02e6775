// SPDX-License-Identifier: GPL-2.0-only
// block/blk-core.c's request-queue lifetime: the last blk_put_queue() frees
// the queue after an RCU grace period (blk_free_queue_rcu()), so that an
// RCU callback still at work on the queue's usage counter (the confirmation
// of its switch to atomic mode, whose put may be the last one and wake
// mq_freeze_wq) ends before the queue goes. Also blk_get_queue(), the queue
// flags and blk_op_str().
#include <gtest/gtest.h>

#include <uk/linux/blk-mq.h>
#include <uk/linux/err.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include "../../blk/blk-mq.h"
#include "testmain.h"

namespace {

blk_status_t CompleteAtOnce(struct blk_mq_hw_ctx *,
                            const struct blk_mq_queue_data *bd) {
  blk_mq_start_request(bd->rq);
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

const struct blk_mq_ops kOps = {
    .queue_rq = CompleteAtOnce,
};

// A tag set of one hardware queue and a queue on it.
void OneQueue(struct blk_mq_tag_set *set, struct request_queue **q) {
  set->ops = &kOps;
  set->nr_hw_queues = 1;
  set->queue_depth = 4;
  set->numa_node = -1;
  ASSERT_EQ(blk_mq_alloc_tag_set(set), 0);
  *q = blk_mq_init_queue(set);
  ASSERT_FALSE(IS_ERR(*q));
}

TEST(QueueTest, LastPutFreesTheQueueAfterAGracePeriod) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));
  // A second holder of the struct, as a gendisk is: the teardown drops
  // the driver's reference and the queue stays.
  ASSERT_TRUE(blk_get_queue(q));
  blk_mq_destroy_queue(q);
  flush_workqueue(kblockd_workqueue);
  rcu_barrier();
  long before = uk::slab_total_allocated();

  rcu_read_lock();
  blk_put_queue(q);
  // Inside a read-side section no grace period ends: the queue is there.
  EXPECT_EQ(refcount_read(&q->refs), 0u);
  EXPECT_EQ(uk::slab_total_allocated(), before);
  rcu_read_unlock();

  rcu_barrier();
  // The queue and its usage counter's data.
  EXPECT_EQ(uk::slab_total_allocated(), before - 2);
  blk_mq_free_tag_set(&set);
}

TEST(QueueTest, GetQueueRefusesADyingQueue) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));

  ASSERT_TRUE(blk_get_queue(q));
  EXPECT_EQ(refcount_read(&q->refs), 2u);
  blk_put_queue(q);

  blk_queue_flag_set(QUEUE_FLAG_DYING, q);
  EXPECT_TRUE(blk_queue_dying(q));
  EXPECT_FALSE(blk_get_queue(q));
  EXPECT_EQ(refcount_read(&q->refs), 1u);
  blk_queue_flag_clear(QUEUE_FLAG_DYING, q);
  EXPECT_FALSE(blk_queue_dying(q));

  blk_mq_destroy_queue(q);  // drops the driver's reference
  rcu_barrier();
  blk_mq_free_tag_set(&set);
}

TEST(QueueTest, OpStrNamesEachOp) {
  EXPECT_STREQ(blk_op_str(REQ_OP_READ), "READ");
  EXPECT_STREQ(blk_op_str(REQ_OP_WRITE), "WRITE");
  EXPECT_STREQ(blk_op_str(REQ_OP_ZONE_RESET_ALL), "ZONE_RESET_ALL");
  EXPECT_STREQ(blk_op_str(REQ_OP_DRV_OUT), "DRV_OUT");
  // A hole in the numbering and a value past the last op.
  EXPECT_STREQ(blk_op_str((enum req_op)4), "UNKNOWN");
  EXPECT_STREQ(blk_op_str(REQ_OP_LAST), "UNKNOWN");
  EXPECT_STREQ(blk_op_str((enum req_op)1000), "UNKNOWN");
}

}  // namespace
