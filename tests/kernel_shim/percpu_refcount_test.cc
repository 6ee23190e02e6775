// SPDX-License-Identifier: GPL-2.0-only
// percpu_ref: mode transitions, kill/confirm, reinit/resurrect, BIAS, and
// release-exactly-once under get/put/kill races.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <uk/linux/percpu-refcount.h>
#include <uk/linux/slab.h>
#include <uk/shim/rseq.h>

#include "testmain.h"

namespace {

struct Obj {
  struct percpu_ref ref;
  std::atomic<int> released{0};
  std::atomic<int> confirmed{0};
  std::atomic<int> confirmed_after_release{0};
  std::atomic<bool> confirm_saw_atomic{false};
  std::atomic<bool> confirm_saw_tryget_live{false};
};

Obj *ObjOf(struct percpu_ref *ref) { return container_of(ref, Obj, ref); }

void Release(struct percpu_ref *ref) { ObjOf(ref)->released++; }

void Confirm(struct percpu_ref *ref) {
  Obj *o = ObjOf(ref);
  if (o->released.load()) o->confirmed_after_release++;
  o->confirm_saw_atomic =
      (READ_ONCE(ref->percpu_count_ptr) & __PERCPU_REF_ATOMIC) != 0;
  bool live = percpu_ref_tryget_live(ref);
  if (live) percpu_ref_put(ref);
  o->confirm_saw_tryget_live = live;
  o->confirmed++;
}

bool IsPercpu(struct percpu_ref *ref) {
  unsigned long *pc;
  return __ref_is_percpu(ref, &pc);
}

long Count(struct percpu_ref *ref) {
  return atomic_long_read(&ref->data->count);
}

constexpr unsigned long kBias = 1UL << (BITS_PER_LONG - 1);

TEST(PercpuRefTest, PercpuToAtomicToPercpu) {
  size_t pcpu_before = uk::percpu_bytes_in_use();
  long kmem_before = uk::kmalloc_nr_allocated();
  Obj o;
  ASSERT_EQ(
      percpu_ref_init(&o.ref, Release, PERCPU_REF_ALLOW_REINIT, GFP_KERNEL), 0);
  EXPECT_TRUE(IsPercpu(&o.ref));
  EXPECT_EQ((unsigned long)Count(&o.ref), kBias + 1);
  EXPECT_FALSE(percpu_ref_is_zero(&o.ref));

  for (int i = 0; i < 3; i++) percpu_ref_get(&o.ref);
  EXPECT_EQ((unsigned long)Count(&o.ref), kBias + 1)
      << "percpu gets touch the atomic count";

  percpu_ref_switch_to_atomic_sync(&o.ref);
  rcu_barrier();  // the confirmation's own put has run
  EXPECT_FALSE(IsPercpu(&o.ref));
  EXPECT_FALSE(percpu_ref_is_dying(&o.ref));
  EXPECT_EQ(Count(&o.ref), 4);
  percpu_ref_put(&o.ref);
  EXPECT_EQ(Count(&o.ref), 3);

  percpu_ref_switch_to_percpu(&o.ref);
  EXPECT_TRUE(IsPercpu(&o.ref));
  EXPECT_EQ((unsigned long)Count(&o.ref), kBias + 3);
  percpu_ref_put(&o.ref);
  percpu_ref_put(&o.ref);

  percpu_ref_kill(&o.ref);
  EXPECT_TRUE(percpu_ref_is_dying(&o.ref));
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 1);
  EXPECT_TRUE(percpu_ref_is_zero(&o.ref));
  percpu_ref_exit(&o.ref);
  EXPECT_TRUE(percpu_ref_is_zero(&o.ref))
      << "is_zero must still work after exit";
  EXPECT_EQ(uk::percpu_bytes_in_use(), pcpu_before);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmem_before);
}

TEST(PercpuRefTest, InitAtomicIsStickyUntilSwitchToPercpu) {
  Obj o;
  ASSERT_EQ(
      percpu_ref_init(&o.ref, Release, PERCPU_REF_INIT_ATOMIC, GFP_KERNEL), 0);
  EXPECT_FALSE(IsPercpu(&o.ref));
  EXPECT_EQ(Count(&o.ref), 1);
  percpu_ref_get_many(&o.ref, 5);
  EXPECT_EQ(Count(&o.ref), 6);
  percpu_ref_put_many(&o.ref, 5);
  EXPECT_EQ(Count(&o.ref), 1);
  EXPECT_EQ(o.released.load(), 0);

  percpu_ref_switch_to_percpu(&o.ref);
  EXPECT_TRUE(IsPercpu(&o.ref));
  EXPECT_TRUE(percpu_ref_tryget_many(&o.ref, 2));
  percpu_ref_put_many(&o.ref, 2);

  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 1);
  // INIT_ATOMIC implies ALLOW_REINIT.
  percpu_ref_reinit(&o.ref);
  EXPECT_FALSE(percpu_ref_is_dying(&o.ref));
  EXPECT_TRUE(IsPercpu(&o.ref));
  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 2);
  percpu_ref_exit(&o.ref);
}

