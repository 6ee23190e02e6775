// SPDX-License-Identifier: GPL-2.0-only
// Context-switch counters from the host (getrusage): how often a thread (or
// the process) gave up its CPU voluntarily (blocked) or was preempted.
// Benchmarks report them per operation to show how many sleeps a wake-up
// path costs.
#ifndef UK_SHIM_CTXSW_H_
#define UK_SHIM_CTXSW_H_

#include <cstdint>

namespace uk {

struct CtxswCounts {
  uint64_t voluntary = 0;    // ru_nvcsw
  uint64_t involuntary = 0;  // ru_nivcsw

  CtxswCounts operator-(const CtxswCounts &o) const {
    return {voluntary - o.voluntary, involuntary - o.involuntary};
  }
  uint64_t total() const { return voluntary + involuntary; }
};

// The calling thread's counts (RUSAGE_THREAD).
CtxswCounts ctxsw_counts();
// The whole process's counts (RUSAGE_SELF: all threads, live and exited).
CtxswCounts ctxsw_counts_process();

}  // namespace uk

#endif  // UK_SHIM_CTXSW_H_
