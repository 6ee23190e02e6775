// SPDX-License-Identifier: GPL-2.0-only
// spinlock.h, rwlock_t, lockdep.h and mutex.h.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <uk/linux/kernel.h>
#include <uk/linux/lockdep.h>
#include <uk/linux/mutex.h>
#include <uk/linux/smp.h>
#include <uk/linux/spinlock.h>

#include "testmain.h"

namespace {

using uk::testing::WaitFor;

long Warns() { return __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED); }

class LocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_nr_ = nr_cpu_ids;
    if (nr_cpu_ids < 2) uk::set_nr_cpu_ids(2);
  }
  void TearDown() override {
    uk::pin_thread_to_cpu(-1);
    uk::set_nr_cpu_ids(saved_nr_);
  }
  unsigned int saved_nr_ = 1;
};

TEST_F(LocksTest, SpinLockMutualExclusion) {
  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  const unsigned threads = uk::testing::StressThreads();
  const int per_thread = 20000;
  long counter = 0;
  long shadow = 0;
  std::atomic<int> torn{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; i++) {
        spin_lock(&lock);
        if (counter != shadow) torn++;
        counter++;  // plain accesses: the lock is the only protection
        shadow = counter;
        spin_unlock(&lock);
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(counter, static_cast<long>(threads) * per_thread);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_FALSE(spin_is_locked(&lock));
}

TEST_F(LocksTest, SpinLockDisablesPreemption) {
  DEFINE_SPINLOCK(lock);
  EXPECT_EQ(preempt_count(), 0);
  spin_lock(&lock);
  EXPECT_EQ(preempt_count(), 1);
  EXPECT_TRUE(in_atomic());
  EXPECT_TRUE(spin_is_locked(&lock));
  int cpu = smp_processor_id();
  EXPECT_EQ(smp_processor_id(), cpu);
  spin_unlock(&lock);
  EXPECT_EQ(preempt_count(), 0);
  EXPECT_FALSE(spin_is_locked(&lock));
}

TEST_F(LocksTest, SpinTrylock) {
  DEFINE_SPINLOCK(lock);
  ASSERT_TRUE(spin_trylock(&lock));
  EXPECT_EQ(preempt_count(), 1);
  std::atomic<int> other{-1};
  std::thread t([&] {
    other = spin_trylock(&lock);
    EXPECT_EQ(preempt_count(), 0);  // failed trylock leaves preemption on
  });
  t.join();
  EXPECT_EQ(other.load(), 0);
  spin_unlock(&lock);
  std::thread t2([&] {
    other = spin_trylock(&lock);
    if (other.load()) spin_unlock(&lock);
  });
  t2.join();
  EXPECT_EQ(other.load(), 1);
  unsigned long flags;
  ASSERT_TRUE(spin_trylock_irqsave(&lock, flags));
  EXPECT_TRUE(irqs_disabled());
  spin_unlock_irqrestore(&lock, flags);
  EXPECT_FALSE(irqs_disabled());
  ASSERT_TRUE(spin_trylock_bh(&lock));
  EXPECT_TRUE(in_softirq());
  spin_unlock_bh(&lock);
  EXPECT_FALSE(in_softirq());
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(LocksTest, SpinLockIrqForms) {
  DEFINE_SPINLOCK(a);
  DEFINE_SPINLOCK(b);
  spin_lock_irq(&a);
  EXPECT_TRUE(irqs_disabled());
  EXPECT_GT(preempt_count(), 0);
  spin_unlock_irq(&a);
  EXPECT_FALSE(irqs_disabled());
  EXPECT_EQ(preempt_count(), 0);

  unsigned long f1, f2;
  spin_lock_irqsave(&a, f1);
  EXPECT_TRUE(irqs_disabled());
  EXPECT_FALSE(irqs_disabled_flags(f1));
  spin_lock_irqsave(&b, f2);  // nested: flags say "were off"
  EXPECT_TRUE(irqs_disabled_flags(f2));
  spin_unlock_irqrestore(&b, f2);
  EXPECT_TRUE(irqs_disabled());  // still off: the outer section
  spin_unlock_irqrestore(&a, f1);
  EXPECT_FALSE(irqs_disabled());
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(LocksTest, SpinLockIrqKeepsThisCpusInterruptsOut) {
  // An interrupt raised for our CPU while we hold a spin_lock_irqsave lock
  // runs only after the unlock, and in hardirq context.
  uk::pin_thread_to_cpu(0);
  DEFINE_SPINLOCK(lock);
  std::vector<int> order;
  unsigned long flags;
  spin_lock_irqsave(&lock, flags);
  order.push_back(1);
  uk::run_in_hardirq(0, [&] {
    EXPECT_TRUE(in_irq());
    order.push_back(3);
  });
  order.push_back(2);
  spin_unlock_irqrestore(&lock, flags);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(LocksTest, SpinLockBh) {
  DEFINE_SPINLOCK(lock);
  EXPECT_FALSE(in_softirq());
  spin_lock_bh(&lock);
  EXPECT_TRUE(in_softirq());
  EXPECT_FALSE(in_serving_softirq());
  EXPECT_TRUE(in_interrupt());
  spin_unlock_bh(&lock);
  EXPECT_FALSE(in_softirq());
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(LocksTest, LockdepAssertHeld) {
  DEFINE_SPINLOCK(lock);
  struct mutex m;
  mutex_init(&m);
  long before = Warns();
  spin_lock(&lock);
  lockdep_assert_held(&lock);
  EXPECT_TRUE(lockdep_is_held(&lock));
  // Another thread does not hold it, although it is locked.
  std::atomic<bool> held_elsewhere{true};
  std::thread t([&] { held_elsewhere = lockdep_is_held(&lock); });
  t.join();
  EXPECT_FALSE(held_elsewhere.load());
  spin_unlock(&lock);
  mutex_lock(&m);
  lockdep_assert_held(&m);
  mutex_unlock(&m);
  EXPECT_EQ(Warns(), before);

  uk::testing::AllowWarnings();
  lockdep_assert_held(&lock);  // not held: one WARN
  EXPECT_EQ(Warns(), before + 1);
  lockdep_assert_held(&m);
  EXPECT_EQ(Warns(), before + 2);
  lockdep_assert_not_held(&lock);
  EXPECT_EQ(Warns(), before + 2);
}

TEST_F(LocksTest, RawSpinlock) {
  DEFINE_RAW_SPINLOCK(lock);
  raw_spin_lock_init(&lock);
  raw_spin_lock(&lock);
  EXPECT_TRUE(raw_spin_is_locked(&lock));
  EXPECT_TRUE(lockdep_is_held(&lock));
  raw_spin_unlock(&lock);
  EXPECT_FALSE(raw_spin_is_locked(&lock));
  EXPECT_TRUE(raw_spin_trylock(&lock));
  EXPECT_FALSE(raw_spin_trylock(&lock));  // not recursive
  EXPECT_EQ(preempt_count(), 1);
  raw_spin_unlock(&lock);
  unsigned long flags;
  raw_spin_lock_irqsave(&lock, flags);
  EXPECT_TRUE(irqs_disabled());
  raw_spin_unlock_irqrestore(&lock, flags);
  raw_spin_lock_irq(&lock);
  EXPECT_TRUE(irqs_disabled());
  raw_spin_unlock_irq(&lock);
  raw_spin_lock_bh(&lock);
  EXPECT_TRUE(in_softirq());
  raw_spin_unlock_bh(&lock);
  EXPECT_EQ(preempt_count(), 0);
  EXPECT_FALSE(irqs_disabled());

  // Stress on the raw lock too.
  const unsigned threads = uk::testing::StressThreads();
  long counter = 0;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; i++) {
        raw_spin_lock(&lock);
        counter++;
        raw_spin_unlock(&lock);
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(counter, 10000L * threads);
}

TEST_F(LocksTest, RwlockReadersRunConcurrently) {
  // Two readers, on different CPUs, each wait inside the read section until
  // the other is inside too. If readers excluded each other, the second
  // could never enter and the first would time out.
  DEFINE_RWLOCK(rw);
  rwlock_init(&rw);
  std::atomic<int> inside{0};
  std::atomic<int> met{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; r++) {
    ts.emplace_back([&, r] {
      uk::pin_thread_to_cpu(r);
      read_lock(&rw);
      inside++;
      if (WaitFor([&] { return inside.load() == 2; })) met++;
      read_unlock(&rw);
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(met.load(), 2) << "readers excluded each other";
  // And a trylock for write fails while a reader is in.
  read_lock(&rw);
  std::atomic<int> w{-1};
  std::thread t([&] {
    w = write_trylock(&rw);
    if (w.load()) write_unlock(&rw);
  });
  t.join();
  EXPECT_EQ(w.load(), 0);
  EXPECT_TRUE(read_trylock(&rw));  // a second read hold is fine
  read_unlock(&rw);
  read_unlock(&rw);
  EXPECT_TRUE(write_trylock(&rw));
  EXPECT_FALSE(read_trylock(&rw));
  write_unlock(&rw);
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(LocksTest, RwlockWriterExclusion) {
  DEFINE_RWLOCK(rw);
  const unsigned threads = uk::testing::StressThreads();
  const int per_thread = 5000;
  long a = 0, b = 0;  // invariant: a == b outside the write section
  std::atomic<int> torn{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    bool writer = (t % 2) == 0;
    ts.emplace_back([&, writer] {
      for (int i = 0; i < per_thread; i++) {
        if (writer) {
          write_lock(&rw);
          a++;
          b = a;
          write_unlock(&rw);
        } else {
          read_lock(&rw);
          if (a != b) torn++;
          read_unlock(&rw);
        }
      }
    });
  }
  for (auto &t : ts) t.join();
  unsigned writers = (threads + 1) / 2;
  EXPECT_EQ(a, static_cast<long>(writers) * per_thread);
  EXPECT_EQ(torn.load(), 0);
}

TEST_F(LocksTest, RwlockIrqAndBhForms) {
  DEFINE_RWLOCK(rw);
  unsigned long flags;
  read_lock_irqsave(&rw, flags);
  EXPECT_TRUE(irqs_disabled());
  read_unlock_irqrestore(&rw, flags);
  EXPECT_FALSE(irqs_disabled());
  write_lock_irqsave(&rw, flags);
  EXPECT_TRUE(irqs_disabled());
  EXPECT_GT(preempt_count(), 0);
  write_unlock_irqrestore(&rw, flags);
  EXPECT_FALSE(irqs_disabled());
  read_lock_irq(&rw);
  EXPECT_TRUE(irqs_disabled());
  read_unlock_irq(&rw);
  write_lock_irq(&rw);
  EXPECT_TRUE(irqs_disabled());
  write_unlock_irq(&rw);
  read_lock_bh(&rw);
  EXPECT_TRUE(in_softirq());
  read_unlock_bh(&rw);
  write_lock_bh(&rw);
  EXPECT_TRUE(in_softirq());
  write_unlock_bh(&rw);
  EXPECT_FALSE(irqs_disabled());
  EXPECT_EQ(preempt_count(), 0);
}

TEST_F(LocksTest, MutexStress) {
  DEFINE_MUTEX(m);
  mutex_init(&m);
  EXPECT_FALSE(mutex_is_locked(&m));
  const unsigned threads = uk::testing::StressThreads();
  const int per_thread = 5000;
  long counter = 0;
  std::atomic<long> trylocked{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; i++) {
        if (i % 4 == 0 && mutex_trylock(&m)) {
          trylocked++;
        } else if (i % 4 == 0) {
          mutex_lock(&m);
        } else {
          mutex_lock(&m);
        }
        EXPECT_TRUE(mutex_is_locked(&m));
        counter++;
        mutex_unlock(&m);
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(counter, static_cast<long>(threads) * per_thread);
  EXPECT_FALSE(mutex_is_locked(&m));
  mutex_destroy(&m);
}

TEST_F(LocksTest, MutexTrylockAndInterruptible) {
  DEFINE_MUTEX(m);
  EXPECT_EQ(mutex_lock_interruptible(&m), 0);
  EXPECT_TRUE(mutex_is_locked(&m));
  EXPECT_TRUE(lockdep_is_held(&m));
  std::atomic<int> got{-1};
  std::thread t([&] { got = mutex_trylock(&m); });
  t.join();
  EXPECT_EQ(got.load(), 0);
  mutex_unlock(&m);
  EXPECT_EQ(mutex_trylock(&m), 1);
  mutex_unlock(&m);
  EXPECT_EQ(mutex_lock_killable(&m), 0);
  mutex_unlock(&m);

  // Contended: the interruptible form still gets the lock once released.
  mutex_lock(&m);
  std::atomic<bool> started{false};
  std::atomic<int> rc{-1};
  long shared = 0;
  std::thread w([&] {
    started = true;
    rc = mutex_lock_interruptible(&m);
    shared++;
    mutex_unlock(&m);
  });
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  shared++;
  mutex_unlock(&m);
  w.join();
  EXPECT_EQ(rc.load(), 0);
  EXPECT_EQ(shared, 2);
  EXPECT_FALSE(mutex_is_locked(&m));
}

TEST_F(LocksTest, MightSleepUnderSpinLockWarns) {
  DEFINE_SPINLOCK(lock);
  long before = Warns();
  might_sleep();  // fine in task context
  EXPECT_EQ(Warns(), before);
  uk::testing::AllowWarnings();
  spin_lock(&lock);
  might_sleep();
  spin_unlock(&lock);
  EXPECT_EQ(Warns(), before + 1);
  unsigned long flags;
  local_irq_save(flags);
  might_sleep();
  local_irq_restore(flags);
  EXPECT_EQ(Warns(), before + 2);
}

}  // namespace
