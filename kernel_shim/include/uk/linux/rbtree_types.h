/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The red-black tree node and root (include/linux/rbtree_types.h). Nothing
 * in ukern keeps a tree yet: the types exist so that structures which embed
 * a node in the kernel embed one here too, and code that clears one reads
 * as the kernel's.
 */
#ifndef UK_LINUX_RBTREE_TYPES_H
#define UK_LINUX_RBTREE_TYPES_H

struct rb_node {
	unsigned long __rb_parent_color;
	struct rb_node *rb_right;
	struct rb_node *rb_left;
} __attribute__((aligned(sizeof(long))));

struct rb_root {
	struct rb_node *rb_node;
};

#define RB_ROOT          \
	(struct rb_root) \
	{                \
		NULL,    \
	}

#endif /* UK_LINUX_RBTREE_TYPES_H */
