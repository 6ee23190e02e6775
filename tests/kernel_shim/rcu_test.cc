// SPDX-License-Identifier: GPL-2.0-only
// RCU: read-side sections, grace periods, call_rcu/kfree_rcu/rcu_barrier,
// the polled API and the reader registry.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/kernel.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>

#include "testmain.h"

extern char **environ;

namespace {

using uk::testing::WaitFor;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kMagic = 0x5eed'cafe'f00d'1234ULL;
constexpr uint64_t kPoison = 0xdead'dead'dead'deadULL;

struct TortureObj {
  uint64_t magic;
  uint64_t seq;
  uint64_t payload[6];
  struct rcu_head rh;
};

// True once a writer sleeps in synchronize_rcu() waiting for a reader.
bool WriterSleeping() {
  return __atomic_load_n(&uk::rcu_gp_futex, __ATOMIC_RELAXED) == -1;
}

TortureObj *torture_ptr;

TortureObj *NewObj(uint64_t seq) {
  TortureObj *o =
      static_cast<TortureObj *>(kmalloc(sizeof(TortureObj), GFP_KERNEL));
  o->magic = kMagic;
  o->seq = seq;
  for (auto &p : o->payload) p = seq;
  return o;
}

void PoisonAndFree(TortureObj *o) {
  __atomic_store_n(&o->magic, kPoison, __ATOMIC_RELAXED);
  kfree(o);
}

void TortureCb(struct rcu_head *rh) {
  PoisonAndFree(container_of(rh, TortureObj, rh));
}

// rcutorture-style: readers hold objects from rcu_dereference() and check
// they are intact until the end of the section; the writer replaces the
// object and reclaims the old one by all three paths.
TEST(RcuTest, TortureReadersNeverSeeFreedObjects) {
  const unsigned nreaders = uk::testing::StressThreads();
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0}, reads{0};
  rcu_assign_pointer(torture_ptr, NewObj(0));
  long before = uk::kmalloc_nr_allocated();

  std::vector<std::thread> readers;
  for (unsigned i = 0; i < nreaders; i++) {
    readers.emplace_back([&] {
      long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        rcu_read_lock();
        TortureObj *o = rcu_dereference(torture_ptr);
        uint64_t seq = o->seq;
        for (int spin = 0; spin < 50; spin++) barrier();
        if (__atomic_load_n(&o->magic, __ATOMIC_RELAXED) != kMagic) bad++;
        for (auto &p : o->payload)
          if (p != seq) bad++;
        rcu_read_unlock();
        if (++n % 64 == 0) reads.fetch_add(64, std::memory_order_relaxed);
      }
    });
  }

  auto end = Clock::now() + milliseconds(1500);
  uint64_t seq = 1;
  // Enough updates and enough reads overlapping them, within a time budget.
  for (; (seq < 3000 || reads.load(std::memory_order_relaxed) < 20000) &&
         Clock::now() < end;
       seq++) {
    TortureObj *old = rcu_replace_pointer(torture_ptr, NewObj(seq), true);
    switch (seq % 3) {
      case 0:
        synchronize_rcu();
        PoisonAndFree(old);
        break;
      case 1:
        call_rcu(&old->rh, TortureCb);
        break;
      default:
        kfree_rcu(old, rh);
        break;
    }
  }
  stop = true;
  for (auto &t : readers) t.join();
  rcu_barrier();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_GT(seq, 10u);
  TortureObj *last = rcu_replace_pointer(torture_ptr, nullptr, true);
  synchronize_rcu();
  kfree(last);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before - 1);
}

