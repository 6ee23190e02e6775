/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Data cache maintenance (include/linux/cacheflush.h). A folio written
 * through the kernel's mapping must be made coherent for the other mappings
 * of it on CPUs whose data caches alias; the host CPUs ukern runs on do not
 * alias, as x86 does not, so there is nothing to do.
 */
#ifndef UK_LINUX_CACHEFLUSH_H
#define UK_LINUX_CACHEFLUSH_H

struct folio;

static inline void flush_dcache_folio(struct folio *folio) {}

#endif /* UK_LINUX_CACHEFLUSH_H */