TEST(PercpuRefTest, InitDeadThenReinitAndResurrect) {
  Obj o;
  ASSERT_EQ(percpu_ref_init(&o.ref, Release, PERCPU_REF_INIT_DEAD, GFP_KERNEL),
            0);
  EXPECT_TRUE(percpu_ref_is_dying(&o.ref));
  EXPECT_TRUE(percpu_ref_is_zero(&o.ref));
  EXPECT_FALSE(percpu_ref_tryget(&o.ref));
  EXPECT_FALSE(percpu_ref_tryget_live(&o.ref));

  percpu_ref_reinit(&o.ref);
  EXPECT_TRUE(IsPercpu(&o.ref));
  EXPECT_TRUE(percpu_ref_tryget_live(&o.ref));

  // Kill while a reference is held: dying, not released, resurrectable.
  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_TRUE(percpu_ref_is_dying(&o.ref));
  EXPECT_FALSE(percpu_ref_tryget_live(&o.ref));
  EXPECT_TRUE(percpu_ref_tryget(&o.ref))
      << "tryget works on a dead ref with count > 0";
  percpu_ref_put(&o.ref);
  EXPECT_EQ(o.released.load(), 0);
  EXPECT_EQ(Count(&o.ref), 1);

  percpu_ref_resurrect(&o.ref);
  EXPECT_FALSE(percpu_ref_is_dying(&o.ref));
  EXPECT_TRUE(IsPercpu(&o.ref));
  percpu_ref_put(&o.ref);  // the reference held across the kill
  EXPECT_EQ(o.released.load(), 0);

  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 1);
  EXPECT_TRUE(percpu_ref_is_zero(&o.ref));
  percpu_ref_exit(&o.ref);
}

TEST(PercpuRefTest, KillAndConfirmConfirmsOnceAfterTheSwitch) {
  size_t pcpu_before = uk::percpu_bytes_in_use();
  Obj o;
  ASSERT_EQ(percpu_ref_init(&o.ref, Release, 0, GFP_KERNEL), 0);
  EXPECT_TRUE(percpu_ref_tryget_live(&o.ref));  // keep it alive past the kill
  percpu_ref_kill_and_confirm(&o.ref, Confirm);
  rcu_barrier();
  EXPECT_EQ(o.confirmed.load(), 1);
  EXPECT_TRUE(o.confirm_saw_atomic.load());
  EXPECT_FALSE(o.confirm_saw_tryget_live.load());
  EXPECT_EQ(o.released.load(), 0);
  // Without ALLOW_REINIT the counters were freed at confirmation.
  EXPECT_EQ(uk::percpu_bytes_in_use(), pcpu_before);
  percpu_ref_put(&o.ref);
  EXPECT_EQ(o.released.load(), 1);
  EXPECT_EQ(o.confirmed_after_release.load(), 0);
  percpu_ref_exit(&o.ref);

  // Confirm on a ref that is atomic already runs synchronously.
  Obj a;
  ASSERT_EQ(
      percpu_ref_init(&a.ref, Release, PERCPU_REF_INIT_ATOMIC, GFP_KERNEL), 0);
  percpu_ref_kill_and_confirm(&a.ref, Confirm);
  EXPECT_EQ(a.confirmed.load(), 1);
  EXPECT_EQ(a.released.load(), 1);
  percpu_ref_exit(&a.ref);
}

TEST(PercpuRefTest, SwitchToAtomicConfirmAndSecondKillWarns) {
  Obj o;
  ASSERT_EQ(
      percpu_ref_init(&o.ref, Release, PERCPU_REF_ALLOW_REINIT, GFP_KERNEL), 0);
  percpu_ref_switch_to_atomic(&o.ref, Confirm);
  // A second switch waits for the first to be confirmed.
  percpu_ref_switch_to_percpu(&o.ref);
  EXPECT_EQ(o.confirmed.load(), 1);
  EXPECT_TRUE(o.confirm_saw_tryget_live.load())
      << "not dying: tryget_live works";
  EXPECT_TRUE(IsPercpu(&o.ref));
  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 1);

  uk::testing::AllowWarnings();
  long warns = uk::warn_count;
  percpu_ref_get(&o.ref);  // keep the count positive for the second kill
  percpu_ref_kill(&o.ref);
  EXPECT_GT(uk::warn_count, warns);
  percpu_ref_exit(&o.ref);
}

