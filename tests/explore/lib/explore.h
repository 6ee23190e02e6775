// SPDX-License-Identifier: GPL-2.0-only
// ukern explore: a controlled scheduler that runs the tasks of a test one at
// a time, switching only at the shim's scheduling points, and searches the
// interleavings (and interrupt arrivals) for one that breaks an invariant.
// See docs/explore.md. Built only in the explore preset (UKERN_EXPLORE=1).
#ifndef UKERN_TESTS_EXPLORE_H_
#define UKERN_TESTS_EXPLORE_H_

#include <cstdint>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace explore {

enum class Strategy { kRandom, kPct, kDfs, kReplay };

struct Options {
  Strategy strategy = Strategy::kRandom;
  uint64_t seed = 1;
  long max_schedules = 2000;  // budget in schedules
  double max_seconds = 20;    // and in wall time
  int pct_depth = 3;          // PCT bug depth d
  int preemption_bound = 2;   // DFS
  long max_steps = 20000;     // per schedule: beyond it, a livelock
  bool shrink = true;
  bool trace = false;  // print the trace of the failing (or replayed) run
  // Lock validation: a lock-order inversion (A then B in one place, B then
  // A in another) or a lock taken both in an interrupt and with that
  // interrupt enabled fails the schedule even when it did not deadlock.
  bool lockdep = true;
  std::string replay;  // a schedule string: run exactly that one
};

// The options of an EXPLORE_TEST: the defaults above, then the environment
// (UKERN_EXPLORE_STRATEGY=random|pct|dfs, _SEED, _SCHEDULES, _SECONDS,
// _DEPTH, _BOUND, _REPLAY, _TRACE) and the same names as command-line flags
// (--explore_strategy=pct, --explore_replay=STRING, ...).
Options options_from_env(Options base = Options());

struct Result {
  bool failed = false;
  long schedules = 0;  // schedules run, the failing one included
  long found_at = 0;   // 1-based index of the first failing schedule
  double seconds = 0;
  std::string schedule;    // the failing schedule, shrunk
  std::string unshrunk;    // as first found
  std::string message;     // what failed
  std::string trace;       // readable trace of the shrunk schedule
  bool exhausted = false;  // DFS: the bounded space is fully explored
  double schedules_per_second() const {
    return seconds > 0 ? schedules / seconds : 0;
  }
};

// Runs `body` once per schedule, with 4 virtual CPUs (nr_cpu_ids) whatever
// the host has, so that schedule strings replay on any machine. The body sets up state, registers tasks
// and interrupts, calls join() (which runs them under the explorer), then
// checks invariants with check() / EXPLORE_CHECK and cleans up.
Result run(const std::function<void()> &body, const Options &opts);

// Inside the body:
// A task on virtual CPU `cpu` (pinned; -1: CPU (index % nr_cpu_ids)).
void spawn(std::function<void()> fn, int cpu = -1);
// An interrupt for virtual CPU `cpu`, delivered once, at a scheduling point
// the explorer chooses, where that CPU's irq (bh) state allows.
void irq(int cpu, std::function<void()> fn);
void softirq(int cpu, std::function<void()> fn);
// The kernel's deferred execution inside the schedules (docs/explore.md,
// "Softirqs, timers and workqueues"). While a Services object lives, the
// clock is virtual, and every schedule of run() starts it from the same
// time and has, on each virtual CPU, these extra tasks, each a choice at
// every scheduling point whenever it has something to do, any number of
// times, and where that CPU's irq (bh) state allows:
//   ksoftirqd/N  softirqs raised outside interrupt context (ksoftirqd, or
//                the exit of some other interrupt), in softirq context;
//   hrtimer/N    the CPU's earliest hard hrtimer, in hardirq context;
//   timer/N      its earliest soft hrtimer or timer_list, in softirq context;
//   kworker/N    the first work item waiting on the CPU's workqueue pools, in
//                task context (and kworker/u, on the last CPU, for the
//                unbound pools).
// A timer interrupt moves the clock to the timer's deadline (never back):
// timers fire in any order across CPUs, late but never early. A schedule
// ends when the test's tasks have ended and none of these has work left.
// Create it before the objects the test sets up (a device), so that they
// see the virtual clock.
class Services {
 public:
  Services();
  ~Services();
  Services(const Services &) = delete;
  Services &operator=(const Services &) = delete;
};

// Runs the registered tasks to the end of the schedule. Throws (so that the
// body unwinds) when the schedule failed: deadlock, lost wake-up, livelock.
void join();
// Records a failed invariant for this schedule.
void check(bool ok, const char *what, const char *file, int line);
// The index of the running schedule (0-based), e.g. to vary set-up.
long schedule_index();

// The options EXPLORE_TEST starts from: the bounded search (preemption
// bound 2) for up to 10,000 schedules or 60 s; the environment and flags
// override them (tools/ukern explore --budget).
Options test_defaults();

// The options of a search for a known bug (a Found test): `strategy` with
// preemption bound 2, up to `budget` schedules or 120 s, overridden by the
// environment (tools/ukern explore --strategy, --schedules), with a trace.
Options find_options(long budget, Strategy strategy = Strategy::kRandom);

// Prints the result of a search for a known bug in the form
// `tools/ukern explore --historical` counts ("[explore] NAME: found after N
// schedules (budget B) in S s (R schedules/s)"), then the message, the
// shrunk schedule and its trace when it was found.
void report_found(const char *name, const Result &r, long budget);

// gtest glue behind EXPLORE_TEST: runs with options_from_env(), fails the
// test with the shrunk schedule and its trace, prints schedules/s.
void run_test(const char *name, const std::function<void()> &body,
              Options base = test_defaults());

}  // namespace explore

#define EXPLORE_CHECK(cond) ::explore::check((cond), #cond, __FILE__, __LINE__)

#define EXPLORE_TEST(Suite, Name)                                        \
  static void Suite##_##Name##_ExploreBody();                            \
  TEST(Suite, Name) {                                                    \
    ::explore::run_test(#Suite "." #Name, Suite##_##Name##_ExploreBody); \
  }                                                                      \
  static void Suite##_##Name##_ExploreBody()

#endif  // UKERN_TESTS_EXPLORE_H_
