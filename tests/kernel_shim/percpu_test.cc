// SPDX-License-Identifier: GPL-2.0-only
// percpu.h: static and dynamic per-CPU data and the this_cpu operations on
// the virtual CPU model.
#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/percpu.h>
#include <uk/linux/preempt.h>
#include <uk/linux/smp.h>
#include <uk/shim/cpu.h>
#include <uk/shim/rseq.h>

#include "testmain.h"

DEFINE_PER_CPU(long, pcp_static_counter);
DEFINE_PER_CPU_ALIGNED(int, pcp_aligned);

namespace {

struct Stats {
  long a;
  int b;
  char c[20];
};

class PercpuTest : public ::testing::Test {
 protected:
  void SetUp() override { baseline_ = uk::percpu_bytes_in_use(); }
  void TearDown() override {
    uk::pin_thread_to_cpu(-1);
    EXPECT_EQ(uk::percpu_bytes_in_use(), baseline_) << "percpu memory leaked";
  }
  size_t baseline_ = 0;
};

// Restores nr_cpu_ids when a test that shrinks it ends, even on failure.
class NrCpuGuard {
 public:
  explicit NrCpuGuard(unsigned int n) : saved_(nr_cpu_ids) {
    uk::set_nr_cpu_ids(n);
  }
  ~NrCpuGuard() { uk::set_nr_cpu_ids(saved_); }

 private:
  unsigned int saved_;
};

TEST_F(PercpuTest, DefinePerCpuHasOneCopyPerCpu) {
  int cpu;
  for_each_possible_cpu(cpu) EXPECT_EQ(per_cpu(pcp_static_counter, cpu), 0)
      << cpu;
  for_each_possible_cpu(cpu) per_cpu(pcp_static_counter, cpu) = 100 + cpu;
  for_each_possible_cpu(cpu)
      EXPECT_EQ(per_cpu(pcp_static_counter, cpu), 100 + cpu);
  EXPECT_NE(&per_cpu(pcp_static_counter, 0), &per_cpu(pcp_static_counter, 1));
  uk::pin_thread_to_cpu(1 % nr_cpu_ids);
  EXPECT_EQ(this_cpu_read(pcp_static_counter), 100 + (long)(1 % nr_cpu_ids));
  EXPECT_EQ(this_cpu_ptr(&pcp_static_counter),
            &per_cpu(pcp_static_counter, 1 % nr_cpu_ids));
  for_each_possible_cpu(cpu) per_cpu(pcp_static_counter, cpu) = 0;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&pcp_aligned) % SMP_CACHE_BYTES, 0u);
}

TEST_F(PercpuTest, AllocZeroedOnEveryCpuAndUnitsApart) {
  Stats *s = alloc_percpu(Stats);
  ASSERT_NE(s, nullptr);
  long *l = alloc_percpu(long);
  ASSERT_NE(l, nullptr);
  int cpu;
  for_each_possible_cpu(cpu) {
    Stats *p = per_cpu_ptr(s, cpu);
    EXPECT_EQ(p->a, 0);
    EXPECT_EQ(p->b, 0);
    for (char ch : p->c) EXPECT_EQ(ch, 0);
    EXPECT_EQ(*per_cpu_ptr(l, cpu), 0);
    if (cpu > 0) {
      EXPECT_EQ(reinterpret_cast<char *>(p) -
                    reinterpret_cast<char *>(per_cpu_ptr(s, cpu - 1)),
                1L << PERCPU_UNIT_SHIFT);
    }
  }
  // Two allocations do not overlap on any CPU.
  char *sb = reinterpret_cast<char *>(s), *lb = reinterpret_cast<char *>(l);
  EXPECT_TRUE(lb >= sb + sizeof(Stats) || lb + sizeof(long) <= sb);
  // Writes to one CPU's copy stay there.
  per_cpu_ptr(s, 0)->a = 5;
  EXPECT_EQ(per_cpu_ptr(s, 1)->a, 0);
  free_percpu(s);
  free_percpu(l);
  free_percpu(nullptr);  // allowed
}

TEST_F(PercpuTest, AlignmentIsHonoured) {
  void *p = __alloc_percpu(24, 64);
  void *q = __alloc_percpu_gfp(8, 128, GFP_KERNEL);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 128, 0u);
  free_percpu(p);
  free_percpu(q);
}