// A reader that entered before synchronize_rcu() blocks it; one that
// enters after the grace period began does not.
TEST(RcuTest, GracePeriodWaitsForPreexistingReadersOnly) {
  std::atomic<int> r1_state{0};  // 1 inside, 2 told to leave, 3 leaving
  std::atomic<int> r2_state{0};
  std::atomic<bool> sync_done{false};
  std::atomic<bool> r1_left_before_sync_returned{false};

  std::thread r1([&] {
    rcu_read_lock();
    r1_state = 1;
    WaitFor([&] { return r1_state.load() == 2; });
    r1_state = 3;
    rcu_read_unlock();
  });
  ASSERT_TRUE(WaitFor([&] { return r1_state.load() == 1; }));
  unsigned long cookie = get_state_synchronize_rcu();

  std::thread writer([&] {
    synchronize_rcu();
    r1_left_before_sync_returned = r1_state.load() == 3;
    sync_done = true;
  });
  // The writer's grace period has begun and it sleeps waiting for r1: it
  // cannot have returned.
  ASSERT_TRUE(WaitFor([&] {
    return WriterSleeping() &&
           __atomic_load_n(&uk::rcu_gp_ctr, __ATOMIC_RELAXED) >= cookie;
  }));
  EXPECT_FALSE(sync_done.load());
  EXPECT_FALSE(poll_state_synchronize_rcu(cookie));

  // A reader that starts now is not waited for. It stays inside longer than
  // the wait for the writer below, so a writer that waits for it fails.
  std::thread r2([&] {
    rcu_read_lock();
    r2_state = 1;
    WaitFor([&] { return r2_state.load() == 2; }, std::chrono::seconds(30));
    rcu_read_unlock();
  });
  ASSERT_TRUE(WaitFor([&] { return r2_state.load() == 1; }));
  EXPECT_FALSE(sync_done.load());

  r1_state = 2;
  EXPECT_TRUE(WaitFor([&] { return sync_done.load(); }))
      << "synchronize_rcu() waited for a reader that began after it";
  EXPECT_TRUE(r1_left_before_sync_returned.load());
  EXPECT_TRUE(poll_state_synchronize_rcu(cookie));
  r2_state = 2;
  r1.join();
  r2.join();
  writer.join();
}

// Asserts that a writer waits for a thread inside enter()..leave().
void ExpectSectionHoldsOffWriter(const std::function<void()> &enter,
                                 const std::function<void()> &leave) {
  std::atomic<int> state{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    enter();
    state = 1;
    WaitFor([&] { return state.load() == 2; });
    leave();
  });
  ASSERT_TRUE(WaitFor([&] { return state.load() == 1; }));
  std::thread writer([&] {
    synchronize_rcu();
    done = true;
  });
  // The writer sleeps only once it has seen the section as a reader.
  ASSERT_TRUE(WaitFor(WriterSleeping));
  EXPECT_FALSE(done.load());
  state = 2;
  EXPECT_TRUE(WaitFor([&] { return done.load(); }));
  reader.join();
  writer.join();
}

TEST(RcuTest, NestedSectionEndsAtOutermostUnlock) {
  EXPECT_FALSE(rcu_read_lock_held());
  rcu_read_lock();
  rcu_read_lock();
  rcu_read_lock();
  EXPECT_TRUE(rcu_read_lock_held());
  rcu_read_unlock();
  rcu_read_unlock();
  EXPECT_TRUE(rcu_read_lock_held());
  rcu_read_unlock();
  EXPECT_FALSE(rcu_read_lock_held());

  // A thread that is still inside after an inner unlock holds up a writer.
  ExpectSectionHoldsOffWriter(
      [] {
        rcu_read_lock();
        rcu_read_lock();
        rcu_read_unlock();
      },
      [] { rcu_read_unlock(); });
}

