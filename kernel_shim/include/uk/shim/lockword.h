// SPDX-License-Identifier: GPL-2.0-only
// The lock word behind raw_spinlock_t and struct mutex holds 0 when nobody
// has the lock, 1 when someone does, 2 when someone does and other threads
// may be asleep on it. Spins first (a spinlock holder is short), then
// sleeps on a futex so oversubscribed hosts (2 cores, many threads) make
// progress. Acquire/release atomics give ThreadSanitizer the edges.
#ifndef UK_SHIM_LOCKWORD_H_
#define UK_SHIM_LOCKWORD_H_

#include <atomic>
#include <cstdint>

namespace uk {

void lockword_lock_slow(std::atomic<uint32_t> *w, int spins);
void lockword_wake(std::atomic<uint32_t> *w);

inline bool lockword_trylock(std::atomic<uint32_t> *w) {
  uint32_t z = 0;
  return w->compare_exchange_strong(z, 1, std::memory_order_acquire,
                                    std::memory_order_relaxed);
}

inline void lockword_lock(std::atomic<uint32_t> *w, int spins) {
  if (__builtin_expect(!lockword_trylock(w), 0)) lockword_lock_slow(w, spins);
}

inline void lockword_unlock(std::atomic<uint32_t> *w) {
  if (__builtin_expect(w->exchange(0, std::memory_order_release) == 2, 0))
    lockword_wake(w);
}

}  // namespace uk

#endif  // UK_SHIM_LOCKWORD_H_