TEST_F(PercpuTest, FreeThenReallocIsZeroed) {
  for (int round = 0; round < 3; round++) {
    Stats *s = alloc_percpu(Stats);
    ASSERT_NE(s, nullptr);
    int cpu;
    for_each_possible_cpu(cpu) {
      Stats *p = per_cpu_ptr(s, cpu);
      ASSERT_EQ(p->a, 0);
      ASSERT_EQ(p->c[19], 0);
      p->a = -1;
      p->b = cpu + 1;
      memset(p->c, 0x77, sizeof(p->c));
    }
    free_percpu(s);
  }
}

TEST_F(PercpuTest, ThisCpuOperations) {
  uk::pin_thread_to_cpu(0);
  long *v = alloc_percpu(long);
  ASSERT_NE(v, nullptr);
  this_cpu_write(*v, 10);
  EXPECT_EQ(this_cpu_read(*v), 10);
  this_cpu_inc(*v);
  this_cpu_add(*v, 5);
  this_cpu_sub(*v, 2);
  this_cpu_dec(*v);
  EXPECT_EQ(this_cpu_read(*v), 13);
  EXPECT_EQ(this_cpu_add_return(*v, 7), 20);
  EXPECT_EQ(this_cpu_inc_return(*v), 21);
  EXPECT_EQ(this_cpu_dec_return(*v), 20);
  EXPECT_EQ(this_cpu_sub_return(*v, 10), 10);
  EXPECT_EQ(this_cpu_xchg(*v, 99), 10);
  EXPECT_EQ(this_cpu_cmpxchg(*v, 99, 100), 99);   // success: old value
  EXPECT_EQ(this_cpu_cmpxchg(*v, 99, 101), 100);  // failure: current value
  long old = 1;
  EXPECT_FALSE(this_cpu_try_cmpxchg(*v, &old, 5));
  EXPECT_EQ(old, 100);
  EXPECT_TRUE(this_cpu_try_cmpxchg(*v, &old, 5));
  this_cpu_or(*v, 0x30);
  this_cpu_and(*v, 0x34);
  EXPECT_EQ(this_cpu_read(*v), 0x34);
  __this_cpu_write(*v, 1);
  __this_cpu_inc(*v);
  __this_cpu_add(*v, 3);
  raw_cpu_inc(*v);
  EXPECT_EQ(__this_cpu_read(*v), 6);
  EXPECT_EQ(raw_cpu_read(*v), 6);
  // All of it landed on CPU 0's copy only.
  EXPECT_EQ(*per_cpu_ptr(v, 0), 6);
  int cpu;
  for_each_possible_cpu(cpu) {
    if (cpu != 0) {
      EXPECT_EQ(*per_cpu_ptr(v, cpu), 0) << cpu;
    }
  }
  // The static-variable forms.
  this_cpu_add(pcp_static_counter, 3);
  EXPECT_EQ(per_cpu(pcp_static_counter, 0), 3);
  this_cpu_write(pcp_static_counter, 0);
  // get_cpu_ptr / get_cpu_var hold the CPU.
  long *mine = get_cpu_ptr(v);
  EXPECT_EQ(mine, per_cpu_ptr(v, 0));
  EXPECT_EQ(preempt_count(), 1);
  put_cpu_ptr(v);
  get_cpu_var(pcp_static_counter) += 2;
  put_cpu_var(pcp_static_counter);
  EXPECT_EQ(per_cpu(pcp_static_counter, 0), 2);
  per_cpu(pcp_static_counter, 0) = 0;
  EXPECT_EQ(preempt_count(), 0);
  free_percpu(v);
}

TEST_F(PercpuTest, MoreThreadsThanCpusSumIsExact) {
  NrCpuGuard cpus(2);
  ASSERT_EQ(nr_cpu_ids, 2u);
  const unsigned threads = 2 * uk::testing::StressThreads() + 1;
  const int per_thread = 20000;
  long *ctr = alloc_percpu(long);
  ASSERT_NE(ctr, nullptr);
  std::vector<std::thread> ts;
  std::atomic<int> bad_cpu{0};
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; i++) {
        this_cpu_inc(*ctr);
        if (i % 1000 == 0) {
          int c = smp_processor_id();
          if (c < 0 || c >= 2) bad_cpu++;
        }
      }
    });
  }
  for (auto &t : ts) t.join();
  long sum = 0;
  int cpu;
  for_each_possible_cpu(cpu) sum += *per_cpu_ptr(ctr, cpu);
  EXPECT_EQ(sum, static_cast<long>(threads) * per_thread);
  EXPECT_EQ(bad_cpu.load(), 0);
  // Nothing landed beyond the possible CPUs.
  for (int c = 2; c < NR_CPUS; c++) ASSERT_EQ(*per_cpu_ptr(ctr, c), 0) << c;
  free_percpu(ctr);
}

