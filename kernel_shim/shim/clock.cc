// SPDX-License-Identifier: GPL-2.0-only
// The clock engine: host and virtual clocks, per-CPU timer threads, and
// deterministic expiry for the virtual clock. See <uk/shim/clock.h>.
#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <span>
#include <thread>

#include <uk/linux/interrupt.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/ktime.h>
#include <uk/linux/printk.h>
#include <uk/linux/timekeeping.h>
#include <uk/shim/clock.h>
#include <uk/shim/cpu.h>
#include <uk/shim/futex.h>

#include "clock_internal.h"

namespace uk {

std::atomic<bool> clock_virtual_active{false};
std::atomic<uint64_t> clock_virtual_now{kVirtualClockDefaultStart};
thread_local bool timer_engine_in_hardirq = false;
thread_local int timer_callback_depth = 0;

namespace {

s64 realtime_offset() {
  struct timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<s64>(rt.tv_sec) - mono.tv_sec) * NSEC_PER_SEC +
         (rt.tv_nsec - mono.tv_nsec);
}

std::atomic<u64> global_seq{1};

// One per CPU: the timer thread's wake-up word and the deadline it sleeps
// until (KTIME_MAX while it is awake and scanning: every new head bumps the
// word, and no futex wake is needed).
struct alignas(64) ClockCpu {
  std::atomic<uint32_t> kick{0};
  std::atomic<s64> sleeping_until{KTIME_MAX};
  std::atomic<int> thread_state{0};  // 0 none, 1 started
};

ClockCpu clock_cpus[NR_CPUS];

// Serializes virtual_clock_advance().
std::mutex advance_mutex;

bool peek_src(int cpu, int src, s64 *e, u64 *seq, bool trylock = false) {
  switch (src) {
    case kSrcHrtimerHard:
      return hrtimer_peek(cpu, 0, e, seq, trylock);
    case kSrcHrtimerSoft:
      return hrtimer_peek(cpu, 1, e, seq, trylock);
    default:
      return timer_peek(cpu, e, seq, trylock);
  }
}

void deliver_hard(int cpu, s64 now, bool one) {
  run_in_hardirq(cpu, [cpu, now, one] {
    timer_engine_in_hardirq = true;
    hrtimer_run_queue(cpu, 0, now, one);
    timer_engine_in_hardirq = false;
  });
  softirq_irq_exit(cpu);
}

void deliver_soft(int cpu, int src, s64 now, bool one) {
  run_in_softirq(cpu, [cpu, src, now, one] {
    if (src == kSrcHrtimerSoft || !one) hrtimer_run_queue(cpu, 1, now, one);
    if (src == kSrcTimerList || !one) timer_run(cpu, now, one);
  });
}

long futex_wait_abs(std::atomic<uint32_t> *word, uint32_t val, s64 deadline) {
  if (deadline == KTIME_MAX) return futex_wait(word, val);
  struct timespec ts;
  ts.tv_sec = deadline / NSEC_PER_SEC;
  ts.tv_nsec = deadline % NSEC_PER_SEC;
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word),
                 FUTEX_WAIT_BITSET_PRIVATE, val, &ts, nullptr,
                 FUTEX_BITSET_MATCH_ANY);
}

