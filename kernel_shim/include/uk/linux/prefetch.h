/* SPDX-License-Identifier: GPL-2.0-only */
/* include/linux/prefetch.h: a read prefetch hint. */
#ifndef UK_LINUX_PREFETCH_H
#define UK_LINUX_PREFETCH_H

static inline void prefetch(const void *x)
{
	__builtin_prefetch(x);
}

static inline void prefetchw(const void *x)
{
	__builtin_prefetch(x, 1);
}

#endif /* UK_LINUX_PREFETCH_H */
