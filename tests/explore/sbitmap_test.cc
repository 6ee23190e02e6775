// SPDX-License-Identifier: GPL-2.0-only
// Historical lib/sbitmap.c races, found by the explorer with nobody placing
// the interleaving: each race has a "Found" test (the buggy code, from its
// runtime switch, must fail within a stated number of schedules) and a
// "Survives" test (today's code must pass the explore budget).
#include <gtest/gtest.h>

#include <uk/linux/completion.h>
#include <uk/linux/preempt.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/sched.h>
#include <uk/linux/wait.h>

#include "explore.h"
#include "sbitmap_hints.h"
#include "testmain.h"

namespace {

// ---- v6.1: wait_cnt lost wake-up under a nested completion ----
//
// Linux 6.1's __sbq_wake_up() took a queue's wait_cnt to 0, woke a batch,
// then reset the count. A completion interrupt nested between the wake-up
// and the reset found the count at 0, skipped the queue and dropped its
// wake-up (fixed in 6.2 by the completion_cnt/wakeup_cnt scheme, Jan Kara's
// "sbitmap: Avoid lockups when waker gets preempted"). Set-up: both tags of a
// depth-2 queue in flight; two tasks on CPU 1 wait for a tag on ws[0] as
// blk-mq's tag allocation does, then complete their request (free the tag);
// on CPU 0 a task completes one request with preemption off, and an
// interrupt completes the other. The check: every task ends (none sleeps
// forever).

struct SbqScene {
  struct sbitmap_queue sbq;
  int tag[2];
};
SbqScene sbq_scene;

// Waits for a tag on @ws as blk-mq's tag allocation does; returns it.
int GetTagOrSleep(struct sbitmap_queue *sbq, struct sbq_wait_state *ws) {
  DEFINE_SBQ_WAIT(wait);
  int tag;
  for (;;) {
    tag = __sbitmap_queue_get(sbq);
    if (tag >= 0) break;
    sbitmap_prepare_to_wait(sbq, ws, &wait, TASK_UNINTERRUPTIBLE);
    tag = __sbitmap_queue_get(sbq);
    if (tag >= 0) {
      sbitmap_finish_wait(sbq, ws, &wait);
      break;
    }
    schedule();
    sbitmap_finish_wait(sbq, ws, &wait);
  }
  return tag;
}

void WaitForTag(SbqScene *s) {
  int tag = GetTagOrSleep(&s->sbq, &s->sbq.ws[0]);
  // The request completes at once (a fast device): the tag goes back, and
  // with it the wake-up of a waiter whose wake-up this one took.
  sbitmap_queue_clear(&s->sbq, tag, 1);
}

void NestedCompletion(enum sbq_wake_scheme scheme) {
  SbqScene *s = &sbq_scene;
  EXPLORE_CHECK(
      sbitmap_queue_init_node(&s->sbq, 2, -1, false, GFP_KERNEL, -1) == 0);
  sbitmap_queue_set_wake_scheme(&s->sbq, scheme);
  explore::zero_alloc_hints(&s->sbq.sb);
  s->tag[0] = __sbitmap_queue_get(&s->sbq);
  s->tag[1] = __sbitmap_queue_get(&s->sbq);
  EXPLORE_CHECK(s->tag[0] >= 0 && s->tag[1] >= 0);
  explore::spawn([s] { WaitForTag(s); }, 1);
  explore::spawn([s] { WaitForTag(s); }, 1);
  explore::spawn(
      [s] {
        preempt_disable();  // a completion owns its CPU; interrupts stay on
        sbitmap_queue_clear(&s->sbq, s->tag[0], 0);
        preempt_enable();
      },
      0);
  explore::irq(0, [s] { sbitmap_queue_clear(&s->sbq, s->tag[1], 0); });
  explore::join();
  sbitmap_queue_free(&s->sbq);
}

TEST(Historical, SbitmapV61WakeCntFound) {
  const long budget = 20000;
  // A uniform random walk lets the interrupt in almost at once; PCT keeps
  // it back until a change point, so it lands inside the completion.
  explore::Options o = explore::find_options(budget, explore::Strategy::kPct);
  explore::Result r = explore::run([] { NestedCompletion(SBQ_WAKE_V61); }, o);
  explore::report_found("Historical.SbitmapV61WakeCntFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("sleeps in schedule()"), std::string::npos)
      << r.message;
}

EXPLORE_TEST(Historical, SbitmapV61WakeCntSurvives) {
  NestedCompletion(SBQ_WAKE_CURRENT);
}

// ---- contract: today's wake-ups with more waiters and completions ----
//
// Depth 4, all four tags in flight; three tasks on CPUs 1 and 2 wait for a
// tag on ws[0] and complete at once; on CPU 0 a task completes two requests
// (preemption off) and an interrupt a third; an interrupt on CPU 3 completes
// the fourth. Every task must end.

void ManyWaiters() {
  SbqScene *s = &sbq_scene;
  static int tags[4];
  EXPLORE_CHECK(
      sbitmap_queue_init_node(&s->sbq, 4, -1, false, GFP_KERNEL, -1) == 0);
  explore::zero_alloc_hints(&s->sbq.sb);
  for (int &t : tags) t = __sbitmap_queue_get(&s->sbq);
  for (int cpu : {1, 1, 2}) explore::spawn([s] { WaitForTag(s); }, cpu);
  explore::spawn(
      [s] {
        for (int i = 0; i < 2; i++) {
          preempt_disable();
          sbitmap_queue_clear(&s->sbq, tags[i], 0);
          preempt_enable();
        }
      },
      0);
  explore::irq(0, [s] { sbitmap_queue_clear(&s->sbq, tags[2], 0); });
  explore::irq(3, [s] { sbitmap_queue_clear(&s->sbq, tags[3], 3); });
  explore::join();
  sbitmap_queue_free(&s->sbq);
}

EXPLORE_TEST(SbitmapContract, WakeUpsWithManyWaitersAndCompletions) {
  ManyWaiters();
}

// ---- v5.11..v6.10: ->cleared seen empty while its bits are in flight ----
//
// sbitmap_deferred_clear() took ->cleared with xchg() and only then cleared
// those bits in ->word, without a lock; a second allocator that looked in
// between found ->cleared empty and ->word full, and failed although bits
// were free (fixed in 6.11 by swap_lock around both). Set-up: a full
// 64-bit word with two bits freed (deferred); two tasks allocate one each.

struct SbScene {
  struct sbitmap sb;
  int got[2];
};
SbScene sb_scene;

void TwoAllocators(bool v610) {
  SbScene *s = &sb_scene;
  EXPLORE_CHECK(sbitmap_init_node(&s->sb, 64, 6, GFP_KERNEL, -1, false, true) ==
                0);
  explore::zero_alloc_hints(&s->sb);
  for (int i = 0; i < 64; i++) sbitmap_get(&s->sb);
  sbitmap_put(&s->sb, 10);
  sbitmap_put(&s->sb, 11);
  sbitmap_deferred_clear_v610 = v610;
  for (int i = 0; i < 2; i++)
    explore::spawn([s, i] { s->got[i] = sbitmap_get(&s->sb); }, i);
  explore::join();
  sbitmap_deferred_clear_v610 = false;
  EXPLORE_CHECK(s->got[0] >= 0 && s->got[1] >= 0);
  sbitmap_free(&s->sb);
}

TEST(Historical, SbitmapV610DeferredClearFound) {
  const long budget = 20000;
  explore::Options o = explore::find_options(budget);
  explore::Result r = explore::run([] { TwoAllocators(true); }, o);
  sbitmap_deferred_clear_v610 = false;
  explore::report_found("Historical.SbitmapV610DeferredClearFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("got"), std::string::npos) << r.message;
}

EXPLORE_TEST(Historical, SbitmapV610DeferredClearSurvives) {
  TwoAllocators(false);
}

// ---- 040b83fcecfb without 48c033314f37: a count left at zero ----
//
// 040b83fcecfb made __sbq_wake_up() retry when the queue it charged had no
// sleepers left, but a charge that took the count to 0 on such a queue
// returned before the reset: the count stayed at 0, every later free on
// that queue took it below zero and retried, and the completion spun for
// ever while the queue's next sleeper slept (fixed by 48c033314f37,
// "sbitmap: Avoid leaving waitqueue in invalid state in __sbq_wake_up()",
// 6.1). Set-up: both tags of a depth-2 queue in flight (a batch of 1); two
// tasks wait for a tag on ws[0] and keep it; one task on CPU 0 completes
// both requests, one after the other, so that no other waker is ever
// between its zero and its reset. The queue empties when a waiter's own
// retry takes the freed tag between the completion's look at the queue and
// its charge; the completion's spin is reported as a livelock. The check:
// every task ends.

SbqScene one_completer_scene;

void OneCompleter(enum sbq_wake_scheme scheme) {
  SbqScene *s = &one_completer_scene;
  static int got[2];
  EXPLORE_CHECK(
      sbitmap_queue_init_node(&s->sbq, 2, -1, false, GFP_KERNEL, -1) == 0);
  sbitmap_queue_set_wake_scheme(&s->sbq, scheme);
  explore::zero_alloc_hints(&s->sbq.sb);
  s->tag[0] = __sbitmap_queue_get(&s->sbq);
  s->tag[1] = __sbitmap_queue_get(&s->sbq);
  EXPLORE_CHECK(s->tag[0] >= 0 && s->tag[1] >= 0);
  explore::spawn([s] { got[0] = GetTagOrSleep(&s->sbq, &s->sbq.ws[0]); }, 1);
  explore::spawn(
      [s] {
        for (int i = 0; i < 2; i++) sbitmap_queue_clear(&s->sbq, s->tag[i], 0);
      },
      0);
  explore::spawn([s] { got[1] = GetTagOrSleep(&s->sbq, &s->sbq.ws[0]); }, 2);
  explore::join();
  EXPLORE_CHECK(got[0] != got[1]);
  sbitmap_queue_free(&s->sbq);
}

TEST(Historical, SbitmapV61NextStuckCountFound) {
  const long budget = 20000;
  // Three switches: beyond the bounded search's two, in reach of the
  // random walk.
  explore::Options o = explore::find_options(budget);
  explore::Result r = explore::run([] { OneCompleter(SBQ_WAKE_V61_NEXT); }, o);
  explore::report_found("Historical.SbitmapV61NextStuckCountFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("livelock"), std::string::npos) << r.message;
}

EXPLORE_TEST(Historical, SbitmapV61NextStuckCountSurvives) {
  OneCompleter(SBQ_WAKE_CURRENT);
}

// ---- v4.x..v6.0: a batch's wake-up sent to a queue already woken ----
//
// Up to 6.0, __sbq_wake_up() put the batch back into the count of the
// queue it had taken to zero (a compare-and-exchange) before it moved
// wake_index on and woke that queue. In between, the same queue could take
// a second batch of frees, be woken by the free that completed it and have
// the index moved: the first free then moved the index again, past the
// next queue, and woke the queue the second had emptied, so two batches
// of frees woke one batch of sleepers (040b83fcecfb, "sbitmap: fix possible
// io hung due to lost wakeup", 6.1). Set-up: a depth-16 queue (a batch of
// 2) with every tag in flight; two tasks wait for a tag on ws[0] and
// ws[1], as two hardware queues' wait_index hand them out, and complete
// their request at once; two completion tasks complete two requests each;
// the other twelve requests complete only after both waiters' requests
// have (a task that waits for them), so the four completions and the
// waiters' own are all the frees that can wake a waiter. Every tag comes
// back; the check: every task ends.

struct SlowScene {
  struct sbitmap_queue sbq;
  int tag[16];
  atomic_t done;
  struct completion waiters_done;
};
SlowScene slow_scene;

void SlowRequests(enum sbq_wake_scheme scheme) {
  SlowScene *s = &slow_scene;
  EXPLORE_CHECK(
      sbitmap_queue_init_node(&s->sbq, 16, -1, false, GFP_KERNEL, -1) == 0);
  sbitmap_queue_set_wake_scheme(&s->sbq, scheme);
  EXPLORE_CHECK(s->sbq.wake_batch == 2);
  explore::zero_alloc_hints(&s->sbq.sb);
  for (int &t : s->tag) t = __sbitmap_queue_get(&s->sbq);
  EXPLORE_CHECK(s->tag[15] >= 0 && __sbitmap_queue_get(&s->sbq) < 0);
  atomic_set(&s->done, 0);
  init_completion(&s->waiters_done);
  for (int i = 0; i < 2; i++)
    explore::spawn(
        [s, i] {
          int tag = GetTagOrSleep(&s->sbq, &s->sbq.ws[i]);
          sbitmap_queue_clear(&s->sbq, tag, 1 + i);
          if (atomic_inc_return(&s->done) == 2) complete(&s->waiters_done);
        },
        1 + i);
  explore::spawn(
      [s] {
        for (int i = 0; i < 2; i++) sbitmap_queue_clear(&s->sbq, s->tag[i], 0);
      },
      0);
  explore::spawn(
      [s] {
        for (int i = 2; i < 4; i++) sbitmap_queue_clear(&s->sbq, s->tag[i], 3);
      },
      3);
  explore::spawn(
      [s] {
        wait_for_completion(&s->waiters_done);
        for (int i = 4; i < 16; i++) sbitmap_queue_clear(&s->sbq, s->tag[i], 3);
      },
      3);
  explore::join();
  EXPLORE_CHECK(sbitmap_weight(&s->sbq.sb) == 0);
  sbitmap_queue_free(&s->sbq);
}

TEST(Historical, SbitmapV60StaleWakeFound) {
  const long budget = 20000;
  // Two switches, but deep in a long schedule: the bounded search spends
  // its budget on the later choice points; PCT finds it.
  explore::Options o = explore::find_options(budget, explore::Strategy::kPct);
  explore::Result r = explore::run([] { SlowRequests(SBQ_WAKE_V60); }, o);
  explore::report_found("Historical.SbitmapV60StaleWakeFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
  EXPECT_NE(r.message.find("sleeps in schedule()"), std::string::npos)
      << r.message;
}

// The bounded search, 4,000 schedules (about 4 s) in ctest; tools/ukern
// explore --schedules asks for more.
TEST(Historical, SbitmapV60StaleWakeSurvives) {
  explore::Options o = explore::test_defaults();
  o.max_schedules = 4000;
  explore::run_test(
      "Historical.SbitmapV60StaleWakeSurvives",
      [] { SlowRequests(SBQ_WAKE_CURRENT); }, o);
}

}  // namespace
