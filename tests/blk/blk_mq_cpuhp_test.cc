// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq.c under CPU hotplug (remove_cpu()/add_cpu()): the last CPU of
// an hctx going down marks the hctx inactive and waits for its requests;
// requests left in a dead CPU's software queue are dispatched from another
// CPU; completions waiting for a dead CPU's BLOCK_SOFTIRQ are run; the hctx
// is active again when a CPU of it comes back.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/cpu.h>
#include <uk/linux/err.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/sbitmap.h>

#include "../../blk/blk-mq.h"
#include "testmain.h"

namespace {

std::atomic<int> queued;
std::atomic<int> last_queue_cpu{-1};
std::atomic<int> completes;
std::atomic<int> complete_cpu{-1};
std::atomic<int> end_ios;

blk_status_t QueueRq(struct blk_mq_hw_ctx *,
                     const struct blk_mq_queue_data *bd) {
  last_queue_cpu = raw_smp_processor_id();
  blk_mq_start_request(bd->rq);
  queued++;
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

void Complete(struct request *rq) {
  complete_cpu = raw_smp_processor_id();
  completes++;
  blk_mq_end_request(rq, BLK_STS_OK);
}

const struct blk_mq_ops kOps = {
    .queue_rq = QueueRq,
    .complete = Complete,
};

enum rq_end_io_ret CountEndIo(struct request *, blk_status_t) {
  end_ios++;
  return RQ_END_IO_FREE;
}

// A driver-private request allocated on `cpu` (its software queue).
struct request *RequestOn(struct request_queue *q, int cpu,
                          blk_mq_req_flags_t flags = 0) {
  struct request *rq = nullptr;
  std::thread t([&] {
    uk::pin_thread_to_cpu(cpu);
    rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN, flags);
    uk::pin_thread_to_cpu(-1);
  });
  t.join();
  if (!IS_ERR(rq)) rq->end_io = CountEndIo;
  return rq;
}

class BlkMqCpuhpTest : public ::testing::Test {
 protected:
  // Before the first tag set: blk-mq sets up per-CPU state for these CPUs.
  static void SetUpTestSuite() { uk::set_nr_cpu_ids(4); }

  void MakeQueue(unsigned int nr_hw_queues) {
    queued = 0;
    completes = 0;
    end_ios = 0;
    last_queue_cpu = -1;
    complete_cpu = -1;
    set_.ops = &kOps;
    set_.nr_hw_queues = nr_hw_queues;
    set_.queue_depth = 8;
    set_.numa_node = NUMA_NO_NODE;
    ASSERT_EQ(blk_mq_alloc_tag_set(&set_), 0);
    q_ = blk_mq_init_queue(&set_);
    ASSERT_FALSE(IS_ERR(q_));
  }

  void TearDown() override {
    for (unsigned int c = 0; c < nr_cpu_ids; c++) EXPECT_EQ(add_cpu(c), 0);
    if (q_) {
      blk_mq_destroy_queue(q_);
      blk_mq_free_tag_set(&set_);
    }
  }

  // The CPUs whose default map leads to `hctx`.
  std::vector<int> CpusOf(struct blk_mq_hw_ctx *hctx) {
    std::vector<int> cpus;
    for (unsigned int c = 0; c < nr_cpu_ids; c++)
      if (blk_mq_map_queue_type(q_, HCTX_TYPE_DEFAULT, c) == hctx)
        cpus.push_back(c);
    return cpus;
  }

