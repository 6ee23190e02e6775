// SPDX-License-Identifier: GPL-2.0-only
// liburcu memb entry points for rcu_bench.cc (see urcu_glue.cc).
#ifndef UKERN_BENCHMARKS_SHIM_URCU_GLUE_H_
#define UKERN_BENCHMARKS_SHIM_URCU_GLUE_H_

namespace urcu_glue {
void RegisterThread();
void UnregisterThread();
// n urcu_memb_read_lock()/unlock() pairs, inlined.
void ReadSideLoop(long n);
void Synchronize();
// n call_rcu() of malloc'ed items freed by the callback, then rcu_barrier.
void CallRcuBatch(long n);
}  // namespace urcu_glue

#endif  // UKERN_BENCHMARKS_SHIM_URCU_GLUE_H_
