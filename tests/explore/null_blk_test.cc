// SPDX-License-Identifier: GPL-2.0-only
// null_blk under the explorer, with the kernel's deferred execution inside
// the schedules (explore::Services): two submitters share one tag, and each
// request completes in the way its irqmode says (in the submitter, from
// BLOCK_SOFTIRQ, from an hrtimer's hardirq, by polling), or times out
// through blk-mq's timeout timer and kblockd's timeout work. The contract:
// every I/O ends exactly once, with its bytes or -ETIMEDOUT, and leaves no
// tag, request, reference or allocation behind.
#include <gtest/gtest.h>

#include <string>

#include <uk/devices/null_blk.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sbitmap.h>
#include <uk/shim/cpu.h>

#include "../../blk/blk-mq.h"
#include "explore.h"
#include "testmain.h"

namespace {

constexpr int kIos = 2;
constexpr int kBytes = 512;

struct IoEnd {
  int calls;
  long res;
};

struct Scene {
  struct block_device *bdev;
  struct request_queue *q;
  bool polled;    // REQ_POLLED I/O on the poll queue, reaped by polling
  bool lost;      // every request is lost (timeout=): each must time out
  long timeouts;  // I/Os that ended as -ETIMEDOUT, over all schedules
  IoEnd io[kIos];
  alignas(4096) char buf[kIos][kBytes];
};
Scene g_scene;

void IoDone(void *priv, long res) {
  IoEnd *io = static_cast<IoEnd *>(priv);
  io->res = res;
  io->calls++;
}

// One direct read, asynchronous; a polled one is polled for until it ends
// (by this poller, another one, or the timeout handler).
void Submit(int i) {
  Scene *s = &g_scene;
  struct iovec iov = {s->buf[i], kBytes};
  unsigned int flags = s->polled ? BLKDEV_RW_POLLED : 0;
  ssize_t ret = blkdev_rw(s->bdev, static_cast<loff_t>(i) * 4096, &iov, 1,
                          flags, IoDone, &s->io[i]);
  EXPLORE_CHECK(ret == -EIOCBQUEUED);
  if (ret != -EIOCBQUEUED || !s->polled) return;
  while (!READ_ONCE(s->io[i].calls)) {
    struct blk_mq_hw_ctx *hctx = s->q->queue_hw_ctx[s->q->nr_hw_queues - 1];
    blk_mq_poll(s->q, hctx->queue_num, nullptr, 0);
    cpu_relax();
  }
}

// With every request lost, one that the timeout work missed stays in flight
// for good: end it here as its completion would have, so that the device
// can go (its removal waits for the request).
void EndMissedRequest(Scene *s) {
  struct request *rq = s->q->queue_hw_ctx[0]->tags->rqs[0];  // depth 1
  if (!rq || blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT) return;
  int cpu = rq->mq_ctx->cpu;
  uk::pin_thread_to_cpu(cpu);
  blk_mq_complete_request(rq);
  uk::softirq_run_pending(cpu);  // BLOCK_SOFTIRQ; ksoftirqd is off
  uk::pin_thread_to_cpu(-1);
}

// Each schedule loads the device afresh: blk-mq keeps state from request to
// request (the dispatch-busy average, the next CPU to run a queue on, the
// timeout timer's expiry) that would make a schedule depend on the ones
// before it.
void Body() {
  Scene *s = &g_scene;
  EXPLORE_CHECK(null_init() == 0);
  s->bdev = uk::blkdev_lookup("nullb0");
  s->q = bdev_get_queue(s->bdev);
  for (auto &io : s->io) io = IoEnd{};
  for (int i = 0; i < kIos; i++) explore::spawn([i] { Submit(i); }, i);
  explore::join();
  if (s->lost) EndMissedRequest(s);
  for (auto &io : s->io) {
    EXPLORE_CHECK(io.calls == 1);
    EXPLORE_CHECK(io.res == kBytes || io.res == -ETIMEDOUT);
    EXPLORE_CHECK(io.res == -ETIMEDOUT || !s->lost);
    if (io.res == -ETIMEDOUT) s->timeouts++;
  }
  struct blk_mq_hw_ctx *hctx;
  unsigned long i;
  queue_for_each_hw_ctx(s->q, hctx, i) {
    EXPLORE_CHECK(sbitmap_weight(&hctx->tags->bitmap_tags.sb) == 0);
  }
  EXPLORE_CHECK(!blk_mq_queue_inflight(s->q));
  uk::blkdev_put(s->bdev);
  null_exit();
  rcu_barrier();  // the queue's RCU-deferred frees, before the leak check
}

// The scene's set-up, under a live explore::Services: null_blk devices
// loaded with `params` (one tag: the second submitter sleeps for it until
// the first request is freed). One schedule, outside the search, makes what
// the first I/O allocates for good (the bio sets' reserves).
bool SetUpScene(const std::string &params, bool polled, bool lost) {
  EXPECT_EQ(null_blk_module_params(params.c_str()), 0);
  if (::testing::Test::HasFailure()) return false;
  Scene *s = &g_scene;
  s->polled = polled;
  s->lost = lost;
  explore::Options warm;
  warm.replay = "v1:-";
  explore::run(Body, warm);
  s->timeouts = 0;
  return true;
}

// Explores Body() on the scene of `params`.
void Explore(const char *name, const std::string &params, bool polled,
             bool can_time_out) {
  explore::Services services;  // before the device: the virtual clock
  if (!SetUpScene(params, polled, false)) return;
  Scene *s = &g_scene;
  // PCT: a real timeout needs the timeout work to run from start to end
  // before the request's completion, a priority order PCT tries; the
  // bounded search's budget is spent on the last steps of the schedule,
  // and a random walk interleaves the two.
  explore::Options o = explore::test_defaults();
  o.strategy = explore::Strategy::kPct;
  explore::run_test(name, Body, o);
  // Requests timed out for real, or (irqmode=0 and 1) never could.
  if (can_time_out)
    EXPECT_GT(s->timeouts, 0);
  else
    EXPECT_EQ(s->timeouts, 0);
  null_blk_reset_module_params();
}

const std::string kOneTag = "submit_queues=1 hw_queue_depth=1 gb=1 ";

// A request can also time out for real: the explorer may fire blk-mq's
// timeout timer (moving the clock past the deadline) while the request is
// in flight, and kblockd's blk_mq_timeout_work() then finds it expired;
// null_timeout_rq() marks it, and its own completion ends it with
// -ETIMEDOUT. With irqmode=0 and 1 that cannot happen: the request ends,
// or is marked complete for BLOCK_SOFTIRQ, inside the dispatch section,
// which the timeout work waits for (blk_mq_wait_quiesce_done()) before it
// looks at the request again.
TEST(NullBlkContract, IrqmodeNone) {
  Explore("NullBlkContract.IrqmodeNone", kOneTag + "irqmode=0 poll_queues=0",
          false, false);
}

TEST(NullBlkContract, IrqmodeSoftirq) {
  Explore("NullBlkContract.IrqmodeSoftirq", kOneTag + "irqmode=1 poll_queues=0",
          false, false);
}

TEST(NullBlkContract, IrqmodeTimer) {
  Explore("NullBlkContract.IrqmodeTimer",
          kOneTag + "irqmode=2 completion_nsec=10000 poll_queues=0", false,
          true);
}

// Polled queue: the submitters poll for their requests, and the timeout
// handler may take a request off the poll list first.
TEST(NullBlkContract, PolledQueue) {
  Explore("NullBlkContract.PolledQueue", kOneTag + "irqmode=0 poll_queues=1",
          true, true);
}

// null_blk's timeout= fault injection loses every request, which then
// ends only through blk-mq's timeout timer, blk_mq_timeout_work() and
// null_timeout_rq(). The search finds the schedule in which a request is
// never timed out: blk_mq_start_request() arms the timer (blk_add_timer())
// before it marks the request in flight, and when the timer fires and the
// timeout work runs in between, the work sees nothing in flight and does
// not arm the timer again. v6.12 has the same order; it takes a submitter
// stalled for the whole timeout between the two statements.
TEST(NullBlkContract, TimeoutMissesALostRequestStartedAcrossItsTimer) {
  const long budget = 2000;
  explore::Services services;
  ASSERT_TRUE(SetUpScene(kOneTag + "irqmode=1 poll_queues=0 timeout=1,100,0,-1",
                         false, true));
  // Without the stall, each lost request times out.
  explore::Options plain_schedule;
  plain_schedule.replay = "v1:-";
  explore::Result plain = explore::run(Body, plain_schedule);
  EXPECT_FALSE(plain.failed) << plain.message;
  explore::Result r = explore::run(
      Body, explore::find_options(budget, explore::Strategy::kDfs));
  explore::report_found(
      "NullBlkContract.TimeoutMissesALostRequestStartedAcrossItsTimer", r,
      budget);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("io.res == -ETIMEDOUT || !s->lost"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.trace.find("blk_mq_start_request"), std::string::npos) << r.trace;
  null_blk_reset_module_params();
}

}  // namespace
