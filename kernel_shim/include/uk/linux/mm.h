/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Folios (include/linux/mm.h). Memory is identity mapped, as for struct page
 * (<uk/linux/gfp.h>): a "struct folio *" is the address of the folio's first
 * byte in the mapping the kernel side uses, so folio_address(folio) ==
 * folio. A folio here is one page and carries no state of its own: whoever
 * hands one out (the AIO ring arena) owns the memory behind it.
 */
#ifndef UK_LINUX_MM_H
#define UK_LINUX_MM_H

#include <uk/linux/types.h>

struct folio;

static inline void *folio_address(const struct folio *folio)
{
	return (void *)folio;
}

/* The folio that starts at @addr, a page-aligned kernel address. */
static inline struct folio *virt_to_folio(const void *addr)
{
	return (struct folio *)((unsigned long)addr & PAGE_MASK);
}

/*
 * The memory behind a folio belongs to whoever handed the folio out, so the
 * references to it are not counted: folio_ref_count() reads 1, the holder's
 * own, and folio_put() gives nothing back (the owner frees the memory).
 */
static inline int folio_ref_count(const struct folio *folio)
{
	return 1;
}

static inline void folio_put(struct folio *folio) {}

struct page;

/*
 * Nothing records which pages make up a larger folio, so every page is a
 * folio of its own (order 0): page_folio() is the page itself.
 */
static inline struct folio *page_folio(const struct page *page)
{
	return (struct folio *)page;
}

static inline unsigned int folio_order(const struct folio *folio)
{
	return 0;
}

static inline size_t folio_size(const struct folio *folio)
{
	return PAGE_SIZE << folio_order(folio);
}

/* Which page of @folio @page is. */
static inline unsigned long folio_page_idx(const struct folio *folio, const struct page *page)
{
	return ((unsigned long)page - (unsigned long)folio) >> PAGE_SHIFT;
}

/*
 * Pins (pin_user_pages() and the like) are not counted either: no iterator
 * here hands out pinned pages, so unpinning has nothing to give back.
 */
static inline void unpin_user_page(struct page *page) {}

static inline void unpin_user_folio(struct folio *folio, unsigned long npages) {}

#endif /* UK_LINUX_MM_H */
