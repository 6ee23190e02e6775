// SPDX-License-Identifier: GPL-2.0-only
// The virtual CPU model: preemption, interrupts, bottom halves, interrupt
// context and nested interrupts.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/cpumask.h>
#include <uk/linux/percpu.h>
#include <uk/linux/smp.h>
#include <uk/linux/spinlock.h>
#include <uk/shim/cpu.h>

#include "testmain.h"

namespace {

class CpuTest : public ::testing::Test {
 protected:
  void TearDown() override { uk::pin_thread_to_cpu(-1); }
};

TEST_F(CpuTest, ProcessorIdInRange) {
  for (int i = 0; i < 100; i++) {
    int c = smp_processor_id();
    EXPECT_GE(c, 0);
    EXPECT_LT(c, static_cast<int>(nr_cpu_ids));
  }
}

// The host CPU comes from the rseq area through the offset cached at start-up:
// it must be glibc's, and the id must be the CPU the thread runs on. A
// migration between the two reads can make them differ, so a few tries are
// allowed; a wrong offset would never match.
TEST_F(CpuTest, HostCpuReadsTheRseqCpuId) {
  if (__rseq_size == 0) GTEST_SKIP() << "glibc registered no rseq area";
  EXPECT_EQ(uk::rseq_cpu_id_offset,
            static_cast<long>(__rseq_offset + offsetof(struct rseq, cpu_id)));
  bool matched = false;
  for (int i = 0; i < 1000 && !matched; i++) {
    int want = sched_getcpu();
    int got = uk::host_cpu();
    int got_v = uk::host_vcpu();
    matched = got == want && got_v == (want < static_cast<int>(nr_cpu_ids)
                                           ? want
                                           : uk::host_to_vcpu[want]);
  }
  EXPECT_TRUE(matched);
}

TEST_F(CpuTest, PinnedThreadReportsItsCpu) {
  uk::pin_thread_to_cpu(0);
  EXPECT_EQ(smp_processor_id(), 0);
  int c = get_cpu();
  EXPECT_EQ(c, 0);
  EXPECT_EQ(preempt_count(), 1);
  put_cpu();
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(CpuTest, PreemptDisableOwnsTheCpuExclusively) {
  // Two threads pinned to CPU 0: while one has preemption disabled the
  // other cannot enter its own section on that CPU.
  std::atomic<int> inside{0}, max_inside{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; t++) {
    ts.emplace_back([&] {
      uk::pin_thread_to_cpu(0);
      for (int i = 0; i < 2000; i++) {
        preempt_disable();
        int n = inside.fetch_add(1) + 1;
        int m = max_inside.load();
        while (n > m && !max_inside.compare_exchange_weak(m, n)) {
        }
        inside.fetch_sub(1);
        preempt_enable();
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(max_inside.load(), 1);
}

TEST_F(CpuTest, IrqSaveRestoreNests) {
  unsigned long f1, f2;
  EXPECT_FALSE(irqs_disabled());
  local_irq_save(f1);
  EXPECT_TRUE(irqs_disabled());
  local_irq_save(f2);
  EXPECT_TRUE(irqs_disabled());
  local_irq_restore(f2);
  EXPECT_TRUE(irqs_disabled());
  local_irq_restore(f1);
  EXPECT_FALSE(irqs_disabled());
}

TEST_F(CpuTest, HardirqRunsInInterruptContextOnTheTargetCpu) {
  int seen_cpu = -1;
  bool hard = false, irqs_off = false;
  uk::run_in_hardirq(0, [&] {
    seen_cpu = smp_processor_id();
    hard = in_irq();
    irqs_off = irqs_disabled();
  });
  EXPECT_EQ(seen_cpu, 0);
  EXPECT_TRUE(hard);
  EXPECT_TRUE(irqs_off);
  EXPECT_FALSE(in_interrupt());
}

TEST_F(CpuTest, HardirqNestsInsidePreemptDisabledSection) {
  uk::pin_thread_to_cpu(0);
  std::vector<int> order;
  preempt_disable();
  order.push_back(1);
  uk::run_in_hardirq(0, [&] { order.push_back(2); });
  order.push_back(3);
  preempt_enable();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(CpuTest, HardirqIsDeferredWhileIrqsAreOff) {
  uk::pin_thread_to_cpu(0);
  std::vector<int> order;
  unsigned long flags;
  local_irq_save(flags);
  order.push_back(1);
  uk::run_in_hardirq(0, [&] { order.push_back(3); });
  order.push_back(2);
  local_irq_restore(flags);  // the pending interrupt fires here
  order.push_back(4);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST_F(CpuTest, SoftirqIsDeferredWhileBhIsOff) {
  uk::pin_thread_to_cpu(0);
  std::vector<int> order;
  local_bh_disable();
  EXPECT_TRUE(in_softirq());
  EXPECT_FALSE(in_serving_softirq());
  uk::run_in_softirq(0, [&] {
    EXPECT_TRUE(in_serving_softirq());
    order.push_back(2);
  });
  order.push_back(1);
  local_bh_enable();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST_F(CpuTest, IrqFromAnotherThreadWaitsForIrqsOn) {
  // Thread A disables interrupts on CPU 0; an interrupt raised from
  // thread B for CPU 0 must not run until A enables them.
  uk::pin_thread_to_cpu(0);
  std::atomic<bool> ran{false}, raised{false};
  unsigned long flags;
  local_irq_save(flags);
  std::thread b([&] {
    raised = true;
    uk::run_in_hardirq(0, [&] { ran = true; });
  });
  ASSERT_TRUE(uk::testing::WaitFor([&] { return raised.load(); }));
  for (int i = 0; i < 1000; i++) {
    std::this_thread::yield();
    ASSERT_FALSE(ran.load());
  }
  local_irq_restore(flags);
  b.join();
  EXPECT_TRUE(ran.load());
}

TEST_F(CpuTest, SpinLockIrqsaveDisablesIrqsAndTracksOwner) {
  DEFINE_SPINLOCK(lock);
  unsigned long flags;
  spin_lock_irqsave(&lock, flags);
  EXPECT_TRUE(irqs_disabled());
  EXPECT_TRUE(lockdep_is_held(&lock));
  EXPECT_GT(preempt_count(), 0);
  spin_unlock_irqrestore(&lock, flags);
  EXPECT_FALSE(irqs_disabled());
  EXPECT_FALSE(lockdep_is_held(&lock));
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(CpuTest, SmpCallFunctionSingleRunsOnTarget) {
  int where = -1;
  EXPECT_EQ(smp_call_function_single(
                0, [](void *p) { *static_cast<int *>(p) = smp_processor_id(); },
                &where, 1),
            0);
  EXPECT_EQ(where, 0);
  EXPECT_EQ(smp_call_function_single(
                NR_CPUS + 1, [](void *) {}, nullptr, 1),
            -ENXIO);
}

TEST_F(CpuTest, SoftirqRaisedInHardirqRunsAtIrqExit) {
  std::vector<int> order;
  uk::run_in_hardirq(0, [&] {
    order.push_back(1);
    uk::run_in_softirq(0, [&] {
      EXPECT_TRUE(in_serving_softirq());
      EXPECT_FALSE(in_irq());
      order.push_back(3);
    });
    order.push_back(2);  // still in the hardirq: the softirq waits
  });
  order.push_back(4);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST_F(CpuTest, SoftirqRaisedInHardirqWaitsForBhEnable) {
  uk::pin_thread_to_cpu(0);
  std::vector<int> order;
  local_bh_disable();
  uk::run_in_hardirq(
      0, [&] { uk::run_in_softirq(0, [&] { order.push_back(2); }); });
  order.push_back(1);  // irq exit found bottom halves off
  local_bh_enable();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// Unpinned tasks take the CPU they run on through the inline fast path
// (and the slow one when it is busy). Whatever the section (interrupts
// off, preemption off, a spinlock with interrupts off), a CPU has one owner
// at a time; tasks that found it busy and slept are woken; interrupt work
// never runs inside a section that has that CPU's interrupts off.
TEST_F(CpuTest, UnpinnedSectionsAreExclusiveAndWakeSleepers) {
  const int nthreads = 2 * static_cast<int>(nr_cpu_ids) + 2;
  const int iters = 2000;
  std::atomic<int> owners[NR_CPUS] = {};
  std::atomic<int> irqs_off_on[NR_CPUS] = {};
  std::atomic<int> shared_owner{0}, irq_in_irqs_off{0}, irq_runs{0};
  std::atomic<int> running{nthreads};
  std::vector<std::thread> ts;
  for (int t = 0; t < nthreads; t++) {
    ts.emplace_back([&, t] {
      DEFINE_SPINLOCK(own_lock);  // this thread's: no lock contention
      for (int i = 0; i < iters; i++) {
        const int kind = (i + t) % 3;
        unsigned long flags = 0;
        // 0: local_irq_save, 1: preempt_disable, 2: spin_lock_irqsave.
        auto section = [&](bool enter) {
          if (kind == 1) return enter ? preempt_disable() : preempt_enable();
          if (kind == 0 && enter) local_irq_save(flags);
          if (kind == 0 && !enter) local_irq_restore(flags);
          if (kind == 2 && enter) spin_lock_irqsave(&own_lock, flags);
          if (kind == 2 && !enter) spin_unlock_irqrestore(&own_lock, flags);
        };
        section(true);
        const int c = smp_processor_id();
        if (owners[c].fetch_add(1) != 0) shared_owner++;
        if (kind != 1) irqs_off_on[c]++;
        // Now and then stay long enough for others to find the CPU busy
        // and go to sleep on it.
        if (i % 64 == t % 64) sched_yield();
        if (kind != 1) irqs_off_on[c]--;
        owners[c].fetch_sub(1);
        section(false);
        ASSERT_EQ(preempt_count(), 0);
        ASSERT_FALSE(irqs_disabled());
      }
      running--;
    });
  }
  // Interrupts for every CPU meanwhile, from a thread that owns none.
  while (running.load() > 0) {
    for (int c = 0; c < static_cast<int>(nr_cpu_ids); c++) {
      uk::run_in_hardirq(c, [&, c] {
        if (irqs_off_on[c].load() != 0) irq_in_irqs_off++;
        irq_runs++;
      });
    }
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(shared_owner.load(), 0);
  EXPECT_EQ(irq_in_irqs_off.load(), 0);
  EXPECT_GT(irq_runs.load(), 0);
}

}  // namespace

TEST(CpumaskTest, MaskOperationsAndTheOnlineMask) {
  // Every virtual CPU is online; no bit past nr_cpu_ids is.
  EXPECT_EQ(cpumask_weight(cpu_online_mask), nr_cpu_ids);
  EXPECT_EQ(cpumask_first(cpu_online_mask), 0u);
  EXPECT_FALSE(test_bit(nr_cpu_ids, cpumask_bits(cpu_online_mask)));

  cpumask_var_t mask;
  ASSERT_TRUE(zalloc_cpumask_var(&mask, GFP_KERNEL));
  EXPECT_TRUE(cpumask_empty(mask));
  EXPECT_EQ(cpumask_first(mask), nr_cpu_ids);
  EXPECT_EQ(cpumask_first_and(mask, cpu_online_mask), nr_cpu_ids);

  unsigned int last = nr_cpu_ids - 1;
  cpumask_set_cpu(last, mask);
  cpumask_set_cpu(0, mask);
  EXPECT_TRUE(cpumask_test_cpu(0, mask));
  EXPECT_TRUE(cpumask_test_cpu(last, mask));
  EXPECT_EQ(cpumask_weight(mask), last == 0 ? 1u : 2u);
  EXPECT_EQ(cpumask_first_and(mask, cpu_online_mask), 0u);
  EXPECT_EQ(cpumask_next_and(0, mask, cpu_online_mask),
            last == 0 ? nr_cpu_ids : last);
  EXPECT_EQ(cpumask_next(last, mask), nr_cpu_ids);

  std::vector<int> seen;
  int cpu;
  for_each_cpu(cpu, mask) seen.push_back(cpu);
  if (last == 0) {
    EXPECT_EQ(seen, std::vector<int>({0}));
  } else {
    EXPECT_EQ(seen, std::vector<int>({0, (int)last}));
  }

  cpumask_clear_cpu(0, mask);
  EXPECT_FALSE(cpumask_test_cpu(0, mask));
  cpumask_clear(mask);
  EXPECT_TRUE(cpumask_empty(mask));
  free_cpumask_var(mask);
}
