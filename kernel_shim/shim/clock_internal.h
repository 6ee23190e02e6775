// SPDX-License-Identifier: GPL-2.0-only
//
// Private interface between the clock engine (clock.cc) and the timer
// subsystems (hrtimer.cc, timer.cc, softirq.cc).
#ifndef UKERN_KERNEL_SHIM_CLOCK_INTERNAL_H_
#define UKERN_KERNEL_SHIM_CLOCK_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include <uk/linux/barrier.h>
#include <uk/linux/types.h>
#include <uk/shim/cpu.h>
#include <uk/shim/futex.h>
#include <uk/shim/timerq.h>

namespace uk {

// Intrusive binary min-heap of uk_timerq_node, ordered by (expires, seq).
// Callers hold the owning base's lock.
class TimerHeap {
 public:
  uk_timerq_node *top() const { return v_.empty() ? nullptr : v_[0]; }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }

  void push(uk_timerq_node *n) {
    v_.push_back(n);
    set(v_.size() - 1, n);
    sift_up(v_.size() - 1);
  }

  void remove(uk_timerq_node *n) {
    size_t i = static_cast<size_t>(n->idx);
    uk_timerq_node *last = v_.back();
    v_.pop_back();
    __atomic_store_n(&n->idx, -1, __ATOMIC_RELAXED);
    if (i == v_.size()) return;
    set(i, last);
    if (i > 0 && less(last, v_[(i - 1) / 2]))
      sift_up(i);
    else
      sift_down(i);
  }

 private:
  static bool less(const uk_timerq_node *a, const uk_timerq_node *b) {
    return a->expires < b->expires ||
           (a->expires == b->expires && a->seq < b->seq);
  }
  void set(size_t i, uk_timerq_node *n) {
    v_[i] = n;
    __atomic_store_n(&n->idx, static_cast<s32>(i), __ATOMIC_RELAXED);
  }
  void sift_up(size_t i) {
    uk_timerq_node *n = v_[i];
    while (i > 0) {
      size_t p = (i - 1) / 2;
      if (!less(n, v_[p])) break;
      set(i, v_[p]);
      i = p;
    }
    set(i, n);
  }
  void sift_down(size_t i) {
    uk_timerq_node *n = v_[i];
    size_t sz = v_.size();
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= sz) break;
      if (c + 1 < sz && less(v_[c + 1], v_[c])) c++;
      if (!less(v_[c], n)) break;
      set(i, v_[c]);
      i = c;
    }
    set(i, n);
  }
  std::vector<uk_timerq_node *> v_;
};

// Lets cancel/del_timer_sync sleep until a running callback finishes.
// The runner calls done() after clearing its `running` pointer (under the
// base lock); a waiter samples seq under the same lock while the callback
// is still running, then sleeps until it changes.
struct RunWait {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};

  void done() {
    seq.fetch_add(1, std::memory_order_seq_cst);
    if (waiters.load(std::memory_order_seq_cst) != 0) futex_wake(&seq);
  }
  void wait(uint32_t sampled) {
#ifdef UKERN_EXPLORE
    // A task of the explorer must not sleep outside its control: it spins
    // at scheduling points, which let the callback's CPU finish it.
    if (sched_hook != nullptr) {
      while (seq.load(std::memory_order_acquire) == sampled) cpu_relax();
      return;
    }
#endif
    for (int i = 0; i < 100; i++) {
      if (seq.load(std::memory_order_acquire) != sampled) return;
      cpu_pause();
    }
    waiters.fetch_add(1, std::memory_order_seq_cst);
    while (seq.load(std::memory_order_seq_cst) == sampled)
      futex_wait(&seq, sampled);
    waiters.fetch_sub(1, std::memory_order_relaxed);
  }
};

// Arming order: global in virtual mode (ties across CPUs fire in arming
// order), the base's own counter (bumped under its lock) otherwise.
u64 timerq_next_seq(u64 *base_counter);

// A new earliest deadline was queued on `cpu`: make its timer thread look.
void clock_kick(int cpu, s64 expires);

// Timer sources per CPU (implemented in hrtimer.cc / timer.cc). peek returns
// the head's (expires, seq), false if empty (or, with trylock, if another
// thread holds the base's lock). run_* execute in the CPU's
// interrupt context: every entry with expires <= now, or only the head.
enum TimerSource { kSrcHrtimerHard, kSrcHrtimerSoft, kSrcTimerList, kNrSrc };
bool hrtimer_peek(int cpu, int index, s64 *expires, u64 *seq,
                  bool trylock = false);
void hrtimer_run_queue(int cpu, int index, s64 now, bool one);
bool timer_peek(int cpu, s64 *expires, u64 *seq, bool trylock = false);
void timer_run(int cpu, s64 now, bool one);

// True while this thread delivers a timer hardirq: softirqs it raises run at
// the engine's irq exit (softirq_irq_exit), not via deferred CPU work.
extern thread_local bool timer_engine_in_hardirq;
// Nesting of timer callbacks on this thread (virtual_clock_advance refuses).
extern thread_local int timer_callback_depth;

}  // namespace uk

#endif  // UKERN_KERNEL_SHIM_CLOCK_INTERNAL_H_