TEST_F(PercpuTest, UpdatesLandOnTheCpuTheThreadWasOn) {
  NrCpuGuard cpus(2);
  long *ctr = alloc_percpu(long);
  ASSERT_NE(ctr, nullptr);
  std::thread t([&] {
    uk::pin_thread_to_cpu(0);
    for (int i = 0; i < 3; i++) this_cpu_inc(*ctr);
    uk::pin_thread_to_cpu(1);
    this_cpu_add(*ctr, 10);
    uk::pin_thread_to_cpu(-1);
    this_cpu_add(*ctr, 100);
  });
  t.join();
  EXPECT_EQ(*per_cpu_ptr(ctr, 0) % 100, 3);
  EXPECT_EQ(*per_cpu_ptr(ctr, 1) % 100, 10);
  EXPECT_EQ(*per_cpu_ptr(ctr, 0) + *per_cpu_ptr(ctr, 1), 113);
  free_percpu(ctr);
}

TEST_F(PercpuTest, PreemptDisabledMultiStepUpdatesAreExclusive) {
  // Several threads pinned to CPU 0 each do a read-modify-write of the CPU's
  // copy in separate steps (read, yield, write) inside get_cpu()/put_cpu().
  // Without exclusive ownership of the CPU, increments would be lost.
  NrCpuGuard cpus(2);
  const unsigned threads = uk::testing::StressThreads() + 1;
  const int per_thread = 2000;
  long *ctr = alloc_percpu(long);
  long *plain = alloc_percpu(long);
  ASSERT_NE(ctr, nullptr);
  std::atomic<int> wrong_cpu{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      uk::pin_thread_to_cpu(0);
      for (int i = 0; i < per_thread; i++) {
        if (get_cpu() != 0) wrong_cpu++;
        long v = __this_cpu_read(*ctr);
        if (i % 64 == t % 64) sched_yield();  // widen the window now and then
        __this_cpu_write(*ctr, v + 1);
        put_cpu();
        preempt_disable();
        // A plain (non-atomic) access: TSan must see the ownership edges.
        (*this_cpu_ptr(plain))++;
        preempt_enable();
      }
      uk::pin_thread_to_cpu(-1);
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(wrong_cpu.load(), 0);
  EXPECT_EQ(*per_cpu_ptr(ctr, 0), static_cast<long>(threads) * per_thread);
  EXPECT_EQ(*per_cpu_ptr(plain, 0), static_cast<long>(threads) * per_thread);
  EXPECT_EQ(*per_cpu_ptr(ctr, 1), 0);
  free_percpu(ctr);
  free_percpu(plain);
}

// __GFP_PCPU_COUNTER memory: this_cpu_add() is a restartable sequence on the
// host CPU's copy, whatever virtual CPU the thread holds or is pinned to.
long *AllocCounter() {
  return static_cast<long *>(__alloc_percpu_gfp(
      sizeof(long), sizeof(long), GFP_KERNEL | __GFP_PCPU_COUNTER));
}

long SumOverPossibleCpus(long *ctr) {
  long sum = 0;
  int cpu;
  for_each_possible_cpu(cpu) sum += *per_cpu_ptr(ctr, cpu);
  return sum;
}

TEST_F(PercpuTest, CounterAddsLandOnTheHostCpu) {
  if (uk::rseq_counter_cpus == 0) GTEST_SKIP() << "rseq counters are off";
  if (nr_cpu_ids < 2) GTEST_SKIP() << "needs two CPUs";
  long *ctr = AllocCounter();
  long *data = alloc_percpu(long);
  ASSERT_NE(ctr, nullptr);
  ASSERT_NE(data, nullptr);
  bool pinned = false;
  std::thread t([&] {
    if (!(pinned = uk::testing::PinToHostCpu(0))) return;
    // Virtual CPU 1, held: ordinary data goes to CPU 1's copy, the counter
    // to host CPU 0's.
    uk::pin_thread_to_cpu(1);
    preempt_disable();
    this_cpu_add(*ctr, 5);
    this_cpu_add(*data, 5);
    preempt_enable();
    this_cpu_sub(*ctr, 2);
    this_cpu_inc(*ctr);
    this_cpu_dec(*ctr);
    uk::pin_thread_to_cpu(-1);
  });
  t.join();
  if (!pinned) GTEST_SKIP() << "cannot set the host CPU affinity";
  EXPECT_EQ(*per_cpu_ptr(ctr, 0), 3);
  EXPECT_EQ(*per_cpu_ptr(ctr, 1), 0);
  EXPECT_EQ(*per_cpu_ptr(data, 1), 5);
  EXPECT_EQ(*per_cpu_ptr(data, 0), 0);
  free_percpu(ctr);
  free_percpu(data);
}

// Adds from task context on any virtual CPU, with preemption off, and from
// interrupt handlers, from more threads than there are host CPUs: the
// preemptions restart sequences, and no update is lost.
void HammerCounter(long *ctr, long *expected) {
  const unsigned threads = 2 * uk::testing::StressThreads() + 1;
  const int per_thread = 200000;
  std::vector<std::thread> ts;
  std::atomic<long> total{0};
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      long mine = 0;
      for (int i = 0; i < per_thread; i++) {
        switch ((i + t) % 4) {
          case 0:
            this_cpu_inc(*ctr);
            mine += 1;
            break;
          case 1:
            preempt_disable();
            this_cpu_add(*ctr, 3);
            preempt_enable();
            mine += 3;
            break;
          case 2:
            if (i % 64 == 2) {
              uk::run_in_softirq(t % nr_cpu_ids,
                                 [&] { this_cpu_sub(*ctr, 2); });
              mine -= 2;
            } else {
              this_cpu_add(*ctr, 7);
              mine += 7;
            }
            break;
          default:
            this_cpu_dec(*ctr);
            mine -= 1;
        }
      }
      total += mine;
    });
  }
  for (auto &t : ts) t.join();
  *expected = total.load();
}