  struct blk_mq_tag_set set_ = {};
  struct request_queue *q_ = nullptr;
};

TEST_F(BlkMqCpuhpTest, LastCpuOfAnHctxWaitsForItsRequests) {
  MakeQueue(2);
  struct blk_mq_hw_ctx *hctx = q_->queue_hw_ctx[1];
  std::vector<int> cpus = CpusOf(hctx);
  ASSERT_FALSE(cpus.empty());
  ASSERT_LT(cpus.size(), nr_cpu_ids);
  const int last = cpus.back();

  struct request *rq = RequestOn(q_, cpus.front());
  ASSERT_FALSE(IS_ERR(rq));
  ASSERT_EQ(rq->mq_hctx, hctx);

  // While the hctx has another online CPU, its CPUs go at once.
  for (int c : cpus) {
    if (c == last) break;
    ASSERT_EQ(remove_cpu(c), 0);
    EXPECT_FALSE(test_bit(BLK_MQ_S_INACTIVE, &hctx->state));
  }

  std::atomic<bool> done{false};
  int ret = -1;
  std::thread down([&] {
    ret = remove_cpu(last);
    done = true;
  });
  ASSERT_TRUE(uk::testing::WaitFor(
      [&] { return test_bit(BLK_MQ_S_INACTIVE, &hctx->state); }));
  // The request is out, so the CPU cannot be gone yet.
  EXPECT_FALSE(done.load());
  EXPECT_TRUE(cpu_online(last));

  // No new request on the inactive hctx, even from its CPU.
  struct request *none = RequestOn(q_, last, BLK_MQ_REQ_NOWAIT);
  EXPECT_TRUE(IS_ERR(none));
  EXPECT_EQ(PTR_ERR(none), -EWOULDBLOCK);
  EXPECT_FALSE(done.load());

  blk_mq_free_request(rq);
  ASSERT_TRUE(uk::testing::WaitFor([&] { return done.load(); }));
  down.join();
  EXPECT_EQ(ret, 0);
  EXPECT_FALSE(cpu_online(last));
  EXPECT_TRUE(test_bit(BLK_MQ_S_INACTIVE, &hctx->state));
  // The other hctx is untouched.
  EXPECT_FALSE(test_bit(BLK_MQ_S_INACTIVE, &q_->queue_hw_ctx[0]->state));

  // A CPU of the hctx coming back makes it active again.
  ASSERT_EQ(add_cpu(last), 0);
  EXPECT_FALSE(test_bit(BLK_MQ_S_INACTIVE, &hctx->state));
  rq = RequestOn(q_, last, BLK_MQ_REQ_NOWAIT);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_EQ(rq->mq_hctx, hctx);
  blk_mq_free_request(rq);
}

TEST_F(BlkMqCpuhpTest, DeadCpusSoftwareQueueIsDispatchedElsewhere) {
  MakeQueue(1);
  const int dead = 2;
  struct request *rq = RequestOn(q_, dead);
  ASSERT_FALSE(IS_ERR(rq));
  struct blk_mq_ctx *ctx = rq->mq_ctx;
  struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
  ASSERT_EQ(ctx->cpu, (unsigned int)dead);
  const unsigned int bit = ctx->index_hw[hctx->type];

  // Queued on the CPU's software queue, not yet dispatched.
  blk_mq_insert_request(rq, 0);
  EXPECT_TRUE(sbitmap_test_bit(&hctx->ctx_map, bit));
  EXPECT_EQ(queued.load(), 0);

  ASSERT_EQ(remove_cpu(dead), 0);
  // notify_dead took the request off the dead CPU's queue and cleared its
  // pending bit before remove_cpu() returned.
  spin_lock(&ctx->lock);
  EXPECT_TRUE(list_empty(&ctx->rq_lists[hctx->type]));
  spin_unlock(&ctx->lock);
  EXPECT_FALSE(sbitmap_test_bit(&hctx->ctx_map, bit));
  EXPECT_FALSE(test_bit(BLK_MQ_S_INACTIVE, &hctx->state));

  // ... and ran the hctx, which dispatched it on an online CPU.
  ASSERT_TRUE(uk::testing::WaitFor([] { return end_ios.load() == 1; }));
  EXPECT_EQ(queued.load(), 1);
  EXPECT_NE(last_queue_cpu.load(), dead);
}

TEST_F(BlkMqCpuhpTest, DeadCpusSoftirqCompletionsAreRun) {
  MakeQueue(1);
  const int dead = 3;
  const bool threads = uk::softirq_threads_enabled();
  uk::softirq_set_threads(false);  // BLOCK_SOFTIRQ stays pending

  struct request *rq = RequestOn(q_, dead);
  ASSERT_FALSE(IS_ERR(rq));
  std::thread t([&] {
    uk::pin_thread_to_cpu(dead);
    blk_mq_start_request(rq);
    blk_mq_complete_request(rq);  // to the CPU's BLOCK_SOFTIRQ list
    uk::pin_thread_to_cpu(-1);
  });
  t.join();
  EXPECT_EQ(completes.load(), 0);
  EXPECT_TRUE(uk::softirq_pending(dead) & (1u << BLOCK_SOFTIRQ));

  ASSERT_EQ(remove_cpu(dead), 0);
  // blk_softirq_cpu_dead() ran ->complete, on the control CPU.
  EXPECT_EQ(completes.load(), 1);
  EXPECT_NE(complete_cpu.load(), dead);
  EXPECT_EQ(end_ios.load(), 1);

  ASSERT_EQ(add_cpu(dead), 0);
  uk::softirq_run_pending(dead);  // the stale raise finds an empty list
  EXPECT_EQ(completes.load(), 1);
  uk::softirq_set_threads(threads);
}

// Changing the number of hw queues moves hctxs in and out of the cpuhp
// states: a hotplug after a shrink reaches only the hctxs still in use.
TEST_F(BlkMqCpuhpTest, ExitedHctxsLeaveTheCpuhpStates) {
  MakeQueue(2);
  struct blk_mq_hw_ctx *gone = q_->queue_hw_ctx[1];
  EXPECT_FALSE(hlist_unhashed(&gone->cpuhp_online));
  EXPECT_FALSE(hlist_unhashed(&gone->cpuhp_dead));

  blk_mq_update_nr_hw_queues(&set_, 1);
  ASSERT_EQ(q_->nr_hw_queues, 1u);
  // Exited, unregistered, and waiting on the unused list.
  EXPECT_TRUE(hlist_unhashed(&gone->cpuhp_online));
  EXPECT_TRUE(hlist_unhashed(&gone->cpuhp_dead));
  EXPECT_FALSE(list_empty(&gone->hctx_list));
  struct blk_mq_hw_ctx *kept = q_->queue_hw_ctx[0];
  EXPECT_FALSE(hlist_unhashed(&kept->cpuhp_online));
  EXPECT_FALSE(hlist_unhashed(&kept->cpuhp_dead));

  // Every CPU maps to the one hctx left, so it stays active.
  ASSERT_EQ(remove_cpu(1), 0);
  EXPECT_FALSE(test_bit(BLK_MQ_S_INACTIVE, &kept->state));
  struct request *rq = RequestOn(q_, 0, BLK_MQ_REQ_NOWAIT);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_EQ(rq->mq_hctx, kept);
  blk_mq_free_request(rq);
}

}  // namespace
