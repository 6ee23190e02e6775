/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The address space (include/linux/mm_types.h): ukern runs in one host
 * process, so there is one mm_struct, uk::process_mm, and every task's
 * `current->mm` points to it (kernel threads included: nothing here tells a
 * worker thread from a program thread at creation). It holds only what the
 * ported code keeps in the mm: the AIO context table of v6.12
 * (CONFIG_AIO) and, for the AIO era variants, the context list of kernels
 * before 3.11 and the radix tree of the 2013 lookup.
 *
 * Upstream: include/linux/mm_types.h @ v6.12
 */
#ifndef UK_LINUX_MM_TYPES_H
#define UK_LINUX_MM_TYPES_H

#include <uk/linux/compiler.h>
#include <uk/linux/list.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/spinlock.h>

struct kioctx_table;

struct mm_struct {
	/* CONFIG_AIO */
	spinlock_t ioctx_lock;
	struct kioctx_table __rcu *ioctx_table;
	/* AIO era variants: the pre-3.11 list and the 2013 radix tree */
	struct hlist_head ioctx_list;
	struct radix_tree_root ioctx_rtree;
};

namespace uk
{
/* The process's address space; see the top of this file. */
extern struct mm_struct process_mm;
} // namespace uk

#endif /* UK_LINUX_MM_TYPES_H */