TEST_F(PercpuTest, CounterSumIsExactUnderPreemptionAndInterrupts) {
  long *ctr = AllocCounter();
  ASSERT_NE(ctr, nullptr);
  long expected = 0;
  HammerCounter(ctr, &expected);
  EXPECT_EQ(SumOverPossibleCpus(ctr), expected);
  for (int c = nr_cpu_ids; c < NR_CPUS; c++)
    ASSERT_EQ(*per_cpu_ptr(ctr, c), 0) << c;
  free_percpu(ctr);
}

TEST_F(PercpuTest, CounterAddsAreAtomicWhenHostCpusOutnumberPossibleOnes) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one host CPU";
  long *ctr = AllocCounter();
  ASSERT_NE(ctr, nullptr);
  long expected = 0;
  {
    NrCpuGuard cpus(1);
    // A copy per host CPU would escape a sum over one possible CPU.
    EXPECT_EQ(uk::rseq_counter_cpus, 0u);
    HammerCounter(ctr, &expected);
    EXPECT_EQ(*per_cpu_ptr(ctr, 0), expected);
  }
  EXPECT_EQ(SumOverPossibleCpus(ctr), expected);
  free_percpu(ctr);
}

TEST_F(PercpuTest, BytesInUseTracksAllocations) {
  size_t before = uk::percpu_bytes_in_use();
  std::vector<void *> ps;
  for (int i = 0; i < 50; i++) {
    ps.push_back(__alloc_percpu(8 + i * 40, 8));
    ASSERT_NE(ps.back(), nullptr);
  }
  EXPECT_GT(uk::percpu_bytes_in_use(), before + 50 * 8);
  for (void *p : ps) free_percpu(p);
  EXPECT_EQ(uk::percpu_bytes_in_use(), before);
}

TEST_F(PercpuTest, CountersHaveTheirOwnArena) {
  long *ctr = AllocCounter();
  long *data = alloc_percpu(long);
  ASSERT_NE(ctr, nullptr);
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(reinterpret_cast<uintptr_t>(ctr) & PERCPU_COUNTER_BIT);
  EXPECT_FALSE(reinterpret_cast<uintptr_t>(data) & PERCPU_COUNTER_BIT);
  EXPECT_GE(uk::percpu_bytes_in_use(), baseline_ + 16);
  free_percpu(ctr);
  free_percpu(data);
}

}  // namespace
