/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU-protected list operations (include/linux/rculist.h).
 *
 * Upstream: include/linux/rculist.h @ v6.12
 */
#ifndef UK_LINUX_RCULIST_H
#define UK_LINUX_RCULIST_H

#include <uk/linux/list.h>
#include <uk/linux/rcupdate.h>

#define list_next_rcu(list) (*((struct list_head **)(&(list)->next)))

static inline void INIT_LIST_HEAD_RCU(struct list_head *list)
{
	WRITE_ONCE(list->next, list);
	WRITE_ONCE(list->prev, list);
}

static inline void __list_add_rcu(struct list_head *n, struct list_head *prev,
				  struct list_head *next)
{
	n->next = next;
	n->prev = prev;
	/* pairs with the acquire in list_for_each_entry_rcu()'s dereference */
	rcu_assign_pointer(list_next_rcu(prev), n);
	next->prev = n;
}

static inline void list_add_rcu(struct list_head *n, struct list_head *head)
{
	__list_add_rcu(n, head, head->next);
}

static inline void list_add_tail_rcu(struct list_head *n, struct list_head *head)
{
	__list_add_rcu(n, head->prev, head);
}

/* Readers may still be walking @entry: its ->next stays valid. */
static inline void list_del_rcu(struct list_head *entry)
{
	__list_del_entry(entry);
	entry->prev = (struct list_head *)LIST_POISON2;
}

static inline void list_replace_rcu(struct list_head *old, struct list_head *n)
{
	n->next = old->next;
	n->prev = old->prev;
	rcu_assign_pointer(list_next_rcu(n->prev), n);
	n->next->prev = n;
	old->prev = (struct list_head *)LIST_POISON2;
}

#define list_entry_rcu(ptr, type, member) container_of(READ_ONCE(ptr), type, member)
#define list_first_or_null_rcu(ptr, type, member)                              \
	({                                                                     \
		struct list_head *__ptr = (ptr);                               \
		struct list_head *__next = rcu_dereference_raw(__ptr->next);   \
		__ptr != __next ? list_entry_rcu(__next, type, member) : NULL; \
	})
#define list_for_each_entry_rcu(pos, head, member, ...)                                            \
	for (pos = list_entry(rcu_dereference_raw(list_next_rcu(head)), __typeof__(*pos), member); \
	     &pos->member != (head);                                                               \
	     pos = list_entry(rcu_dereference_raw(list_next_rcu(&(pos)->member)),                  \
			      __typeof__(*(pos)), member))
#define list_for_each_entry_srcu(pos, head, member, c) list_for_each_entry_rcu (pos, head, member)

#define hlist_first_rcu(head) (*((struct hlist_node **)(&(head)->first)))
#define hlist_next_rcu(node) (*((struct hlist_node **)(&(node)->next)))

static inline void hlist_del_rcu(struct hlist_node *n)
{
	__hlist_del(n);
	WRITE_ONCE(n->pprev, (struct hlist_node **)LIST_POISON2);
}

static inline void hlist_del_init_rcu(struct hlist_node *n)
{
	if (!hlist_unhashed(n)) {
		__hlist_del(n);
		WRITE_ONCE(n->pprev, NULL);
	}
}

static inline void hlist_add_head_rcu(struct hlist_node *n, struct hlist_head *h)
{
	struct hlist_node *first = h->first;

	n->next = first;
	WRITE_ONCE(n->pprev, &h->first);
	/* pairs with hlist_for_each_entry_rcu()'s dereference */
	rcu_assign_pointer(hlist_first_rcu(h), n);
	if (first)
		WRITE_ONCE(first->pprev, &n->next);
}

#define hlist_for_each_entry_rcu(pos, head, member, ...)                                      \
	for (pos = hlist_entry_safe(rcu_dereference_raw(hlist_first_rcu(head)),               \
				    __typeof__(*(pos)), member);                              \
	     pos; pos = hlist_entry_safe(rcu_dereference_raw(hlist_next_rcu(&(pos)->member)), \
					 __typeof__(*(pos)), member))

#endif /* UK_LINUX_RCULIST_H */
