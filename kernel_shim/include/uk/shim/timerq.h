// SPDX-License-Identifier: GPL-2.0-only
//
// Per-CPU timer queues shared by hrtimers and timer_list: an intrusive
// binary min-heap keyed by (expires, seq), where seq is a global arming
// counter so equal deadlines fire in arming order. Insert and remove are
// O(log n) and allocate only when the heap's array grows. The kernel keeps
// hrtimers in an rb-tree (lib/timerqueue.c) and timer_list in a wheel; a
// heap gives the same order with less code.
#ifndef UK_SHIM_TIMERQ_H_
#define UK_SHIM_TIMERQ_H_

#include <cstdint>

#include <uk/linux/types.h>

// Embedded in struct hrtimer (as `node`) and struct timer_list.
struct uk_timerq_node {
  ktime_t expires; /* hrtimer: hard expiry; timer_list: clock ns */
  u64 seq;         /* arming order, breaks ties */
  s32 idx;         /* position in the heap, -1 when not queued */
};

#endif  // UK_SHIM_TIMERQ_H_
