/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Upstream: include/linux/poison.h @ v6.12
 */
#ifndef UK_LINUX_POISON_H
#define UK_LINUX_POISON_H

/* Non-canonical addresses: any dereference faults, as in the kernel. */
#define POISON_POINTER_DELTA 0xdead000000000000UL
#define LIST_POISON1 ((void *)(0x100 + POISON_POINTER_DELTA))
#define LIST_POISON2 ((void *)(0x122 + POISON_POINTER_DELTA))
#define POISON_FREE 0x6b

#endif /* UK_LINUX_POISON_H */
