// SPDX-License-Identifier: GPL-2.0-only
// liburcu (memb flavour) side of rcu_bench.cc. Kept in its own translation
// unit because liburcu's headers #define rcu_read_lock, call_rcu, ...
// _LGPL_SOURCE inlines liburcu's read-side fast paths, as a user would.
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#include <cstdlib>

#include "urcu_glue.h"

namespace urcu_glue {

void RegisterThread() { urcu_memb_register_thread(); }
void UnregisterThread() { urcu_memb_unregister_thread(); }

__attribute__((noinline)) void ReadSideLoop(long n) {
  for (long i = 0; i < n; i++) {
    urcu_memb_read_lock();
    __asm__ __volatile__("" ::: "memory");
    urcu_memb_read_unlock();
  }
}

void Synchronize() { urcu_memb_synchronize_rcu(); }

namespace {
struct Item {
  struct rcu_head head;
};
void FreeItem(struct rcu_head *h) { free(h); }
}  // namespace

void CallRcuBatch(long n) {
  for (long i = 0; i < n; i++) {
    Item *it = static_cast<Item *>(malloc(sizeof(Item)));
    urcu_memb_call_rcu(&it->head, FreeItem);
  }
  urcu_memb_barrier();
}

}  // namespace urcu_glue
