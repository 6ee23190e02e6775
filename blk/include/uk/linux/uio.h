/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O iterators (include/linux/uio.h, lib/iov_iter.c): struct iov_iter, in
 * its ITER_KVEC and ITER_BVEC forms over kernel memory, stepping it on and
 * back (iov_iter_advance(), iov_iter_revert()) and listing the pages under
 * it (iov_iter_extract_pages()); and in its ITER_UBUF and ITER_IOVEC forms,
 * which fs/aio.c's import_ubuf() and __import_iovec() build over a
 * program's buffers and which the aio file operations walk by segment.
 *
 * Kernel virtual addresses are identity mapped (<uk/linux/bvec.h>), so the
 * pages under a kvec are virt_to_page() of each page-sized step through its
 * bytes, whatever allocator they came from. No iterator built here is
 * user-backed: extraction lists pages without taking references or pins,
 * and an iterator of any other type gets -EFAULT, as in the kernel.
 *
 */
#ifndef UK_LINUX_UIO_H
#define UK_LINUX_UIO_H

#include <sys/uio.h>

#include <uk/linux/bvec.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>
#include <uk/linux/types.h>

typedef unsigned int iov_iter_extraction_t;

struct kvec {
	void *iov_base; /* a kernel address */
	size_t iov_len;
};

enum iter_type {
	ITER_UBUF,
	ITER_IOVEC,
	ITER_BVEC,
	ITER_KVEC,
	ITER_FOLIOQ,
	ITER_XARRAY,
	ITER_DISCARD,
};

/* The direction of an iov_iter: data flows out of it, or into it. */
#define ITER_SOURCE 1 /* as WRITE */
#define ITER_DEST 0   /* as READ */

/* Pages for peer-to-peer DMA may be listed (nothing here sets it). */
#define ITER_ALLOW_P2PDMA ((iov_iter_extraction_t)0x01)

/* The most one read or write moves (include/linux/fs.h). */
#define MAX_RW_COUNT (INT_MAX & PAGE_MASK)

struct iov_iter {
	u8 iter_type;
	bool nofault;
	bool data_source;
	size_t iov_offset; /* bytes of the current segment already passed */
	/*
	 * An ITER_UBUF iterator's buffer and count read as one struct iovec,
	 * so that iter_iov() can hand it out as a one-segment array.
	 */
	union {
		struct iovec __ubuf_iovec;
		struct {
			union {
				const struct iovec *__iov;
				const struct kvec *kvec;
				const struct bio_vec *bvec;
				void __user *ubuf;
			};
			size_t count; /* bytes left */
		};
	};
	unsigned long nr_segs;
};

/* The iovec array of a user-backed iterator (one segment for ITER_UBUF). */
static inline const struct iovec *iter_iov(const struct iov_iter *iter)
{
	if (iter->iter_type == ITER_UBUF)
		return (const struct iovec *)&iter->__ubuf_iovec;
	return iter->__iov;
}

static inline enum iter_type iov_iter_type(const struct iov_iter *i)
{
	return (enum iter_type)i->iter_type;
}

static inline bool iter_is_ubuf(const struct iov_iter *i)
{
	return iov_iter_type(i) == ITER_UBUF;
}

static inline bool iter_is_iovec(const struct iov_iter *i)
{
	return iov_iter_type(i) == ITER_IOVEC;
}

static inline bool iov_iter_is_kvec(const struct iov_iter *i)
{
	return iov_iter_type(i) == ITER_KVEC;
}

static inline bool iov_iter_is_bvec(const struct iov_iter *i)
{
	return iov_iter_type(i) == ITER_BVEC;
}

static inline bool iov_iter_is_discard(const struct iov_iter *i)
{
	return iov_iter_type(i) == ITER_DISCARD;
}

static inline bool user_backed_iter(const struct iov_iter *i)
{
	return iter_is_ubuf(i) || iter_is_iovec(i);
}

static inline size_t iov_iter_count(const struct iov_iter *i)
{
	return i->count;
}

/* Whether extracted pages are pinned (user memory) or merely listed. */
static inline bool iov_iter_extract_will_pin(const struct iov_iter *iter)
{
	return user_backed_iter(iter);
}

