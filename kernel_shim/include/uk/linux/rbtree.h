/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node state helpers of include/linux/rbtree.h: a node that is in no
 * tree points at itself as its parent.
 */
#ifndef UK_LINUX_RBTREE_H
#define UK_LINUX_RBTREE_H

#include <uk/linux/rbtree_types.h>

#define RB_EMPTY_NODE(node) ((node)->__rb_parent_color == (unsigned long)(node))
#define RB_CLEAR_NODE(node) ((node)->__rb_parent_color = (unsigned long)(node))

#endif /* UK_LINUX_RBTREE_H */