// Pins the calling thread to virtual CPU `cpu` and, where the host allows,
// to host CPU `cpu`: percpu_ref counts land on the host CPU's copy when
// rseq counters are on (<uk/shim/rseq.h>), else on the virtual CPU's.
bool PinToCpu(int cpu) {
  uk::pin_thread_to_cpu(cpu);
  return uk::testing::PinToHostCpu(cpu) || uk::rseq_counter_cpus == 0;
}

// Gets on one CPU and puts on another drive the percpu counters apart
// (one wraps below zero); only the sum matters, and the BIAS keeps the
// atomic count away from zero until the switch folds it in.
TEST(PercpuRefTest, BiasAndCrossCpuPuts) {
  Obj o;
  ASSERT_EQ(percpu_ref_init(&o.ref, Release, 0, GFP_KERNEL), 0);
  int other = nr_cpu_ids > 1 && std::thread::hardware_concurrency() > 1 ? 1 : 0;
  bool pinned = true;
  std::thread getter([&] {
    pinned &= PinToCpu(0);
    percpu_ref_get_many(&o.ref, 100);
  });
  getter.join();
  std::thread putter([&] {
    pinned &= PinToCpu(other);
    for (int i = 0; i < 100; i++) percpu_ref_put(&o.ref);
  });
  putter.join();
  unsigned long *pc = (unsigned long *)(o.ref.percpu_count_ptr);
  unsigned long sum = 0;
  for (int cpu = 0; cpu < (int)nr_cpu_ids; cpu++)
    sum += READ_ONCE(*per_cpu_ptr(pc, cpu));
  EXPECT_EQ(sum, 0UL);
  if (other && pinned) {
    // The puts made CPU 1's count negative; only the sum means anything.
    EXPECT_EQ((long)READ_ONCE(*per_cpu_ptr(pc, other)), -100);
    EXPECT_EQ((long)READ_ONCE(*per_cpu_ptr(pc, 0)), 100);
  }
  EXPECT_FALSE(percpu_ref_is_zero(&o.ref));
  EXPECT_EQ(o.released.load(), 0);
  percpu_ref_kill(&o.ref);
  rcu_barrier();
  EXPECT_EQ(o.released.load(), 1);
  EXPECT_TRUE(percpu_ref_is_zero(&o.ref));
  percpu_ref_exit(&o.ref);
}

// Many threads take and drop references while the ref is killed: release
// runs exactly once, never while someone holds a reference.
TEST(PercpuRefTest, ReleaseExactlyOnceUnderRaces) {
  const unsigned nthreads = uk::testing::StressThreads();
  constexpr int kRounds = 40;
  long kmem_before = uk::kmalloc_nr_allocated();
  size_t pcpu_before = uk::percpu_bytes_in_use();
  for (int round = 0; round < kRounds; round++) {
    Obj o;
    ASSERT_EQ(percpu_ref_init(&o.ref, Release, 0, GFP_KERNEL), 0);
    std::atomic<int> started{0};
    std::atomic<long> use_after_release{0}, live_after_confirm{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < nthreads; t++) {
      threads.emplace_back([&, t] {
        started++;
        for (int i = 0; i < 2000; i++) {
          bool confirmed_before = o.confirmed.load();
          bool got = (t % 2) ? percpu_ref_tryget_live(&o.ref)
                             : percpu_ref_tryget(&o.ref);
          if (!got) break;
          if (confirmed_before && (t % 2)) live_after_confirm++;
          if (o.released.load()) use_after_release++;
          percpu_ref_get_many(&o.ref, 3);
          percpu_ref_put_many(&o.ref, 2);
          percpu_ref_put(&o.ref);
          percpu_ref_put(&o.ref);
        }
      });
    }
    while (started.load() < (int)nthreads / 2) std::this_thread::yield();
    percpu_ref_kill_and_confirm(&o.ref, Confirm);
    for (auto &th : threads) th.join();
    rcu_barrier();
    ASSERT_EQ(o.released.load(), 1) << "round " << round;
    ASSERT_EQ(o.confirmed.load(), 1);
    ASSERT_EQ(use_after_release.load(), 0);
    ASSERT_EQ(live_after_confirm.load(), 0);
    percpu_ref_exit(&o.ref);
  }
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmem_before);
  EXPECT_EQ(uk::percpu_bytes_in_use(), pcpu_before);
}

TEST(PercpuRefTest, ExitOnFailedOrZeroedRefIsSafe) {
  struct percpu_ref ref = {};
  percpu_ref_exit(&ref);
  EXPECT_EQ(ref.data, nullptr);
}

}  // namespace
