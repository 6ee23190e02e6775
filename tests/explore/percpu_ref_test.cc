// SPDX-License-Identifier: GPL-2.0-only
// percpu_ref (kernel_shim/percpu-refcount.cc) under the explorer: its mode
// switches against gets, puts and live trygets from tasks and interrupts,
// and the historical race of the switches that took no lock.
#include <gtest/gtest.h>

#include <uk/linux/percpu-refcount.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/wait.h>

#include "explore.h"
#include "testmain.h"

namespace {

// ---- RCU inside the schedule ----
//
// A switch to atomic mode folds the per-CPU counters in from an RCU
// callback. The callback thread runs outside the explorer, so the scenes
// take call_rcu() over (uk::call_rcu_hook): an "rcu" task runs each
// callback after a grace period, that is once every task and interrupt
// that may be in a read-side section (their reader words, noted when they
// start) has been seen outside one, and ends when the others have ended
// and no callback is left.

struct RcuModel {
  struct rcu_head *cb[16];
  int queued, done;
  uk::RcuReader *reader[16];
  int readers;
  int workers, finished;
};
RcuModel rcu_model;

// The model's own words are read and written with the compiler's atomics,
// which are no scheduling points: the schedules are those of plain
// accesses, and under explore-tsan they are no data race. A callback is
// published with a release of the count, and taken with an acquire.
void RcuHook(struct rcu_head *head) {
  RcuModel *m = &rcu_model;
  int q = __atomic_load_n(&m->queued, __ATOMIC_RELAXED);
  EXPLORE_CHECK(q < (int)ARRAY_SIZE(m->cb));
  m->cb[q] = head;
  __atomic_store_n(&m->queued, q + 1, __ATOMIC_RELEASE);
}

// Wraps a task or interrupt body: notes its reader word, counts its end.
// (The scenes' own counters are plain: no scheduling point splits their
// increments.)
std::function<void()> Worker(std::function<void()> fn) {
  rcu_model.workers++;
  return [fn] {
    RcuModel *m = &rcu_model;
    int slot = __atomic_fetch_add(&m->readers, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&m->reader[slot], &uk::rcu_reader_self(),
                     __ATOMIC_RELAXED);
    fn();
    // the thread and its reader word go away
    __atomic_store_n(&m->reader[slot], nullptr, __ATOMIC_RELAXED);
    __atomic_fetch_add(&m->finished, 1, __ATOMIC_RELEASE);
  };
}

bool InReadSection(const uk::RcuReader *r) {
  return r != nullptr &&
         (__atomic_load_n(&r->ctr, __ATOMIC_RELAXED) & RCU_NEST_MASK) != 0;
}

void RcuTask() {
  RcuModel *m = &rcu_model;
  for (;;) {
    // The workers' count first: once all have ended, the queue read after
    // it holds every callback they queued.
    int finished = smp_load_acquire(&m->finished);
    int end = smp_load_acquire(&m->queued);
    if (m->done < end) {
      // The grace period: each reader seen outside a section after the
      // callbacks were queued. The acquire takes what the reader's
      // rcu_read_unlock() released, as the shim's grace period does.
      for (int i = 0; i < READ_ONCE(m->readers); i++) {
        uk::RcuReader *r;
        while (InReadSection(r = READ_ONCE(m->reader[i]))) cpu_relax();
        if (r) uk_tsan_acquire(r);
      }
      while (m->done < end) {
        struct rcu_head *head = m->cb[m->done];
        m->done++;
        head->func(head);
      }
      continue;
    }
    if (finished == m->workers) return;
    cpu_relax();
  }
}

// A schedule's RCU model, from its start to the end of the body (also when
// join() throws); the rcu task goes on @cpu, after the scene's workers.
struct RcuScope {
  RcuScope() {
    rcu_model = RcuModel{};
    uk::call_rcu_hook = RcuHook;
  }
  ~RcuScope() { uk::call_rcu_hook = nullptr; }
  void Spawn(int cpu) { explore::spawn(RcuTask, cpu); }
};

// ---- the ref of a scene ----

struct RefScene {
  struct percpu_ref ref;
  int released;             // release() calls
  int confirmed;            // confirm_kill() calls
  bool dead;                // from a confirmed kill to the next reinit
  int reinits;              // reinits begun
  bool live_after_confirm;  // confirm_kill() got a live reference
  wait_queue_head_t zero_wq;
};
RefScene ref_scene;

// The scene's counters, as the model's words: the compiler's atomics.
void Release(struct percpu_ref *ref) {
  RefScene *s = container_of(ref, RefScene, ref);
  __atomic_fetch_add(&s->released, 1, __ATOMIC_RELAXED);
  wake_up(&s->zero_wq);
}

void ConfirmKill(struct percpu_ref *ref) {
  RefScene *s = container_of(ref, RefScene, ref);
  __atomic_fetch_add(&s->confirmed, 1, __ATOMIC_RELAXED);
  WRITE_ONCE(s->dead, true);
  // By the time the kill is confirmed, no CPU can take a live reference.
  if (percpu_ref_tryget_live(ref)) {
    __atomic_store_n(&s->live_after_confirm, true, __ATOMIC_RELAXED);
    percpu_ref_put(ref);
  }
}

// A user of the ref: a live tryget, as blk_queue_enter() does.
void TryUse(RefScene *s) {
  int reinits = READ_ONCE(s->reinits);
  bool dead = READ_ONCE(s->dead);
  if (percpu_ref_tryget_live(&s->ref)) {
    // Between a confirmed kill and the next reinit nobody gets in.
    EXPLORE_CHECK(!dead || READ_ONCE(s->reinits) != reinits);
    percpu_ref_get(&s->ref);
    percpu_ref_put(&s->ref);
    percpu_ref_put(&s->ref);
  }
}

void RefBegin(RefScene *s, unsigned int flags) {
  s->released = 0;
  s->confirmed = 0;
  s->dead = false;
  s->reinits = 0;
  s->live_after_confirm = false;
  init_waitqueue_head(&s->zero_wq);
  EXPLORE_CHECK(percpu_ref_init(&s->ref, Release, flags, GFP_KERNEL) == 0);
}

// ---- v4.7: a switch to percpu mode that a kill overtakes ----
//
// Until 4.8 the mode switches took no lock; callers had to keep them
// apart. percpu_ref_switch_to_percpu() found the ref live and went on to
// restore the per-CPU counters; a percpu_ref_kill() in between marked it
// dead, found it already atomic, dropped the base reference and ran
// release(); the switch then finished and left a dead, released ref in
// percpu mode, where percpu_ref_tryget_live() succeeds and the count can
// no longer reach zero (33e465ce7cb3, "percpu_ref: allow operation mode
// switching operations to be called concurrently", 4.8; the blk-mq
// freeze path met it). Set-up: a ref in atomic mode (INIT_ATOMIC), live;
// one task switches it to percpu mode, one kills it, one tries to use it;
// an rcu task. The checks: release() runs once, the ref ends at zero, and
// no live tryget succeeds once the kill is confirmed.

// The era switch for one schedule.
struct V47Scope {
  explicit V47Scope(bool on) { percpu_ref_switch_v47 = on; }
  ~V47Scope() { percpu_ref_switch_v47 = false; }
};

void SwitchAgainstKill(bool v47) {
  RefScene *s = &ref_scene;
  RcuScope rcu;
  RefBegin(s, PERCPU_REF_INIT_ATOMIC | PERCPU_REF_ALLOW_REINIT);
  V47Scope era(v47);
  explore::spawn(Worker([s] { percpu_ref_switch_to_percpu(&s->ref); }), 1);
  explore::spawn(
      Worker([s] { percpu_ref_kill_and_confirm(&s->ref, ConfirmKill); }), 2);
  explore::spawn(Worker([s] { TryUse(s); }), 0);
  rcu.Spawn(3);
  explore::join();
  EXPLORE_CHECK(s->released == 1);
  EXPLORE_CHECK(s->confirmed == 1);
  EXPLORE_CHECK(!s->live_after_confirm);
  EXPLORE_CHECK(percpu_ref_is_zero(&s->ref));
  percpu_ref_exit(&s->ref);
}

TEST(Historical, PercpuRefV47SwitchKillFound) {
  const long budget = 20000;
  explore::Options o;
  // One switch, late in the switch to percpu mode: PCT finds it at once,
  // the bounded search only after some 14,000 schedules.
  o.strategy = explore::Strategy::kPct;
  o.preemption_bound = 2;
  o.max_schedules = budget;
  o.max_seconds = 120;
  o = explore::options_from_env(o);
  o.trace = true;
  uk::testing::AllowWarnings();
  explore::Result r = explore::run([] { SwitchAgainstKill(true); }, o);
  explore::report_found("Historical.PercpuRefV47SwitchKillFound", r,
                        o.max_schedules);
  ASSERT_TRUE(r.failed);
}

// The bounded search, 4,000 schedules (a few seconds) in ctest, as the
// contract test below; tools/ukern explore --schedules asks for more.
explore::Options Bounded() {
  explore::Options o = explore::test_defaults();
  o.max_schedules = 4000;
  return o;
}

TEST(Historical, PercpuRefV47SwitchKillSurvives) {
  explore::run_test(
      "Historical.PercpuRefV47SwitchKillSurvives",
      [] { SwitchAgainstKill(false); }, Bounded());
}

// ---- contract: mode switches against users ----
//
// A ref in percpu mode. One task switches it to atomic mode and back; one
// kills it (with a confirmation), waits for zero as a queue freeze does,
// reinits it, then kills it (with a confirmation) for good; one task and an interrupt on CPU 0
// try to use it (a live tryget, a get, two puts); an interrupt on CPU 3
// does the same. The checks: release() runs once per kill, the ref ends
// at zero, no live tryget succeeds between a confirmed kill and its
// reinit, and the confirmation itself sees no live reference.

void Contract() {
  RefScene *s = &ref_scene;
  RcuScope rcu;
  RefBegin(s, PERCPU_REF_ALLOW_REINIT);
  explore::spawn(Worker([s] {
                   percpu_ref_switch_to_atomic(&s->ref, NULL);
                   percpu_ref_switch_to_percpu(&s->ref);
                 }),
                 1);
  explore::spawn(Worker([s] {
                   percpu_ref_kill_and_confirm(&s->ref, ConfirmKill);
                   wait_event(s->zero_wq, percpu_ref_is_zero(&s->ref));
                   EXPLORE_CHECK(READ_ONCE(s->released) == 1);
                   __atomic_fetch_add(&s->reinits, 1, __ATOMIC_RELAXED);
                   WRITE_ONCE(s->dead, false);
                   percpu_ref_reinit(&s->ref);
                   percpu_ref_kill_and_confirm(&s->ref, ConfirmKill);
                 }),
                 2);
  explore::spawn(Worker([s] { TryUse(s); }), 0);
  explore::irq(0, Worker([s] { TryUse(s); }));
  explore::irq(3, Worker([s] { TryUse(s); }));
  rcu.Spawn(3);
  explore::join();
  EXPLORE_CHECK(s->released == 2);
  EXPLORE_CHECK(s->confirmed == 2);
  EXPLORE_CHECK(!s->live_after_confirm);
  EXPLORE_CHECK(percpu_ref_is_zero(&s->ref));
  percpu_ref_exit(&s->ref);
}

TEST(PercpuRefContract, SwitchesKillsAndReinitAgainstUsers) {
  explore::run_test("PercpuRefContract.SwitchesKillsAndReinitAgainstUsers",
                    Contract, Bounded());
}

}  // namespace
