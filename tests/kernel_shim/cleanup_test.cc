// SPDX-License-Identifier: GPL-2.0-only
// cleanup.h: guard(), scoped_guard(), the lock guards of spinlock.h,
// mutex.h, rcupdate.h, preempt.h and irqflags.h, and __free(kfree).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <uk/linux/cleanup.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/mutex.h>
#include <uk/linux/preempt.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>

#include "testmain.h"

namespace {

// A lock that only records what happens to it, in one log for all of them.
std::vector<std::string> g_log;

struct toy_lock {
  const char *name;
  bool held;
};

void toy_acquire(struct toy_lock *l) {
  l->held = true;
  g_log.push_back(std::string("lock ") + l->name);
}

void toy_release(struct toy_lock *l) {
  l->held = false;
  g_log.push_back(std::string("unlock ") + l->name);
}

DEFINE_LOCK_GUARD_1(toy, struct toy_lock, toy_acquire(_T->lock),
                    toy_release(_T->lock))

// A guard over a pointer value, as mutex.h's.
DEFINE_GUARD(toy_ptr, struct toy_lock *, toy_acquire(_T), toy_release(_T))

// A class whose value is an int; its exit logs the value.
DEFINE_CLASS(toy_value, int, g_log.push_back("exit " + std::to_string(_T)),
             n * 10, int n)

class CleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    kmalloc_base_ = uk::kmalloc_nr_allocated();
  }
  void TearDown() override {
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_)
        << "kmalloc objects leaked";
  }
  long kmalloc_base_ = 0;
};

TEST_F(CleanupTest, GuardHoldsTheLockToTheEndOfTheScope) {
  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  {
    guard(spinlock)(&lock);
    EXPECT_TRUE(spin_is_locked(&lock));
    EXPECT_EQ(preempt_count(), 1);
    EXPECT_FALSE(irqs_disabled());
  }
  EXPECT_FALSE(spin_is_locked(&lock));
  EXPECT_EQ(preempt_count(), 0);

  raw_spinlock_t raw;
  raw_spin_lock_init(&raw);
  {
    guard(raw_spinlock)(&raw);
    EXPECT_TRUE(raw_spin_is_locked(&raw));
  }
  EXPECT_FALSE(raw_spin_is_locked(&raw));

  struct mutex m;
  mutex_init(&m);
  {
    guard(mutex)(&m);
    EXPECT_TRUE(mutex_is_locked(&m));
  }
  EXPECT_FALSE(mutex_is_locked(&m));
}

// Returns from inside the guarded region on both paths.
int LookUnderLock(spinlock_t *lock, int key, bool *held_inside) {
  guard(spinlock_irqsave)(lock);
  *held_inside = spin_is_locked(lock) && irqs_disabled();
  if (key < 0) return -1;
  return key * 2;
}

TEST_F(CleanupTest, ReturnReleasesTheLock) {
  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  bool held = false;
  EXPECT_EQ(LookUnderLock(&lock, -5, &held), -1);
  EXPECT_TRUE(held);
  EXPECT_FALSE(spin_is_locked(&lock)) << "early return kept the lock";
  EXPECT_FALSE(irqs_disabled()) << "early return kept interrupts off";
  EXPECT_EQ(preempt_count(), 0);
  held = false;
  EXPECT_EQ(LookUnderLock(&lock, 4, &held), 8);
  EXPECT_TRUE(held);
  EXPECT_FALSE(spin_is_locked(&lock));
  EXPECT_FALSE(irqs_disabled());
}

TEST_F(CleanupTest, GuardsReleaseInReverseOrder) {
  struct toy_lock a = {"a", false}, b = {"b", false}, c = {"c", false};
  {
    guard(toy)(&a);
    guard(toy)(&b);
    {
      guard(toy_ptr)(&c);
      EXPECT_TRUE(a.held && b.held && c.held);
    }
    EXPECT_FALSE(c.held);
    EXPECT_TRUE(a.held && b.held);
  }
  EXPECT_FALSE(a.held || b.held || c.held);
  EXPECT_EQ(g_log,
            (std::vector<std::string>{"lock a", "lock b", "lock c", "unlock c",
                                      "unlock b", "unlock a"}));
}