/* @count bytes over @nr_segs kernel buffers. */
static inline void iov_iter_kvec(struct iov_iter *i, unsigned int direction,
				 const struct kvec *kvec, unsigned long nr_segs, size_t count)
{
	WARN_ON(direction & ~(READ | WRITE));
	*i = {};
	i->iter_type = ITER_KVEC;
	i->data_source = direction;
	i->kvec = kvec;
	i->nr_segs = nr_segs;
	i->iov_offset = 0;
	i->count = count;
}

/* @count bytes of one user buffer, at @buf. */
static inline void iov_iter_ubuf(struct iov_iter *i, unsigned int direction, void __user *buf,
				 size_t count)
{
	WARN_ON(direction & ~(READ | WRITE));
	*i = {};
	i->iter_type = ITER_UBUF;
	i->data_source = direction;
	i->ubuf = buf;
	i->count = count;
	i->nr_segs = 1;
}

/* @count bytes over @nr_segs iovecs of user buffers (lib/iov_iter.c). */
static inline void iov_iter_init(struct iov_iter *i, unsigned int direction,
				 const struct iovec *iov, unsigned long nr_segs, size_t count)
{
	WARN_ON(direction & ~(READ | WRITE));
	*i = {};
	i->iter_type = ITER_IOVEC;
	i->nofault = false;
	i->data_source = direction;
	i->__iov = iov;
	i->nr_segs = nr_segs;
	i->iov_offset = 0;
	i->count = count;
}

/* @count bytes over @nr_segs bvecs. */
static inline void iov_iter_bvec(struct iov_iter *i, unsigned int direction,
				 const struct bio_vec *bvec, unsigned long nr_segs, size_t count)
{
	WARN_ON(direction & ~(READ | WRITE));
	*i = {};
	i->iter_type = ITER_BVEC;
	i->data_source = direction;
	i->bvec = bvec;
	i->nr_segs = nr_segs;
	i->iov_offset = 0;
	i->count = count;
}

static inline void iov_iter_bvec_advance(struct iov_iter *i, size_t size)
{
	const struct bio_vec *bvec, *end;

	if (!i->count)
		return;
	i->count -= size;

	size += i->iov_offset;
	for (bvec = i->bvec, end = bvec + i->nr_segs; bvec < end; bvec++) {
		if (likely(size < bvec->bv_len))
			break;
		size -= bvec->bv_len;
	}
	i->iov_offset = size;
	i->nr_segs -= bvec - i->bvec;
	i->bvec = bvec;
}

static inline void iov_iter_kvec_advance(struct iov_iter *i, size_t size)
{
	const struct kvec *kvec, *end;

	if (!i->count)
		return;
	i->count -= size;

	size += i->iov_offset;
	for (kvec = i->kvec, end = kvec + i->nr_segs; kvec < end; kvec++) {
		if (likely(size < kvec->iov_len))
			break;
		size -= kvec->iov_len;
	}
	i->iov_offset = size;
	i->nr_segs -= kvec - i->kvec;
	i->kvec = kvec;
}

/* Moves @i on by @size bytes, at most to its end. */
static inline void iov_iter_advance(struct iov_iter *i, size_t size)
{
	if (unlikely(i->count < size))
		size = i->count;
	if (iov_iter_is_kvec(i))
		iov_iter_kvec_advance(i, size);
	else if (iov_iter_is_bvec(i))
		iov_iter_bvec_advance(i, size);
	else if (iov_iter_is_discard(i))
		i->count -= size;
}

/* Moves @i back by @unroll bytes, which it must have been advanced by. */
static inline void iov_iter_revert(struct iov_iter *i, size_t unroll)
{
	if (!unroll)
		return;
	if (WARN_ON(unroll > MAX_RW_COUNT))
		return;
	i->count += unroll;
	if (unlikely(iov_iter_is_discard(i)))
		return;
	if (unroll <= i->iov_offset) {
		i->iov_offset -= unroll;
		return;
	}
	unroll -= i->iov_offset;
	if (iov_iter_is_bvec(i)) {
		const struct bio_vec *bvec = i->bvec;

		for (;;) {
			size_t n = (--bvec)->bv_len;

			i->nr_segs++;
			if (unroll <= n) {
				i->bvec = bvec;
				i->iov_offset = n - unroll;
				return;
			}
			unroll -= n;
		}
	} else {
		const struct kvec *kvec = i->kvec;

		for (;;) {
			size_t n = (--kvec)->iov_len;

			i->nr_segs++;
			if (unroll <= n) {
				i->kvec = kvec;
				i->iov_offset = n - unroll;
				return;
			}
			unroll -= n;
		}
	}
}

