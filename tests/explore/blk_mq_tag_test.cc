// SPDX-License-Identifier: GPL-2.0-only
// block/blk-mq-tag.c under the explorer: a historical race between the tag
// iterators and the freeing of a request (the buggy side, from its runtime
// switch, must fail within a stated number of schedules; today's code must
// pass the explore budget), and contract tests for tag allocation with
// reserved and shared tags, sleepers woken by frees from interrupts.
#include <gtest/gtest.h>

#include <new>

#include <uk/linux/percpu-refcount.h>
#include <uk/linux/preempt.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>

#include "../../blk/blk-mq-tag.h"
#include "explore.h"
#include "sbitmap_hints.h"
#include "testmain.h"

namespace {

constexpr int kMaxTags = 8;
constexpr int kQueues = 2;

// One tag set of bare queues, built afresh for every schedule: queue i has
// one hardware queue, hctx[i], to which every CPU's software queue maps.
// With BLK_MQ_F_TAG_HCTX_SHARED both hctxs use set.shared_tags, otherwise
// each has its own tags. Requests are the preallocated rqs[], in the tags'
// static_rqs[] and, once started, in their rqs[].
struct TagScene {
  struct blk_mq_tag_set set = {};
  struct request_queue q[kQueues] = {};
  struct blk_mq_hw_ctx hctx[kQueues] = {};
  struct blk_mq_hw_ctx *hctxs[kQueues][1] = {};
  struct blk_mq_tags *tags_arr[kQueues] = {};
  struct request rqs[kQueues][kMaxTags] = {};
  struct request *rqp[kQueues][kMaxTags] = {};
  struct request *srqp[kQueues][kMaxTags] = {};
  int owner[kMaxTags] = {};  // who holds each tag of tags(0), 0 if nobody
  int nr_queues = 1;

