/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU (include/linux/rcupdate.h). Pointer publication and access are here;
 * the read side and grace periods are implemented in kernel_shim/rcu.cc.
 */
#ifndef UK_LINUX_RCUPDATE_H
#define UK_LINUX_RCUPDATE_H

#include <uk/linux/barrier.h>
#include <uk/linux/compiler.h>
#include <uk/linux/types.h>

struct callback_head {
	struct callback_head *next;
	void (*func)(struct callback_head *head);
} __attribute__((aligned(sizeof(void *))));
#define rcu_head callback_head
typedef void (*rcu_callback_t)(struct rcu_head *head);

/*
 * rcu_assign_pointer(): a release store, paired with the address dependency
 * (an acquire load here, which ThreadSanitizer understands) in
 * rcu_dereference().
 */
#define rcu_assign_pointer(p, v) __atomic_store_n(&(p), (__typeof__(p))(v), __ATOMIC_RELEASE)
#define RCU_INIT_POINTER(p, v) __atomic_store_n(&(p), (__typeof__(p))(v), __ATOMIC_RELAXED)
#define rcu_access_pointer(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_dereference_raw(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rcu_dereference(p) rcu_dereference_raw(p)
#define rcu_dereference_bh(p) rcu_dereference_raw(p)
#define rcu_dereference_sched(p) rcu_dereference_raw(p)
#define rcu_dereference_check(p, c) rcu_dereference_raw(p)
#define rcu_dereference_protected(p, c) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_replace_pointer(rcu_ptr, ptr, c)                                 \
	({                                                                   \
		__typeof__(ptr) __tmp = rcu_dereference_protected((rcu_ptr), (c)); \
		rcu_assign_pointer((rcu_ptr), (ptr));                        \
		__tmp;                                                       \
	})
#define unrcu_pointer(p) (p)
#define RCU_POINTER_INITIALIZER(p, v) .p = (v)

#endif /* UK_LINUX_RCUPDATE_H */
