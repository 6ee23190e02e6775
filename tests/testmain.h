// SPDX-License-Identifier: GPL-2.0-only
// Shared by every ukern test binary.
#ifndef UKERN_TESTS_TESTMAIN_H_
#define UKERN_TESTS_TESTMAIN_H_

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

// From <uk/linux/sched.h>, which this header leaves out: some tests (the aio
// conformance test) keep the kernel headers out of their namespace.
struct task_struct;
namespace uk {
bool wait_task_blocked(const struct task_struct *p, int timeout_ms);
}  // namespace uk

namespace uk::testing {

// A test that expects the code under test to WARN calls this; otherwise any
// WARN (or "sleeping function called from invalid context") fails the test.
void AllowWarnings();

// Threads for concurrency tests: sized by the host, at least 2, at most 8.
inline unsigned StressThreads() {
  unsigned n = std::thread::hardware_concurrency();
  if (n < 2) n = 2;
  return n > 8 ? 8 : n;
}

// Binds the calling thread to host CPU `host` (sched affinity). False if the
// host refuses (a CPU outside the thread's allowed set, say).
inline bool PinToHostCpu(int host) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(host, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// Waits for an outcome with a bound: yields until pred() holds or the host's
// steady clock passes `deadline`, and returns pred(). The caller asserts on
// the result, so a lost wake-up fails the test instead of hanging it.
template <class Pred>
bool WaitUntil(Pred pred, std::chrono::steady_clock::time_point deadline) {
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::yield();
  }
  return true;
}

// WaitUntil() `limit` from now.
template <class Pred>
bool WaitFor(Pred pred,
             std::chrono::nanoseconds limit = std::chrono::seconds(10)) {
  return WaitUntil(pred, std::chrono::steady_clock::now() + limit);
}

// Waits (bounded) until a test thread has published its task in `task` and
// that task sleeps in schedule() (uk::wait_task_blocked()).
inline bool WaitTaskBlocked(const std::atomic<struct task_struct *> &task) {
  return WaitFor([&] { return task.load() != nullptr; }) &&
         uk::wait_task_blocked(task.load(), 10000);
}

}  // namespace uk::testing

#endif  // UKERN_TESTS_TESTMAIN_H_