  struct blk_mq_tags *tags(int qi) {
    return hctx[qi].tags;
  }
  struct blk_mq_alloc_data Data(int qi, int cpu, blk_mq_req_flags_t flags) {
    struct blk_mq_alloc_data d = {};
    d.q = &q[qi];
    d.flags = flags;
    d.ctx = per_cpu_ptr(q[qi].queue_ctx, cpu);
    d.hctx = d.ctx->hctxs[HCTX_TYPE_DEFAULT];
    return d;
  }
};

void NoRun(struct blk_mq_hw_ctx *, bool) {}

TagScene *NewScene(unsigned depth, unsigned reserved, unsigned flags,
                   int nr_queues) {
  TagScene *s = new TagScene();
  s->nr_queues = nr_queues;
  s->set.nr_hw_queues = 1;
  s->set.queue_depth = depth;
  s->set.reserved_tags = reserved;
  s->set.flags = flags;
  if (blk_mq_is_shared_tags(flags)) {
    s->set.shared_tags = blk_mq_init_tags(depth, reserved, flags, -1);
    for (int i = 0; i < nr_queues; i++) s->tags_arr[i] = s->set.shared_tags;
  } else {
    for (int i = 0; i < nr_queues; i++)
      s->tags_arr[i] = blk_mq_init_tags(depth, reserved, flags, -1);
  }
  s->set.tags = s->tags_arr;
  for (int i = 0; i < nr_queues; i++) {
    struct blk_mq_tags *t = s->tags_arr[i];
    EXPLORE_CHECK(t != nullptr);
    explore::zero_alloc_hints(&t->bitmap_tags.sb);
    explore::zero_alloc_hints(&t->breserved_tags.sb);
    for (unsigned tag = 0; tag < depth; tag++) {
      s->rqs[i][tag].tag = -1;
      s->srqp[i][tag] = &s->rqs[i][tag];
    }
    if (!t->rqs) {  // the shared tags once
      t->rqs = s->rqp[i];
      t->static_rqs = s->srqp[i];
    }
    struct request_queue *q = &s->q[i];
    q->tag_set = &s->set;
    q->nr_hw_queues = 1;
    s->hctxs[i][0] = &s->hctx[i];
    q->queue_hw_ctx = s->hctxs[i];
    q->queue_ctx = alloc_percpu(struct blk_mq_ctx);
    // Atomic mode: the count of live requests can be read back.
    EXPLORE_CHECK(percpu_ref_init(
                      &q->q_usage_counter, [](struct percpu_ref *) {},
                      PERCPU_REF_INIT_ATOMIC, GFP_KERNEL) == 0);
    unsigned int cpu;
    for_each_possible_cpu(cpu) {
      struct blk_mq_ctx *ctx = per_cpu_ptr(q->queue_ctx, cpu);
      ctx->cpu = cpu;
      ctx->queue = q;
      for (int t2 = 0; t2 < HCTX_MAX_TYPES; t2++) ctx->hctxs[t2] = &s->hctx[i];
    }
    struct blk_mq_hw_ctx *h = &s->hctx[i];
    h->queue = q;
    h->queue_num = 0;
    h->tags = t;
    h->flags = flags;
    h->nr_ctx = 1;
  }
  blk_mq_run_hw_queue_hook = NoRun;
  return s;
}

void FreeScene(TagScene *s) {
  blk_mq_run_hw_queue_hook = nullptr;
  for (int i = 0; i < s->nr_queues; i++) {
    free_percpu(s->q[i].queue_ctx);
    percpu_ref_exit(&s->q[i].q_usage_counter);
  }
  if (s->set.shared_tags) {
    blk_mq_free_tags(s->set.shared_tags);
  } else {
    for (int i = 0; i < s->nr_queues; i++) blk_mq_free_tags(s->tags_arr[i]);
  }
  delete s;
}

// Tags of both maps still allocated.
unsigned TagsInUse(struct blk_mq_tags *t) {
  return sbitmap_weight(&t->bitmap_tags.sb) +
         sbitmap_weight(&t->breserved_tags.sb);
}

// A request of queue @qi allocated on @cpu and started, as
// __blk_mq_alloc_requests(), blk_mq_rq_ctx_init() and blk_mq_start_request()
// leave it (without the timeout timer, which runs on the host clock).
struct request *StartRequest(TagScene *s, int qi, int cpu) {
  struct blk_mq_alloc_data d = s->Data(qi, cpu, BLK_MQ_REQ_NOWAIT);
  unsigned int tag = blk_mq_get_tag(&d);
  EXPLORE_CHECK(tag != BLK_MQ_NO_TAG);
  if (tag == BLK_MQ_NO_TAG) return nullptr;
  struct blk_mq_tags *t = blk_mq_tags_from_data(&d);
  blk_mq_inc_active_requests(d.hctx);
  percpu_ref_get(&s->q[qi].q_usage_counter);
  struct request *rq = t->static_rqs[tag];
  rq->q = d.q;
  rq->mq_ctx = d.ctx;
  rq->mq_hctx = d.hctx;
  rq->tag = tag;
  rq->internal_tag = BLK_MQ_NO_TAG;
  rq->bio = rq->biotail = nullptr;
  rq->end_io = nullptr;
  rq->__data_len = 0;
  INIT_LIST_HEAD(&rq->queuelist);
  req_ref_set(rq, 1);
  rq->state = MQ_RQ_IN_FLIGHT;
  t->rqs[tag] = rq;
  return rq;
}

// The options of a bounded test: the bounded search for up to @schedules;
// the environment (tools/ukern explore --schedules, --strategy) overrides.
explore::Options Bounded(long schedules) {
  explore::Options o = explore::test_defaults();
  o.max_schedules = schedules;
  return o;
}

// ---- v5.13: the busy iterator calls ->fn on a freed request ----
//
// Before 2e315dc07df0 ("blk-mq: grab rq->refcount before calling ->fn in
// blk_mq_tagset_busy_iter", 5.14), bt_tags_iter() read tags->rqs[] and
// called ->fn on every started request without a reference: a request that
// completed and was freed after the iterator found it still reached ->fn,
// which looked at freed memory (the request's queue and hctx may be gone, or
// the request reused). Today blk_mq_find_and_get_req() takes the reference
// under tags->lock, or skips a request whose count is already zero, and the
// last reference frees the request after ->fn. Set-up: two requests in
// flight on one hardware queue; on CPU 0 a task walks the tag set as a
// driver's timeout or cancel handler does; an interrupt on CPU 1 completes
// one request and a task on CPU 2 the other (blk_mq_end_request()). The
// check: ->fn never sees a freed request (__blk_mq_free_request() clears
// rq->mq_hctx), every tag is free at the end and every request freed once.

bool LookAtRequest(struct request *rq, void *data) {
  int *seen = static_cast<int *>(data);
  // A live request holds a reference and knows its hardware queue, which
  // a handler reads first.
  int ref = atomic_read(&rq->ref);
  struct blk_mq_hw_ctx *hctx = READ_ONCE(rq->mq_hctx);
  EXPLORE_CHECK(ref > 0 && hctx != nullptr && "->fn got a freed request");
  (*seen)++;
  return true;
}

void IterVsFree(bool v513) {
  TagScene *s = NewScene(4, 0, 0, 1);
  static struct request *rq[2];
  static int seen;
  seen = 0;
  for (auto &r : rq) r = StartRequest(s, 0, 0);
  blk_mq_tag_iter_v513 = v513;
  explore::spawn(
      [s] { blk_mq_tagset_busy_iter(&s->set, LookAtRequest, &seen); }, 0);
  explore::irq(1, [] { blk_mq_end_request(rq[0], BLK_STS_OK); });
  explore::spawn([] { blk_mq_end_request(rq[1], BLK_STS_OK); }, 2);
  explore::join();
  blk_mq_tag_iter_v513 = false;
  EXPLORE_CHECK(TagsInUse(s->tags(0)) == 0);
  for (auto *r : rq) {
    EXPLORE_CHECK(atomic_read(&r->ref) == 0);
    EXPLORE_CHECK(r->mq_hctx == nullptr);
  }
  // The queue's own count and nothing else: each request dropped its one.
  EXPLORE_CHECK(atomic_long_read(&s->q[0].q_usage_counter.data->count) == 1);
  EXPLORE_CHECK(seen <= 2);
  FreeScene(s);
}

TEST(Historical, BlkMqTagIterFreeFound) {
  const long budget = 2000;
  explore::Options o = Bounded(budget);
  o.max_seconds = 120;
  o = explore::options_from_env(o);
  o.trace = true;
  explore::Result r = explore::run([] { IterVsFree(true); }, o);
  blk_mq_tag_iter_v513 = false;
  explore::report_found("Historical.BlkMqTagIterFreeFound", r, o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("freed request"), std::string::npos) << r.message;
}

TEST(Historical, BlkMqTagIterFreeSurvives) {
  explore::run_test(
      "Historical.BlkMqTagIterFreeSurvives", [] { IterVsFree(false); },
      Bounded(5000));
}

// ---- contract: sleepers for normal and reserved tags, woken by frees ----
//
// Waiters take a tag (sleeping in blk_mq_get_tag() while none is free), hold
// it for a moment and give it back. The check: no tag is held by two at
// once, a reserved request gets a reserved tag and a normal one a normal
// tag, nobody sleeps for ever, and every tag is free at the end.

void UseTag(TagScene *s, int qi, blk_mq_req_flags_t flags, int who) {
  struct blk_mq_alloc_data d = s->Data(qi, raw_smp_processor_id(), flags);
  unsigned int tag = blk_mq_get_tag(&d);
  EXPLORE_CHECK(tag != BLK_MQ_NO_TAG);
  if (tag == BLK_MQ_NO_TAG) return;
  struct blk_mq_tags *t = blk_mq_tags_from_data(&d);
  EXPLORE_CHECK(blk_mq_tag_is_reserved(t, tag) ==
                !!(flags & BLK_MQ_REQ_RESERVED));
  EXPLORE_CHECK(READ_ONCE(s->owner[tag]) == 0 && "tag handed out twice");
  WRITE_ONCE(s->owner[tag], who);
  EXPLORE_CHECK(READ_ONCE(s->owner[tag]) == who && "tag handed out twice");
  WRITE_ONCE(s->owner[tag], 0);
  blk_mq_put_tag(t, d.ctx, tag);
}

// Takes a tag in set-up for @who, to be given back by PutHeld().
unsigned int Hold(TagScene *s, int qi, blk_mq_req_flags_t flags, int who) {
  struct blk_mq_alloc_data d = s->Data(qi, 0, flags | BLK_MQ_REQ_NOWAIT);
  unsigned int tag = blk_mq_get_tag(&d);
  EXPLORE_CHECK(tag != BLK_MQ_NO_TAG);
  if (tag != BLK_MQ_NO_TAG) s->owner[tag] = who;
  return tag;
}

// Gives back a tag held since set-up, from whatever context runs it.
void PutHeld(TagScene *s, int qi, unsigned int tag, int who) {
  EXPLORE_CHECK(READ_ONCE(s->owner[tag]) == who && "tag handed out twice");
  WRITE_ONCE(s->owner[tag], 0);
  blk_mq_put_tag(s->tags(qi),
                 per_cpu_ptr(s->q[qi].queue_ctx, raw_smp_processor_id()), tag);
}

// One queue, tags 0 (reserved) and 1, 2 (normal), all held. Two tasks wait
// for a normal tag (CPUs 1 and 2), one for the reserved tag (CPU 3);
// interrupts on CPUs 0 and 1 free the normal tags, a task on CPU 0 the
// reserved one.
void ReservedAndNormal() {
  TagScene *s = NewScene(3, 1, 0, 1);
  static unsigned int held[3];
  held[0] = Hold(s, 0, BLK_MQ_REQ_RESERVED, 100);
  held[1] = Hold(s, 0, 0, 101);
  held[2] = Hold(s, 0, 0, 102);
  explore::spawn([s] { UseTag(s, 0, 0, 1); }, 1);
  explore::spawn([s] { UseTag(s, 0, 0, 2); }, 2);
  explore::spawn([s] { UseTag(s, 0, BLK_MQ_REQ_RESERVED, 3); }, 3);
  explore::spawn([s] { PutHeld(s, 0, held[0], 100); }, 0);
  explore::irq(0, [s] { PutHeld(s, 0, held[1], 101); });
  explore::irq(1, [s] { PutHeld(s, 0, held[2], 102); });
  explore::join();
  EXPLORE_CHECK(TagsInUse(s->tags(0)) == 0);
  FreeScene(s);
}

TEST(TagContract, ReservedAndNormalWaitersWokenByInterrupts) {
  explore::run_test("TagContract.ReservedAndNormalWaitersWokenByInterrupts",
                    ReservedAndNormal, Bounded(5000));
}

// Two queues on one host-wide map (BLK_MQ_F_TAG_HCTX_SHARED, with
// BLK_MQ_F_TAG_QUEUE_SHARED): tags 0 (reserved) and 1, 2 (normal), all held
// by queue 0. Queue 0 is active from set-up; a task of queue 1 marks it
// active (active_queues 2, the wake batches recalculated while others
// sleep), waits for a normal tag, uses it and marks queue 1 idle again,
// which wakes every sleeper; a task of queue 0 waits for a normal tag and a
// task of queue 1 for the reserved one. Interrupts on CPUs 0 and 2 free the
// normal tags, a task on CPU 0 the reserved one. Also checked: active_queues
// is back to 1 (queue 0) at the end.
void SharedBetweenQueues() {
  const unsigned flags = BLK_MQ_F_TAG_HCTX_SHARED | BLK_MQ_F_TAG_QUEUE_SHARED;
  TagScene *s = NewScene(3, 1, flags, 2);
  static unsigned int held[3];
  blk_mq_tag_busy(&s->hctx[0]);
  held[0] = Hold(s, 0, BLK_MQ_REQ_RESERVED, 100);
  held[1] = Hold(s, 0, 0, 101);
  held[2] = Hold(s, 0, 0, 102);
  explore::spawn(
      [s] {
        blk_mq_tag_busy(&s->hctx[1]);
        UseTag(s, 1, 0, 1);
        blk_mq_tag_idle(&s->hctx[1]);
      },
      1);
  explore::spawn([s] { UseTag(s, 0, 0, 2); }, 2);
  explore::spawn([s] { UseTag(s, 1, BLK_MQ_REQ_RESERVED, 3); }, 3);
  explore::spawn([s] { PutHeld(s, 0, held[0], 100); }, 0);
  explore::irq(0, [s] { PutHeld(s, 0, held[1], 101); });
  explore::irq(2, [s] { PutHeld(s, 0, held[2], 102); });
  explore::join();
  EXPLORE_CHECK(TagsInUse(s->set.shared_tags) == 0);
  EXPLORE_CHECK(READ_ONCE(s->set.shared_tags->active_queues) == 1);
  blk_mq_tag_idle(&s->hctx[0]);
  EXPLORE_CHECK(READ_ONCE(s->set.shared_tags->active_queues) == 0);
  FreeScene(s);
}

TEST(TagContract, SharedTagsBetweenQueues) {
  explore::run_test("TagContract.SharedTagsBetweenQueues", SharedBetweenQueues,
                    Bounded(5000));
}

}  // namespace
