// SPDX-License-Identifier: GPL-2.0-only
// Thin futex wrappers for the shim's sleeping locks and waits.
#ifndef UK_SHIM_FUTEX_H_
#define UK_SHIM_FUTEX_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace uk {

inline long futex_wait(std::atomic<uint32_t> *word, uint32_t expected,
                       const struct timespec *rel_timeout = nullptr) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word),
                 FUTEX_WAIT_PRIVATE, expected, rel_timeout, nullptr, 0);
}

inline long futex_wake(std::atomic<uint32_t> *word, int n = INT_MAX) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word),
                 FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
}

// One spin-wait hint (PAUSE): what cpu_relax() is on x86.
inline void cpu_pause() { __builtin_ia32_pause(); }

}  // namespace uk

#endif  // UK_SHIM_FUTEX_H_
