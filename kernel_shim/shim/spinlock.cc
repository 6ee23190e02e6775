// SPDX-License-Identifier: GPL-2.0-only
// Slow paths of the shim's spinlocks, rwlocks and mutexes.
#include <sched.h>

#include <uk/linux/mutex.h>
#include <uk/linux/spinlock.h>
#include <uk/shim/futex.h>

namespace uk {

void lockword_lock_slow(std::atomic<uint32_t> *w, int spins) {
  if (__builtin_expect(sched_block_hook != nullptr, 0)) {
    while (!lockword_trylock(w)) sched_block_hook("lock", w, ~0u);
    return;
  }
  for (int i = 0; i < spins; i++) {
    cpu_pause();
    if (w->load(std::memory_order_relaxed) == 0 && lockword_trylock(w)) return;
  }
  // Spinning did not get it: store 2 so that the holder's unlock wakes us,
  // and futex-wait until an exchange finds the word at 0 (lock is ours).
  while (w->exchange(2, std::memory_order_acquire) != 0) futex_wait(w, 2);
}

void lockword_wake(std::atomic<uint32_t> *w) { futex_wake(w, 1); }

void rwlock_read_slow(rwlock_t *l) {
  // Back out and wait for the writer (and waiting writers) to finish.
  l->cnts.fetch_sub(__UK_RW_READER, std::memory_order_relaxed);
  for (int i = 0;; i++) {
    uint32_t c = l->cnts.load(std::memory_order_relaxed);
    if (!(c & (__UK_RW_WRITER | __UK_RW_WAITING)) &&
        l->cnts.compare_exchange_weak(c, c + __UK_RW_READER,
                                      std::memory_order_acquire,
                                      std::memory_order_relaxed))
      return;
    if (__builtin_expect(sched_block_hook != nullptr, 0)) {
      sched_block_hook("read_lock", &l->cnts, __UK_RW_WRITER | __UK_RW_WAITING);
      continue;
    }
    if (i > 100)
      sched_yield();
    else
      cpu_pause();
  }
}

void rwlock_write_slow(rwlock_t *l) {
  for (int i = 0;; i++) {
    uint32_t c = l->cnts.load(std::memory_order_relaxed);
    if ((c & ~__UK_RW_WAITING) == 0) {
      if (l->cnts.compare_exchange_weak(c, __UK_RW_WRITER,
                                        std::memory_order_acquire,
                                        std::memory_order_relaxed))
        return;
      continue;
    }
    if (!(c & __UK_RW_WAITING))
      l->cnts.fetch_or(__UK_RW_WAITING, std::memory_order_relaxed);
    if (__builtin_expect(sched_block_hook != nullptr, 0)) {
      sched_block_hook("write_lock", &l->cnts, ~__UK_RW_WAITING);
      continue;
    }
    if (i > 100)
      sched_yield();
    else
      cpu_pause();
  }
}

bool lock_is_held(const struct raw_spinlock *l) {
  return l->owner.load(std::memory_order_relaxed) == lock_owner_self();
}

bool lock_is_held(const struct spinlock *l) { return lock_is_held(&l->rlock); }

bool lock_is_held(const struct mutex *m) {
  return m->owner.load(std::memory_order_relaxed) == lock_owner_self();
}

}  // namespace uk