// Host clock: sleeps until the CPU's earliest deadline, then delivers every
// expired timer in the CPU's interrupt context, as hrtimer_interrupt() and
// the timer softirq would.
void timer_thread(int cpu) {
  ClockCpu &cc = clock_cpus[cpu];
  char name[16];
  snprintf(name, sizeof(name), "uk-timer/%d", cpu);
  pthread_setname_np(pthread_self(), name);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  for (;;) {
    cc.sleeping_until.store(KTIME_MAX, std::memory_order_seq_cst);
    uint32_t w = cc.kick.load(std::memory_order_seq_cst);
    if (clock_is_virtual()) {
      cc.sleeping_until.store(KTIME_MAX - 1, std::memory_order_seq_cst);
      futex_wait(&cc.kick, w);
      continue;
    }
    s64 now = static_cast<s64>(host_clock_ns());
    // The tick's work first: timers due now see jiffies at `now`.
    jiffies_update(static_cast<u64>(now));
    s64 next = KTIME_MAX;
    bool ran = false;
    s64 e;
    u64 seq;
    if (hrtimer_peek(cpu, 0, &e, &seq)) {
      if (e <= now) {
        deliver_hard(cpu, now, false);
        ran = true;
      } else {
        next = e;
      }
    }
    bool soft_due = false;
    if (hrtimer_peek(cpu, 1, &e, &seq)) {
      if (e <= now)
        soft_due = true;
      else
        next = std::min(next, e);
    }
    if (timer_peek(cpu, &e, &seq)) {
      if (e <= now)
        soft_due = true;
      else
        next = std::min(next, e);
    }
    if (soft_due) {
      deliver_soft(cpu, kNrSrc, now, false);
      ran = true;
    }
    if (ran) continue;
    // KTIME_MAX means "awake"; an idle thread advertises KTIME_MAX - 1 so
    // that any new timer wakes it.
    cc.sleeping_until.store(next == KTIME_MAX ? KTIME_MAX - 1 : next,
                            std::memory_order_seq_cst);
    futex_wait_abs(&cc.kick, w, next);
  }
}

void start_thread(int cpu) {
  ClockCpu &cc = clock_cpus[cpu];
  int expected = 0;
  if (cc.thread_state.compare_exchange_strong(expected, 1))
    std::thread(timer_thread, cpu).detach();
}

void kick_cpu(ClockCpu &cc) {
  cc.kick.fetch_add(1, std::memory_order_seq_cst);
  if (cc.sleeping_until.load(std::memory_order_seq_cst) != KTIME_MAX)
    futex_wake(&cc.kick);
}

bool caller_masks(int cpu, int src) {
  const ThreadCpu &t = tls_cpu;
  if (t.cpu != cpu) return false;
  uint32_t mask = src == kSrcHrtimerHard ? kCpuIrq : (kCpuIrq | kCpuBh);
  return (t.held & mask) != 0;
}

}  // namespace

s64 clock_realtime_offset_ns = realtime_offset();

u64 timerq_next_seq(u64 *base_counter) {
  if (clock_is_virtual())
    return global_seq.fetch_add(1, std::memory_order_relaxed);
  return ++*base_counter;
}

void clock_kick(int cpu, s64 expires) {
  if (clock_is_virtual()) return;
  ClockCpu &cc = clock_cpus[cpu];
  if (unlikely(cc.thread_state.load(std::memory_order_acquire) == 0))
    start_thread(cpu);
  // Pairs with the sleeping_until store before the thread's futex wait.
  if (expires < cc.sleeping_until.load(std::memory_order_seq_cst)) kick_cpu(cc);
}

void clock_use_virtual(uint64_t start_ns) {
  std::lock_guard<std::mutex> g(advance_mutex);
  clock_virtual_now.store(start_ns, std::memory_order_release);
  clock_virtual_active.store(true, std::memory_order_seq_cst);
  jiffies_clock_changed();
  for (unsigned int c = 0; c < NR_CPUS; c++) {
    if (clock_cpus[c].thread_state.load(std::memory_order_acquire))
      kick_cpu(clock_cpus[c]);
  }
}

void clock_use_host() {
  std::lock_guard<std::mutex> g(advance_mutex);
  clock_virtual_active.store(false, std::memory_order_seq_cst);
  jiffies_clock_changed();
  for (unsigned int c = 0; c < nr_cpu_ids; c++) {
    bool any = false;
    s64 e;
    u64 seq;
    for (int src = 0; src < kNrSrc; src++) any |= peek_src(c, src, &e, &seq);
    if (any) start_thread(c);
    if (clock_cpus[c].thread_state.load(std::memory_order_acquire))
      kick_cpu(clock_cpus[c]);
  }
}

