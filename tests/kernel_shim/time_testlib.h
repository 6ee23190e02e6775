// SPDX-License-Identifier: GPL-2.0-only
// Helpers for the clock/hrtimer/timer/softirq tests.
#ifndef UKERN_TESTS_KERNEL_SHIM_TIME_TESTLIB_H_
#define UKERN_TESTS_KERNEL_SHIM_TIME_TESTLIB_H_

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/interrupt.h>
#include <uk/linux/preempt.h>
#include <uk/linux/smp.h>
#include <uk/linux/timekeeping.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace uk::testing {

// What a callback saw.
struct Event {
  std::string what;
  int cpu;
  bool hardirq;
  bool softirq;
  u64 now;
};

class Recorder {
 public:
  void add(const std::string &what) {
    Event e{what, smp_processor_id(), in_irq() != 0, in_serving_softirq() != 0,
            clock_now_ns()};
    std::lock_guard<std::mutex> g(mu_);
    events_.push_back(e);
  }
  std::vector<Event> events() {
    std::lock_guard<std::mutex> g(mu_);
    return events_;
  }
  std::vector<std::string> names() {
    std::vector<std::string> v;
    for (auto &e : events()) v.push_back(e.what);
    return v;
  }
  size_t size() {
    std::lock_guard<std::mutex> g(mu_);
    return events_.size();
  }

 private:
  std::mutex mu_;
  std::vector<Event> events_;
};

// A timer (struct hrtimer or struct timer_list) whose callback records its
// name in `rec`; a timer_list callback also keeps the jiffies it ran at.
template <class Timer>
struct NamedTimer {
  Timer timer;
  Recorder *rec;
  std::string name;
  unsigned long jiffies_seen = 0;
};

// Virtual clock at 1 s, 4 CPUs, no ksoftirqd: only the test moves time.
class VirtualClockTest : public ::testing::Test {
 protected:
  static constexpr u64 kStart = 1000000000ULL;
  void SetUp() override {
    if (nr_cpu_ids < 4) set_nr_cpu_ids(4);
    softirq_set_threads(false);
    clock_use_virtual(kStart);
  }
  void TearDown() override {
    pin_thread_to_cpu(-1);
    clock_use_host();
    softirq_set_threads(true);
  }
};

}  // namespace uk::testing

#endif  // UKERN_TESTS_KERNEL_SHIM_TIME_TESTLIB_H_
