/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bio_vec and its iterator (include/linux/bvec.h).
 *
 * User-mode page model: memory is identity mapped, so a "struct page *" is
 * simply the address of the start of a PAGE_SIZE window of ordinary memory
 * (page_address(page) == page). Any buffer can be described as
 * virt_to_page(buf) + offset_in_page(buf); the page need not be allocated as
 * a page. Multi-page bvecs are allowed, and the bvec_iter_* helpers split
 * them into single-page segments exactly as the kernel does.
 *
 * Upstream: include/linux/bvec.h @ v6.12
 */
#ifndef UK_LINUX_BVEC_H
#define UK_LINUX_BVEC_H

#include <cstring>

#include <uk/linux/kernel.h>
#include <uk/linux/minmax.h>
#include <uk/linux/types.h>

/*
 * include/linux/mm_types.h: in the identity map a struct page is the
 * page's PAGE_SIZE bytes themselves, so that page + n is the n-th page
 * after it, as in the kernel's memory map. A folio is its first page
 * followed by the folio's other pages.
 */
struct page {
	unsigned char __uk_bytes[PAGE_SIZE];
};

/* include/linux/types.h */
typedef u64 phys_addr_t;

struct folio {
	struct page page;
};

/* include/linux/page-flags.h: the @n-th page of @folio. */
#define folio_page(folio, n) nth_page(&(folio)->page, n)

/*
 * include/asm-generic/memory_model.h, include/linux/pfn.h, io.h: a page's
 * address is its physical one, and its frame number that over PAGE_SIZE.
 */
static inline unsigned long page_to_pfn(const struct page *page)
{
	return (unsigned long)page >> PAGE_SHIFT;
}

#define PFN_PHYS(x) ((phys_addr_t)(x) << PAGE_SHIFT)

static inline phys_addr_t page_to_phys(const struct page *page)
{
	return PFN_PHYS(page_to_pfn(page));
}

/* include/linux/mm.h without CONFIG_ZONE_DEVICE: any two pages go together. */
static inline bool zone_device_pages_have_same_pgmap(const struct page *a, const struct page *b)
{
	return true;
}

static inline bool zone_device_pages_compatible(const struct page *a, const struct page *b)
{
	return true;
}

static inline void *page_address(const struct page *page)
{
	return (void *)page;
}

static inline struct page *virt_to_page(const void *addr)
{
	return (struct page *)((unsigned long)addr & PAGE_MASK);
}

#define offset_in_page(p) ((unsigned long)(p) & ~PAGE_MASK)

/* The n-th page after @page (contiguous in the identity map). */
static inline struct page *nth_page(struct page *page, unsigned long n)
{
	return (struct page *)((char *)page + (n << PAGE_SHIFT));
}

static inline void *kmap_local_page(struct page *page)
{
	return page_address(page);
}

static inline void kunmap_local(const void *addr) {}

/*
 * Makes a page written through one mapping coherent for the others on CPUs
 * whose data caches alias: user mode has one mapping of every page, so
 * there is nothing to do.
 */
static inline void flush_dcache_page(struct page *page) {}

/* Zeroes @len bytes at @offset in @page (include/linux/highmem.h). */
static inline void memzero_page(struct page *page, size_t offset, size_t len)
{
	char *addr = (char *)kmap_local_page(page);

	VM_BUG_ON(offset + len > PAGE_SIZE);
	memset(addr + offset, 0, len);
	flush_dcache_page(page);
	kunmap_local(addr);
}

/* Clears @size bytes at @start in @page (include/linux/highmem.h). */
static inline void zero_user(struct page *page, unsigned int start, unsigned int size)
{
	memzero_page(page, start, size);
}

/* Sets @len bytes at @offset in @page to @val (include/linux/highmem.h). */
static inline void memset_page(struct page *page, size_t offset, int val, size_t len)
{
	void *addr = kmap_local_page(page);

	memset((char *)addr + offset, val, len);
	kunmap_local(addr);
}

/*
 * Copies @len bytes from @src_off in @src_page to @dst_off in @dst_page
 * (include/linux/highmem.h); neither range may run past its page.
 */
