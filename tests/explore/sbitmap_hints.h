// SPDX-License-Identifier: GPL-2.0-only
// For explore scenes built on sbitmaps (sbitmap_queue, blk-mq tags): a
// schedule must meet the same state every time it runs.
#ifndef UKERN_TESTS_EXPLORE_SBITMAP_HINTS_H_
#define UKERN_TESTS_EXPLORE_SBITMAP_HINTS_H_

#include <uk/linux/percpu.h>
#include <uk/linux/sbitmap.h>

namespace explore {

// sbitmap_init_node() seeds the per-CPU allocation hints at random; a
// scene sets them to 0. A map of depth 0 has none.
inline void zero_alloc_hints(struct sbitmap *sb) {
  unsigned int cpu;
  if (!sb->alloc_hint) return;
  for_each_possible_cpu(cpu) * per_cpu_ptr(sb->alloc_hint, cpu) = 0;
}

}  // namespace explore

#endif  // UKERN_TESTS_EXPLORE_SBITMAP_HINTS_H_
