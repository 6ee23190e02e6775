// SPDX-License-Identifier: GPL-2.0-only
//
// The clock source behind ktime_get(), jiffies, hrtimers and timer_list.
//
// Two clocks:
//   host     CLOCK_MONOTONIC (vDSO clock_gettime). Per-CPU timer threads
//            sleep until the earliest deadline and deliver expired timers in
//            that CPU's hardirq (hrtimers) or softirq (soft hrtimers,
//            timer_list) context.
//   virtual  a counter that only moves when a test calls
//            virtual_clock_advance()/virtual_clock_set(). Expired timers fire
//            synchronously inside the call, one at a time, in deadline order
//            (ties: arming order), each in the interrupt context of the CPU
//            it was armed on. Nothing fires on its own.
//
// Switch clocks while no timers are queued: deadlines are kept as they are,
// so a timer armed on one clock keeps its number on the other.
#ifndef UK_SHIM_CLOCK_H_
#define UK_SHIM_CLOCK_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#include <uk/linux/compiler.h>

namespace uk {

inline constexpr uint64_t kVirtualClockDefaultStart = 1000000000ULL;  // 1 s

// Host CLOCK_MONOTONIC in nanoseconds.
inline uint64_t host_clock_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<uint64_t>(ts.tv_nsec);
}

// Internal state read by the inline fast path.
extern std::atomic<bool> clock_virtual_active;
extern std::atomic<uint64_t> clock_virtual_now;

inline bool clock_is_virtual() {
  return clock_virtual_active.load(std::memory_order_relaxed);
}

// The active clock, in nanoseconds.
inline uint64_t clock_now_ns() {
  if (unlikely(clock_virtual_active.load(std::memory_order_relaxed)))
    return clock_virtual_now.load(std::memory_order_acquire);
  return host_clock_ns();
}

// Switches to the virtual clock, starting at `start_ns`.
void clock_use_virtual(uint64_t start_ns = kVirtualClockDefaultStart);
// Switches back to CLOCK_MONOTONIC (and wakes the timer threads).
void clock_use_host();

// Virtual clock only (WARNs otherwise). Moves the clock forward by `ns`,
// firing every timer whose deadline is reached on the way, in deadline order.
// The clock reads each timer's deadline while its callback runs, and the
// target when the call returns. A callback that re-arms for a time <= the
// target fires again in the same call. Softirqs left pending on any CPU run
// at the end (as at a tick's irq_exit). Calls are serialized; calling it from
// a timer callback WARNs and does nothing.
void virtual_clock_advance(uint64_t ns);
// Sets the virtual clock: forward as virtual_clock_advance(ns - now);
// backward just moves the clock (nothing fires).
void virtual_clock_set(uint64_t ns);

// Virtual clock, for a scheduler that runs one thread at a time and picks
// which interrupt comes next (the explorer, docs/explore.md): whether `cpu`
// has a timer queued whose callback runs in its hardirq context (`hard`:
// hrtimers) or its softirq context (soft hrtimers and timer_list), and the
// earliest deadline among them.
bool virtual_clock_next(int cpu, bool hard, uint64_t *deadline);
// Fires that earliest timer alone, whatever other CPUs have queued before
// it (they fire late, as behind a masked interrupt): the clock moves to its
// deadline unless it is already past it, and the callback runs in the CPU's
// hardirq (softirq) context; a hardirq's exit runs the softirqs it left
// pending. Unlike virtual_clock_advance() it takes no lock, so a callback
// may be preempted by another CPU's timer. Returns false when none was
// queued.
bool virtual_clock_fire_next(int cpu, bool hard);

}  // namespace uk

#endif  // UK_SHIM_CLOCK_H_