// Consolidated RCU: preempt-, bh- and irq-disabled sections (and so every
// spinlock section) and interrupt handlers hold off a grace period.
TEST(RcuTest, AtomicSectionsAreReaders) {
  unsigned long flags = 0;
  spinlock_t lock;
  spin_lock_init(&lock);
  ExpectSectionHoldsOffWriter([] { preempt_disable(); },
                              [] { preempt_enable(); });
  ExpectSectionHoldsOffWriter([] { local_bh_disable(); },
                              [] { local_bh_enable(); });
  ExpectSectionHoldsOffWriter([&] { local_irq_save(flags); },
                              [&] { local_irq_restore(flags); });
  ExpectSectionHoldsOffWriter([&] { spin_lock_irqsave(&lock, flags); },
                              [&] { spin_unlock_irqrestore(&lock, flags); });
  ExpectSectionHoldsOffWriter([&] { spin_lock(&lock); },
                              [&] { spin_unlock(&lock); });
  // A hardirq handler, entered from a thread that holds no CPU.
  std::atomic<int> irq_state{0};
  std::atomic<bool> in{false};
  std::thread irq_thread;
  ExpectSectionHoldsOffWriter(
      [&] {
        irq_thread = std::thread([&] {
          uk::run_in_hardirq(0, [&] {
            in = true;
            WaitFor([&] { return irq_state.load() == 1; });
          });
        });
        WaitFor([&] { return in.load(); });
      },
      [&] {
        irq_state = 1;
        irq_thread.join();
      });
  EXPECT_FALSE(rcu_read_lock_held());
}

TEST(RcuTest, BhAndSchedFlavours) {
  rcu_read_lock_bh();
  EXPECT_TRUE(rcu_read_lock_held());
  EXPECT_TRUE(rcu_read_lock_bh_held());
  EXPECT_TRUE(in_softirq());
  rcu_read_unlock_bh();
  EXPECT_FALSE(in_softirq());

  rcu_read_lock_sched();
  EXPECT_TRUE(rcu_read_lock_sched_held());
  EXPECT_NE(preempt_count(), 0);
  rcu_read_unlock_sched();
  EXPECT_EQ(preempt_count(), 0);
  EXPECT_FALSE(rcu_read_lock_held());
}

struct CbObj {
  std::atomic<int> calls{0};
  std::atomic<bool> softirq{false};
  struct rcu_head rh;
};

void CountCb(struct rcu_head *rh) {
  CbObj *o = container_of(rh, CbObj, rh);
  o->softirq = in_serving_softirq() != 0;
  o->calls++;
}

TEST(RcuTest, CallRcuAndBarrierRunEveryCallbackOnce) {
  const unsigned nthreads = uk::testing::StressThreads();
  constexpr int kPerThread = 2000;
  std::vector<CbObj> objs(nthreads * kPerThread);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        call_rcu(&objs[t * kPerThread + i].rh, CountCb);
        if (i % 500 == 0) rcu_barrier();
      }
    });
  }
  for (auto &t : threads) t.join();
  rcu_barrier();
  long wrong = 0, not_softirq = 0;
  for (auto &o : objs) {
    if (o.calls.load() != 1) wrong++;
    if (!o.softirq.load()) not_softirq++;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(not_softirq, 0);
  // A second barrier with nothing queued returns at once.
  rcu_barrier();
}

TEST(RcuTest, CallbacksRunAfterTheGracePeriod) {
  std::atomic<int> state{0};
  CbObj obj;
  std::thread reader([&] {
    rcu_read_lock();
    state = 1;
    WaitFor([&] { return state.load() == 2; });
    state = 3;
    rcu_read_unlock();
  });
  ASSERT_TRUE(WaitFor([&] { return state.load() == 1; }));
  call_rcu(&obj.rh, CountCb);
  // The callback thread blocks on the reader.
  ASSERT_TRUE(WaitFor(WriterSleeping));
  EXPECT_EQ(obj.calls.load(), 0);
  state = 2;
  reader.join();
  rcu_barrier();
  EXPECT_EQ(obj.calls.load(), 1);
}

struct FreeMe {
  long data[4];
  struct rcu_head rh;
};