void virtual_clock_advance(uint64_t ns) {
  if (WARN(!clock_is_virtual(), "virtual_clock_advance() on the host clock\n"))
    return;
  if (WARN(timer_callback_depth > 0,
           "virtual_clock_advance() from a timer callback\n"))
    return;
  std::lock_guard<std::mutex> g(advance_mutex);
  u64 now = clock_virtual_now.load(std::memory_order_relaxed);
  u64 target = now + ns < now ? static_cast<u64>(KTIME_MAX) : now + ns;
  if (target > static_cast<u64>(KTIME_MAX)) target = KTIME_MAX;
  bool masked[NR_CPUS][kNrSrc] = {};
  for (;;) {
    s64 best_e = KTIME_MAX;
    u64 best_seq = ~0ULL;
    int best_cpu = -1, best_src = -1;
    for (unsigned int c = 0; c < nr_cpu_ids; c++) {
      for (int src = 0; src < kNrSrc; src++) {
        s64 e;
        u64 seq;
        if (masked[c][src] || !peek_src(c, src, &e, &seq)) continue;
        if (e > static_cast<s64>(target)) continue;
        if (e < best_e || (e == best_e && seq < best_seq)) {
          best_e = e;
          best_seq = seq;
          best_cpu = c;
          best_src = src;
        }
      }
    }
    if (best_cpu < 0) break;
    if (best_e >
        static_cast<s64>(clock_virtual_now.load(std::memory_order_relaxed)))
      clock_virtual_now.store(best_e, std::memory_order_release);
    if (caller_masks(best_cpu, best_src)) {
      // This thread has the CPU's interrupts off: leave the timer in its
      // queue for a later advance to fire.
      masked[best_cpu][best_src] = true;
      continue;
    }
    s64 vnow =
        static_cast<s64>(clock_virtual_now.load(std::memory_order_relaxed));
    if (best_src == kSrcHrtimerHard)
      deliver_hard(best_cpu, vnow, true);
    else
      deliver_soft(best_cpu, best_src, vnow, true);
  }
  clock_virtual_now.store(target, std::memory_order_release);
  // The tick's irq exit: softirqs left pending run now.
  for (unsigned int c = 0; c < nr_cpu_ids; c++) {
    if (softirq_pending(c) && !caller_masks(c, kSrcTimerList))
      softirq_irq_exit(c);
  }
}

namespace {

// The earliest timer source of `cpu` in the given context. The explorer
// asks between any two scheduling points, while a parked task may be inside
// a base's critical section: a base whose lock is taken is read as empty
// (nothing can be queued on it until that task runs again).
bool next_src(int cpu, bool hard, s64 *deadline, int *src) {
  static constexpr int kHard[] = {kSrcHrtimerHard};
  static constexpr int kSoft[] = {kSrcHrtimerSoft, kSrcTimerList};
  bool found = false;
  u64 best_seq = ~0ULL;
  for (int s :
       hard ? std::span<const int>(kHard) : std::span<const int>(kSoft)) {
    s64 e;
    u64 seq;
    if (!peek_src(cpu, s, &e, &seq, true)) continue;
    if (!found || e < *deadline || (e == *deadline && seq < best_seq)) {
      *deadline = e;
      best_seq = seq;
      *src = s;
      found = true;
    }
  }
  return found;
}

}  // namespace

bool virtual_clock_next(int cpu, bool hard, uint64_t *deadline) {
  s64 e;
  int src;
  if (!next_src(cpu, hard, &e, &src)) return false;
  *deadline = static_cast<uint64_t>(e);
  return true;
}

bool virtual_clock_fire_next(int cpu, bool hard) {
  if (WARN(!clock_is_virtual(),
           "virtual_clock_fire_next() on the host clock\n"))
    return false;
  s64 e;
  int src;
  if (!next_src(cpu, hard, &e, &src)) return false;
  if (e > static_cast<s64>(clock_virtual_now.load(std::memory_order_relaxed)))
    clock_virtual_now.store(static_cast<u64>(e), std::memory_order_release);
  s64 vnow =
      static_cast<s64>(clock_virtual_now.load(std::memory_order_relaxed));
  if (hard)
    deliver_hard(cpu, vnow, true);
  else
    deliver_soft(cpu, src, vnow, true);
  return true;
}

void virtual_clock_set(uint64_t ns) {
  if (WARN(!clock_is_virtual(), "virtual_clock_set() on the host clock\n"))
    return;
  u64 now = clock_virtual_now.load(std::memory_order_acquire);
  if (ns >= now) {
    virtual_clock_advance(ns - now);
    return;
  }
  std::lock_guard<std::mutex> g(advance_mutex);
  clock_virtual_now.store(ns, std::memory_order_release);
}

}  // namespace uk