static inline void memcpy_page(struct page *dst_page, size_t dst_off, struct page *src_page,
			       size_t src_off, size_t len)
{
	char *dst = (char *)kmap_local_page(dst_page);
	char *src = (char *)kmap_local_page(src_page);

	VM_BUG_ON(dst_off + len > PAGE_SIZE || src_off + len > PAGE_SIZE);
	memcpy(dst + dst_off, src + src_off, len);
	kunmap_local(src);
	kunmap_local(dst);
}

/*
 * Copies @len bytes between @page at @offset and a buffer
 * (include/linux/highmem.h); the range may not run past the page.
 */
static inline void memcpy_from_page(char *to, struct page *page, size_t offset, size_t len)
{
	char *from = (char *)kmap_local_page(page);

	VM_BUG_ON(offset + len > PAGE_SIZE);
	memcpy(to, from + offset, len);
	kunmap_local(from);
}

static inline void memcpy_to_page(struct page *page, size_t offset, const char *from, size_t len)
{
	char *to = (char *)kmap_local_page(page);

	VM_BUG_ON(offset + len > PAGE_SIZE);
	memcpy(to + offset, from, len);
	flush_dcache_page(page);
	kunmap_local(to);
}

/* No page is in high memory: every page has a kernel address. */
static inline bool PageHighMem(const struct page *page)
{
	return false;
}

struct bio_vec {
	struct page *bv_page;
	unsigned int bv_len;
	unsigned int bv_offset;
};

static inline void bvec_set_page(struct bio_vec *bv, struct page *page, unsigned int len,
				 unsigned int offset)
{
	bv->bv_page = page;
	bv->bv_len = len;
	bv->bv_offset = offset;
}

static inline void bvec_set_virt(struct bio_vec *bv, void *vaddr, unsigned int len)
{
	bvec_set_page(bv, virt_to_page(vaddr), len, offset_in_page(vaddr));
}

struct bvec_iter {
	sector_t bi_sector;	   /* position on the device, 512-byte units */
	unsigned int bi_size;	   /* bytes not yet iterated over */
	unsigned int bi_idx;	   /* which bio_vec we are in */
	unsigned int bi_bvec_done; /* bytes of that bio_vec already consumed */
};

/* The bvec at the iterator, possibly spanning several pages. */
#define __bvec_iter_bvec(bvec, iter) (&(bvec)[(iter).bi_idx])

#define mp_bvec_iter_page(bvec, iter) (__bvec_iter_bvec((bvec), (iter))->bv_page)
#define mp_bvec_iter_len(bvec, iter) \
	min((iter).bi_size, __bvec_iter_bvec((bvec), (iter))->bv_len - (iter).bi_bvec_done)
#define mp_bvec_iter_offset(bvec, iter) \
	(__bvec_iter_bvec((bvec), (iter))->bv_offset + (iter).bi_bvec_done)
#define mp_bvec_iter_page_idx(bvec, iter) (mp_bvec_iter_offset((bvec), (iter)) / PAGE_SIZE)
#define mp_bvec_iter_bvec(bvec, iter)                             \
	((struct bio_vec){                                        \
		.bv_page = mp_bvec_iter_page((bvec), (iter)),     \
		.bv_len = mp_bvec_iter_len((bvec), (iter)),       \
		.bv_offset = mp_bvec_iter_offset((bvec), (iter)), \
	})

/* The same, clipped to one page. */
#define bvec_iter_offset(bvec, iter) (mp_bvec_iter_offset((bvec), (iter)) % PAGE_SIZE)
#define bvec_iter_len(bvec, iter)                             \
	min_t(unsigned int, mp_bvec_iter_len((bvec), (iter)), \
	      PAGE_SIZE - bvec_iter_offset((bvec), (iter)))
#define bvec_iter_page(bvec, iter) \
	nth_page(mp_bvec_iter_page((bvec), (iter)), mp_bvec_iter_page_idx((bvec), (iter)))