/*
 * How many page pointers to list for @size bytes from @start in the first
 * page, at most @maxpages; allocates the array when *@res is NULL.
 */
static inline int want_pages_array(struct page ***res, size_t size, size_t start,
				   unsigned int maxpages)
{
	unsigned int count = DIV_ROUND_UP(size + start, PAGE_SIZE);

	if (count > maxpages)
		count = maxpages;
	WARN_ON(!count);
	if (!*res) {
		*res = (struct page **)kvmalloc_array(count, sizeof(struct page *), GFP_KERNEL);
		if (!*res)
			return 0;
	}
	return count;
}

/* The pages of the current bvec from the iterator on, no further. */
static inline ssize_t iov_iter_extract_bvec_pages(struct iov_iter *i, struct page ***pages,
						  size_t maxsize, unsigned int maxpages,
						  iov_iter_extraction_t extraction_flags,
						  size_t *offset0)
{
	struct page **p, *page;
	size_t skip = i->iov_offset, offset, size;
	unsigned int k;

	for (;;) {
		if (i->nr_segs == 0)
			return 0;
		size = min(maxsize, i->bvec->bv_len - skip);
		if (size)
			break;
		i->iov_offset = 0;
		i->nr_segs--;
		i->bvec++;
		skip = 0;
	}

	skip += i->bvec->bv_offset;
	page = i->bvec->bv_page + skip / PAGE_SIZE;
	offset = skip % PAGE_SIZE;
	*offset0 = offset;

	maxpages = want_pages_array(pages, size, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	p = *pages;
	for (k = 0; k < maxpages; k++)
		p[k] = page + k;

	size = min_t(size_t, size, maxpages * PAGE_SIZE - offset);
	iov_iter_advance(i, size);
	return size;
}

/* The pages under the current kvec from the iterator on, no further. */
static inline ssize_t iov_iter_extract_kvec_pages(struct iov_iter *i, struct page ***pages,
						  size_t maxsize, unsigned int maxpages,
						  iov_iter_extraction_t extraction_flags,
						  size_t *offset0)
{
	struct page **p;
	const char *kaddr;
	size_t skip = i->iov_offset, offset, len, size;
	unsigned int k;

	for (;;) {
		if (i->nr_segs == 0)
			return 0;
		size = min(maxsize, i->kvec->iov_len - skip);
		if (size)
			break;
		i->iov_offset = 0;
		i->nr_segs--;
		i->kvec++;
		skip = 0;
	}

	kaddr = (const char *)i->kvec->iov_base + skip;
	offset = (unsigned long)kaddr & ~PAGE_MASK;
	*offset0 = offset;

	maxpages = want_pages_array(pages, size, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	p = *pages;

	kaddr -= offset;
	len = offset + size;
	for (k = 0; k < maxpages; k++) {
		size_t seg = min_t(size_t, len, PAGE_SIZE);

		p[k] = virt_to_page(kaddr);
		len -= seg;
		kaddr += PAGE_SIZE;
	}

	size = min_t(size_t, size, maxpages * PAGE_SIZE - offset);
	iov_iter_advance(i, size);
	return size;
}

/*
 * Lists the pages under the next contiguous stretch of @i, up to @maxsize
 * bytes and @maxpages pages, into *@pages (allocated when NULL), and moves
 * @i past them. *@offset0 is where the bytes start in the first page.
 * Returns the bytes listed, 0 at the end, -ENOMEM or -EFAULT.
 */
static inline ssize_t iov_iter_extract_pages(struct iov_iter *i, struct page ***pages,
					     size_t maxsize, unsigned int maxpages,
					     iov_iter_extraction_t extraction_flags,
					     size_t *offset0)
{
	maxsize = min_t(size_t, min_t(size_t, maxsize, i->count), MAX_RW_COUNT);
	if (!maxsize)
		return 0;

	if (iov_iter_is_kvec(i))
		return iov_iter_extract_kvec_pages(i, pages, maxsize, maxpages, extraction_flags,
						   offset0);
	if (iov_iter_is_bvec(i))
		return iov_iter_extract_bvec_pages(i, pages, maxsize, maxpages, extraction_flags,
						   offset0);
	return -EFAULT;
}

#endif /* UK_LINUX_UIO_H */