TEST(RcuTest, KfreeRcuFrees) {
  long before = uk::kmalloc_nr_allocated();
  for (int i = 0; i < 1000; i++) {
    FreeMe *p = static_cast<FreeMe *>(kzalloc(sizeof(FreeMe), GFP_KERNEL));
    ASSERT_NE(p, nullptr);
    if (i % 2)
      kfree_rcu(p, rh);
    else
      kvfree_rcu(p, rh);
  }
  FreeMe *null_ptr = nullptr;
  kfree_rcu(null_ptr, rh);  // a no-op, as in the kernel
  EXPECT_GE(uk::kmalloc_nr_allocated(), before);
  rcu_barrier();
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);

  for (int i = 0; i < 3; i++) {
    void *p = kmalloc(64, GFP_KERNEL);
    if (i % 2)
      kfree_rcu_mightsleep(p);
    else
      kvfree_rcu(p);
  }
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);
}

TEST(RcuTest, ExitingReaderThreadsUnregister) {
  rcu_read_lock();  // make sure this thread is registered
  rcu_read_unlock();
  int base = uk::rcu_nr_registered_readers();
  const unsigned nthreads = uk::testing::StressThreads() * 2;
  for (int round = 0; round < 20; round++) {
    std::vector<std::thread> threads;
    std::atomic<unsigned> inside{0};
    for (unsigned t = 0; t < nthreads; t++) {
      threads.emplace_back([&] {
        rcu_read_lock();
        inside++;
        rcu_read_unlock();
      });
    }
    for (auto &t : threads) t.join();
    ASSERT_EQ(inside.load(), nthreads);
    // Grace periods must not wait for (or touch) the exited threads.
    if (round % 5 == 0) synchronize_rcu();
  }
  int after = uk::rcu_nr_registered_readers();
  // Other tests may leave the callback thread registered.
  EXPECT_LE(after, base + 1);
  synchronize_rcu();
}

TEST(RcuTest, PolledGracePeriods) {
  EXPECT_TRUE(poll_state_synchronize_rcu(get_completed_synchronize_rcu()));
  unsigned long c = get_state_synchronize_rcu();
  synchronize_rcu();
  EXPECT_TRUE(poll_state_synchronize_rcu(c));

  // start_poll: the grace period completes without another updater.
  unsigned long s = start_poll_synchronize_rcu();
  EXPECT_TRUE(WaitFor([&] { return poll_state_synchronize_rcu(s); }));
  c = get_state_synchronize_rcu();
  cond_synchronize_rcu(c);
  EXPECT_TRUE(poll_state_synchronize_rcu(c));
}

TEST(RcuTest, SynchronizeInsideReaderWarnsInsteadOfDeadlocking) {
  uk::testing::AllowWarnings();
  long warns = uk::warn_count;
  rcu_read_lock();
  synchronize_rcu();
  rcu_read_unlock();
  EXPECT_GT(uk::warn_count, warns);
  warns = uk::warn_count;
  rcu_read_unlock();  // unbalanced
  EXPECT_GT(uk::warn_count, warns);
  EXPECT_FALSE(rcu_read_lock_held());
}

// Re-runs the grace-period tests with readers on the full-fence fallback
// (no membarrier), in a fresh process since the choice is made once.
TEST(RcuTest, FallbackWithoutMembarrier) {
  const char *cmdline = getenv("UKERN_CMDLINE");
  if (cmdline && strstr(cmdline, "rcu.membarrier=0"))
    GTEST_SKIP() << "already the child";
  std::vector<std::string> env;
  for (char **e = environ; *e; e++)
    if (strncmp(*e, "UKERN_CMDLINE=", 14) != 0) env.emplace_back(*e);
  env.emplace_back(std::string("UKERN_CMDLINE=") + (cmdline ? cmdline : "") +
                   " rcu.membarrier=0");
  std::vector<char *> envp;
  for (auto &s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter =
      "--gtest_filter=RcuTest.Torture*:RcuTest.GracePeriod*:RcuTest.CallRcu*";
  char exe[] = "/proc/self/exe";
  char *argv[] = {exe, filter.data(), nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