#define bvec_iter_bvec(bvec, iter)                                           \
	((struct bio_vec){                                                   \
		.bv_page = bvec_iter_page((bvec), (iter)),                   \
		.bv_len = bvec_iter_len((bvec), (iter)),                     \
		.bv_offset = (unsigned int)bvec_iter_offset((bvec), (iter)), \
	})

static inline bool bvec_iter_advance(const struct bio_vec *bv, struct bvec_iter *iter,
				     unsigned int bytes)
{
	unsigned int idx = iter->bi_idx;

	if (WARN_ONCE(bytes > iter->bi_size, "Attempted to advance past end of bvec iter\n")) {
		iter->bi_size = 0;
		return false;
	}

	iter->bi_size -= bytes;
	bytes += iter->bi_bvec_done;

	while (bytes && bytes >= bv[idx].bv_len) {
		bytes -= bv[idx].bv_len;
		idx++;
	}

	iter->bi_idx = idx;
	iter->bi_bvec_done = bytes;
	return true;
}

/* Advance by exactly one (single-page) segment of length @bytes. */
static inline void bvec_iter_advance_single(const struct bio_vec *bv, struct bvec_iter *iter,
					    unsigned int bytes)
{
	unsigned int done = iter->bi_bvec_done + bytes;

	if (done == bv[iter->bi_idx].bv_len) {
		done = 0;
		iter->bi_idx++;
	}
	iter->bi_bvec_done = done;
	iter->bi_size -= bytes;
}

/* A walk over every single-page segment of a table of bvecs. */
struct bvec_iter_all {
	struct bio_vec bv;
	int idx;
	unsigned done;
};

static inline struct bio_vec *bvec_init_iter_all(struct bvec_iter_all *iter_all)
{
	iter_all->done = 0;
	iter_all->idx = 0;

	return &iter_all->bv;
}

/* Steps @iter_all to the next page of @bvec, on to the next bvec at its end. */
static inline void bvec_advance(const struct bio_vec *bvec, struct bvec_iter_all *iter_all)
{
	struct bio_vec *bv = &iter_all->bv;

	if (iter_all->done) {
		bv->bv_page++;
		bv->bv_offset = 0;
	} else {
		bv->bv_page = bvec->bv_page + (bvec->bv_offset >> PAGE_SHIFT);
		bv->bv_offset = bvec->bv_offset & ~PAGE_MASK;
	}
	bv->bv_len = min_t(unsigned int, PAGE_SIZE - bv->bv_offset, bvec->bv_len - iter_all->done);
	iter_all->done += bv->bv_len;

	if (iter_all->done == bvec->bv_len) {
		iter_all->idx++;
		iter_all->done = 0;
	}
}

#define for_each_bvec(bvl, bio_vec, iter, start)                                               \
	for (iter = (start); (iter).bi_size && ((bvl = bvec_iter_bvec((bio_vec), (iter))), 1); \
	     bvec_iter_advance_single((bio_vec), &(iter), (bvl).bv_len))

static inline phys_addr_t bvec_phys(const struct bio_vec *bvec)
{
	return PFN_PHYS(page_to_pfn(bvec->bv_page)) + bvec->bv_offset;
}

static inline void *bvec_virt(struct bio_vec *bvec)
{
	WARN_ON_ONCE(PageHighMem(bvec->bv_page));
	return (char *)page_address(bvec->bv_page) + bvec->bv_offset;
}

static inline void *bvec_kmap_local(struct bio_vec *bvec)
{
	return (char *)kmap_local_page(bvec->bv_page) + bvec->bv_offset;
}

static inline void memcpy_from_bvec(char *to, struct bio_vec *bvec)
{
	memcpy_from_page(to, bvec->bv_page, bvec->bv_offset, bvec->bv_len);
}

static inline void memcpy_to_bvec(struct bio_vec *bvec, const char *from)
{
	memcpy_to_page(bvec->bv_page, bvec->bv_offset, from, bvec->bv_len);
}

static inline void memzero_bvec(struct bio_vec *bvec)
{
	memzero_page(bvec->bv_page, bvec->bv_offset, bvec->bv_len);
}

#endif /* UK_LINUX_BVEC_H */