TEST_F(CleanupTest, NestedSpinlockGuardsUnwindTheirState) {
  DEFINE_SPINLOCK(outer);
  DEFINE_SPINLOCK(inner);
  spin_lock_init(&outer);
  spin_lock_init(&inner);
  {
    guard(spinlock_irqsave)(&outer);
    {
      guard(spinlock)(&inner);
      EXPECT_EQ(preempt_count(), 2);
    }
    EXPECT_FALSE(spin_is_locked(&inner));
    EXPECT_TRUE(spin_is_locked(&outer));
    EXPECT_EQ(preempt_count(), 1);
    EXPECT_TRUE(irqs_disabled());
  }
  EXPECT_FALSE(spin_is_locked(&outer));
  EXPECT_EQ(preempt_count(), 0);
  EXPECT_FALSE(irqs_disabled());
}

TEST_F(CleanupTest, ScopedGuardRunsItsBodyOnceUnderTheLock) {
  struct toy_lock a = {"a", false};
  int runs = 0;
  scoped_guard(toy, &a) {
    runs++;
    EXPECT_TRUE(a.held);
  }
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(a.held);
  EXPECT_EQ(g_log, (std::vector<std::string>{"lock a", "unlock a"}));

  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  runs = 0;
  scoped_guard(spinlock_irq, &lock) {
    runs++;
    EXPECT_TRUE(spin_is_locked(&lock));
    EXPECT_TRUE(irqs_disabled());
  }
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(spin_is_locked(&lock));
  EXPECT_FALSE(irqs_disabled());
}

TEST_F(CleanupTest, BreakAndContinueLeaveTheScopedGuard) {
  struct toy_lock a = {"a", false};
  int after = 0;
  for (int i = 0; i < 3; i++) {
    scoped_guard(toy, &a) {
      if (i == 1) break;  // leaves the scoped_guard, not the loop
      if (i == 2) continue;
      after++;
    }
    EXPECT_FALSE(a.held) << i;
  }
  EXPECT_EQ(after, 1);
  EXPECT_EQ(g_log.size(), 6u);
  EXPECT_EQ(g_log.back(), "unlock a");
}

// Returns from inside a scoped_guard.
int FirstUnderLock(spinlock_t *lock, const int *v, int n) {
  scoped_guard(spinlock, lock) {
    for (int i = 0; i < n; i++)
      if (v[i] > 0) return v[i];
  }
  return 0;
}

TEST_F(CleanupTest, ReturnInsideScopedGuardReleasesTheLock) {
  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  const int v[] = {0, 0, 7, 9};
  EXPECT_EQ(FirstUnderLock(&lock, v, 4), 7);
  EXPECT_FALSE(spin_is_locked(&lock));
  EXPECT_EQ(preempt_count(), 0);
  EXPECT_EQ(FirstUnderLock(&lock, v, 2), 0);
  EXPECT_FALSE(spin_is_locked(&lock));
}

TEST_F(CleanupTest, TrylockGuardsSkipTheBodyWhenTheLockIsTaken) {
  struct mutex m;
  mutex_init(&m);
  int runs = 0;
  mutex_lock(&m);
  scoped_guard(mutex_try, &m) runs++;
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(mutex_is_locked(&m));
  mutex_unlock(&m);
  scoped_guard(mutex_try, &m) {
    runs++;
    EXPECT_TRUE(mutex_is_locked(&m));
  }
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(mutex_is_locked(&m));

  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  bool failed = false;
  spin_lock(&lock);
  scoped_cond_guard(spinlock_try, failed = true, &lock) runs++;
  spin_unlock(&lock);
  EXPECT_TRUE(failed);
  EXPECT_EQ(runs, 1);
  scoped_cond_guard(mutex_intr, failed = false, &m) {
    runs++;
    EXPECT_TRUE(mutex_is_locked(&m));
  }
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(mutex_is_locked(&m));
}

TEST_F(CleanupTest, IrqsaveGuardsRestoreTheIrqState) {
  // From interrupts on: off inside, on again after.
  {
    guard(irqsave)();
    EXPECT_TRUE(irqs_disabled());
  }
  EXPECT_FALSE(irqs_disabled());

  // From interrupts off: they stay off after, as local_irq_restore() does.
  DEFINE_SPINLOCK(lock);
  spin_lock_init(&lock);
  raw_spinlock_t raw;
  raw_spin_lock_init(&raw);
  local_irq_disable();
  {
    guard(irqsave)();
    EXPECT_TRUE(irqs_disabled());
  }
  EXPECT_TRUE(irqs_disabled()) << "irqsave turned interrupts back on";
  {
    guard(spinlock_irqsave)(&lock);
    EXPECT_TRUE(spin_is_locked(&lock));
  }
  EXPECT_TRUE(irqs_disabled()) << "spinlock_irqsave turned interrupts on";
  EXPECT_FALSE(spin_is_locked(&lock));
  scoped_guard(raw_spinlock_irqsave, &raw) {
    EXPECT_TRUE(raw_spin_is_locked(&raw));
  }
  EXPECT_TRUE(irqs_disabled()) << "raw_spinlock_irqsave turned interrupts on";
  EXPECT_FALSE(raw_spin_is_locked(&raw));
  local_irq_enable();
  EXPECT_FALSE(irqs_disabled());

  // guard(irq) does not save: it turns interrupts on at the end.
  {
    guard(irq)();
    EXPECT_TRUE(irqs_disabled());
  }
  EXPECT_FALSE(irqs_disabled());
}

TEST_F(CleanupTest, RcuAndPreemptGuards) {
  EXPECT_FALSE(rcu_read_lock_held());
  {
    guard(rcu)();
    EXPECT_TRUE(rcu_read_lock_held());
    {
      guard(preempt)();
      EXPECT_EQ(preempt_count(), 1);
      EXPECT_TRUE(in_atomic());
    }
    EXPECT_EQ(preempt_count(), 0);
    EXPECT_TRUE(rcu_read_lock_held());
  }
  EXPECT_FALSE(rcu_read_lock_held());
}

TEST_F(CleanupTest, ClassValueAndExit) {
  {
    CLASS(toy_value, v)(4);
    int &value = v;
    EXPECT_EQ(value, 40);
    value = 41;
    EXPECT_TRUE(g_log.empty());
  }
  EXPECT_EQ(g_log, (std::vector<std::string>{"exit 41"}));
  int runs = 0;
  scoped_class(toy_value, w, 2) {
    runs++;
    EXPECT_EQ(static_cast<int &>(w), 20);
  }
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(g_log.back(), "exit 20");
}

TEST_F(CleanupTest, FreeKfreeFreesAtTheEndOfTheScope) {
  {
    int *p __free(kfree) = kmalloc(sizeof(*p), GFP_KERNEL);
    ASSERT_NE(p, nullptr);
    *p = 1;
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 1);
    char *q __free(kfree) = kzalloc(64, GFP_KERNEL);
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 2);
    // NULL and error pointers are left alone.
    void *none __free(kfree) = NULL;
    void *err __free(kfree) = ERR_PTR(-ENOMEM);
    (void)q;
    (void)none;
    (void)err;
  }
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_);
}

// The kernel's allocate-then-hand-over shape: freed on the error path only.
int *MakeBuffer(bool fail) {
  int *p __free(kfree) = kmalloc(4 * sizeof(*p), GFP_KERNEL);
  if (!p) return NULL;
  p[0] = 42;
  if (fail) return NULL;
  return_ptr(p);
}

TEST_F(CleanupTest, NoFreePtrHandsOwnershipOut) {
  EXPECT_EQ(MakeBuffer(true), nullptr);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_) << "error path leaked";

  int *buf = MakeBuffer(false);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(buf[0], 42);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 1)
      << "return_ptr() freed what it handed out";
  kfree(buf);

  int *out;
  {
    int *p __free(kfree) = kmalloc(sizeof(*p), GFP_KERNEL);
    ASSERT_NE(p, nullptr);
    out = no_free_ptr(p);
    EXPECT_EQ(p, nullptr);
  }
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 1);
  kfree(out);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_);
}

}  // namespace
