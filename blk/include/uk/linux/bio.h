/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * struct bio helpers (include/linux/bio.h, block/bio.c) over plain memory.
 * Bios come from kmalloc with inline bio_vecs, or from a bio_set (a slab
 * with a mempool reserve);
 * pages are user-mode identity-mapped pages (see <uk/linux/bvec.h>).
 *
 * Upstream: include/linux/bio.h @ v6.12
 */
#ifndef UK_LINUX_BIO_H
#define UK_LINUX_BIO_H

#include <uk/linux/barrier.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/bvec.h>
#include <uk/linux/gfp.h>
#include <uk/linux/list.h>
#include <uk/linux/mempool.h>
#include <uk/linux/percpu.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/workqueue.h>

#define BIO_MAX_VECS 256U

static inline bool bio_flagged(const struct bio *bio, unsigned int bit)
{
	return bio->bi_flags & (1U << bit);
}

static inline void bio_set_flag(struct bio *bio, unsigned int bit)
{
	bio->bi_flags |= (1U << bit);
}

static inline void bio_clear_flag(struct bio *bio, unsigned int bit)
{
	bio->bi_flags &= ~(1U << bit);
}

#define bio_iter_iovec(bio, iter) bvec_iter_bvec((bio)->bi_io_vec, (iter))
#define bio_iter_page(bio, iter) bvec_iter_page((bio)->bi_io_vec, (iter))
#define bio_iter_len(bio, iter) bvec_iter_len((bio)->bi_io_vec, (iter))
#define bio_iter_offset(bio, iter) bvec_iter_offset((bio)->bi_io_vec, (iter))
#define bio_page(bio) bio_iter_page((bio), (bio)->bi_iter)
#define bio_offset(bio) bio_iter_offset((bio), (bio)->bi_iter)
#define bvec_iter_sectors(iter) ((iter).bi_size >> 9)
#define bvec_iter_end_sector(iter) ((iter).bi_sector + bvec_iter_sectors((iter)))
#define bio_sectors(bio) bvec_iter_sectors((bio)->bi_iter)
#define bio_end_sector(bio) bvec_iter_end_sector((bio)->bi_iter)

static inline bool bio_has_data(struct bio *bio)
{
	return bio && bio->bi_iter.bi_size && bio_op(bio) != REQ_OP_DISCARD &&
	       bio_op(bio) != REQ_OP_SECURE_ERASE && bio_op(bio) != REQ_OP_WRITE_ZEROES;
}

static inline bool bio_no_advance_iter(const struct bio *bio)
{
	return bio_op(bio) == REQ_OP_DISCARD || bio_op(bio) == REQ_OP_SECURE_ERASE ||
	       bio_op(bio) == REQ_OP_WRITE_ZEROES;
}

static inline void *bio_data(struct bio *bio)
{
	if (bio_has_data(bio))
		return (char *)page_address(bio_page(bio)) + bio_offset(bio);
	return NULL;
}

static inline void bio_advance_iter(const struct bio *bio, struct bvec_iter *iter,
				    unsigned int bytes)
{
	iter->bi_sector += bytes >> 9;
	if (bio_no_advance_iter(bio))
		iter->bi_size -= bytes;
	else
		bvec_iter_advance(bio->bi_io_vec, iter, bytes);
}

static inline void bio_advance_iter_single(const struct bio *bio, struct bvec_iter *iter,
					   unsigned int bytes)
{
	iter->bi_sector += bytes >> 9;
	if (bio_no_advance_iter(bio))
		iter->bi_size -= bytes;
	else
		bvec_iter_advance_single(bio->bi_io_vec, iter, bytes);
}

void __bio_advance(struct bio *bio, unsigned int bytes);

/* Moves the bio's start @nbytes on: the part before it is done with. */
static inline void bio_advance(struct bio *bio, unsigned int nbytes)
{
	if (nbytes == bio->bi_iter.bi_size) {
		bio->bi_iter.bi_size = 0;
		return;
	}
	__bio_advance(bio, nbytes);
}

/* Single-page segments from @start on. */
#define __bio_for_each_segment(bvl, bio, iter, start)                                      \
	for (iter = (start); (iter).bi_size && ((bvl = bio_iter_iovec((bio), (iter))), 1); \
	     bio_advance_iter_single((bio), &(iter), (bvl).bv_len))
#define bio_for_each_segment(bvl, bio, iter) __bio_for_each_segment(bvl, bio, iter, (bio)->bi_iter)

/* Multi-page bvecs. */
#define __bio_for_each_bvec(bvl, bio, iter, start)                                       \
	for (iter = (start);                                                             \
	     (iter).bi_size && ((bvl = mp_bvec_iter_bvec((bio)->bi_io_vec, (iter))), 1); \
	     bio_advance_iter_single((bio), &(iter), (bvl).bv_len))
#define bio_for_each_bvec(bvl, bio, iter) __bio_for_each_bvec(bvl, bio, iter, (bio)->bi_iter)

#define bio_for_each_bvec_all(bvl, bio, i) \
	for (i = 0, bvl = (bio)->bi_io_vec; i < (bio)->bi_vcnt; i++, bvl++)

static inline bool bio_next_segment(const struct bio *bio, struct bvec_iter_all *iter)
{
	if (iter->idx >= bio->bi_vcnt)
		return false;

	bvec_advance(&bio->bi_io_vec[iter->idx], iter);
	return true;
}

/*
 * Every single-page segment of all of the bio's vecs, whatever its
 * iterator says: only for the bio's owner, never for a split part of it.
 */
#define bio_for_each_segment_all(bvl, bio, iter) \
	for (bvl = bvec_init_iter_all(&iter); bio_next_segment((bio), &iter);)

void bio_init(struct bio *bio, struct block_device *bdev, struct bio_vec *table,
	      unsigned short max_vecs, blk_opf_t opf);
void bio_uninit(struct bio *bio);
void bio_reset(struct bio *bio, struct block_device *bdev, blk_opf_t opf);

/* A singly linked list of bios through ->bi_next, with a tail pointer. */
struct bio_list {
	struct bio *head;
	struct bio *tail;
};

static inline int bio_list_empty(const struct bio_list *bl)
{
	return bl->head == NULL;
}

static inline void bio_list_init(struct bio_list *bl)
{
	bl->head = bl->tail = NULL;
}

static inline struct bio *bio_list_pop(struct bio_list *bl)
{
	struct bio *bio = bl->head;

	if (bio) {
		bl->head = bl->head->bi_next;
		if (!bl->head)
			bl->tail = NULL;

		bio->bi_next = NULL;
	}

	return bio;
}

static inline void bio_list_add(struct bio_list *bl, struct bio *bio)
{
	bio->bi_next = NULL;

	if (bl->tail)
		bl->tail->bi_next = bio;
	else
		bl->head = bio;

	bl->tail = bio;
}

/* Appends @bl2 to @bl; @bl2 is left as it was. */
static inline void bio_list_merge(struct bio_list *bl, struct bio_list *bl2)
{
	if (!bl2->head)
		return;

	if (bl->tail)
		bl->tail->bi_next = bl2->head;
	else
		bl->head = bl2->head;

	bl->tail = bl2->tail;
}

/*
 * A pool of bios with @front_pad bytes of the caller's in front of each
 * (block/fops.c keeps its dio there) and, with BIOSET_NEED_BVECS,
 * BIO_INLINE_VECS vecs behind it and a reserve of BIO_MAX_VECS vec tables.
 */
#define BIO_INLINE_VECS 4
/* The most inline vecs bio_kmalloc() gives a bio (UIO_MAXIOV). */
#define BIO_MAX_INLINE_VECS 1024
/* The reserve of fs_bio_set, the bio_set of bio_alloc(). */
#define BIO_POOL_SIZE 2

enum {
	BIOSET_NEED_BVECS = BIT(0),
	BIOSET_NEED_RESCUER = BIT(1),
	BIOSET_PERCPU_CACHE = BIT(2),
};

struct kmem_cache;
struct bio_alloc_cache;
struct workqueue_struct;

struct bio_set {
	struct kmem_cache *bio_slab;
	unsigned int front_pad;

	/* per-CPU lists of freed bios (BIOSET_PERCPU_CACHE, REQ_ALLOC_CACHE) */
	struct bio_alloc_cache __percpu *cache;

	mempool_t bio_pool;
	mempool_t bvec_pool;

	unsigned int back_pad;
	/* bios punted from a submitter that waits on this bio_set's pool */
	spinlock_t rescue_lock;
	struct bio_list rescue_list;
	struct work_struct rescue_work;
	struct workqueue_struct *rescue_workqueue;

	struct hlist_node cpuhp_dead;
};

extern struct bio_set fs_bio_set;

int biovec_init_pool(mempool_t *pool, int pool_entries);
int bioset_init(struct bio_set *bs, unsigned int pool_size, unsigned int front_pad, int flags);
void bioset_exit(struct bio_set *bs);
struct bio *bio_alloc_bioset(struct block_device *bdev, unsigned short nr_vecs, blk_opf_t opf,
			     gfp_t gfp_mask, struct bio_set *bs);
void bio_put(struct bio *bio);

/* A bio from fs_bio_set; with a mask that may sleep it never fails. */
static inline struct bio *bio_alloc(struct block_device *bdev, unsigned short nr_vecs,
				    blk_opf_t opf, gfp_t gfp_mask)
{
	return bio_alloc_bioset(bdev, nr_vecs, opf, gfp_mask, &fs_bio_set);
}

/* Vec tables of a bio_set: rounded up to a biovec slab's size. */
struct bio_vec *bvec_alloc(mempool_t *pool, unsigned short *nr_vecs, gfp_t gfp_mask);
void bvec_free(mempool_t *pool, struct bio_vec *bv, unsigned short nr_vecs);

static inline void bio_get(struct bio *bio)
{
	bio->bi_flags |= (1 << BIO_REFFED);
	smp_mb__before_atomic(); /* orders prior bio updates before the pin (bio_put) */
	atomic_inc(&bio->__bi_cnt);
}

/* Returns @len if the page segment was added, 0 if the bio is full. */
int bio_add_page(struct bio *bio, struct page *page, unsigned int len, unsigned int off);
bool bio_add_folio(struct bio *bio, struct folio *folio, size_t len, size_t off);
/* Adds a segment the caller knows fits: no merge with the last one. */
void __bio_add_page(struct bio *bio, struct page *page, unsigned int len, unsigned int off);
void bio_add_folio_nofail(struct bio *bio, struct folio *folio, size_t len, size_t off);
/* Passthrough: within @q's segment count, size, boundary and gap limits. */
int bio_add_pc_page(struct request_queue *q, struct bio *bio, struct page *page, unsigned int len,
		    unsigned int offset);
int bio_add_hw_page(struct request_queue *q, struct bio *bio, struct page *page, unsigned int len,
		    unsigned int offset, unsigned int max_sectors, bool *same_page);
int bio_add_hw_folio(struct request_queue *q, struct bio *bio, struct folio *folio, size_t len,
		     size_t offset, unsigned int max_sectors, bool *same_page);
bool bvec_try_merge_hw_page(struct request_queue *q, struct bio_vec *bv, struct page *page,
			    unsigned len, unsigned offset, bool *same_page);
/* Zoned devices only: 0 (with a warning) for every device here. */
int bio_add_zone_append_page(struct bio *bio, struct page *page, unsigned int len,
			     unsigned int offset);
/* Adds @len bytes at @vaddr, one bvec (may span pages). */
void bio_add_virt_nofail(struct bio *bio, void *vaddr, unsigned int len);

void bio_endio(struct bio *bio);
void bio_chain(struct bio *bio, struct bio *parent);
/* Chains @prev to @new and submits @prev; returns @new. */
struct bio *bio_chain_and_submit(struct bio *prev, struct bio *new_);
struct bio *blk_next_bio(struct bio *bio, struct block_device *bdev, unsigned int nr_pages,
			 blk_opf_t opf, gfp_t gfp);
/* Ends @bio and sleeps until every bio chained to it has completed. */
void bio_await_chain(struct bio *bio);
/* A bio with @nr_vecs inline vecs from kmalloc(), for bio_init(); freed with kfree(). */
struct bio *bio_kmalloc(unsigned short nr_vecs, gfp_t gfp_mask);
/* Cuts a bio that runs past the end of its device down to the device. */
void guard_bio_eod(struct bio *bio);
/* Clones sharing @bio_src's vecs: allocated from @bs, or set up in @bio. */
struct bio *bio_alloc_clone(struct block_device *bdev, struct bio *bio_src, gfp_t gfp,
			    struct bio_set *bs);
int bio_init_clone(struct block_device *bdev, struct bio *bio, struct bio *bio_src, gfp_t gfp);
/* Splits the first @sectors off @bio into a clone from @bs. */
struct bio *bio_split(struct bio *bio, int sectors, gfp_t gfp, struct bio_set *bs);
/* Narrows @bio to @size sectors from @offset on. */
void bio_trim(struct bio *bio, sector_t offset, sector_t size);
void bio_copy_data_iter(struct bio *dst, struct bvec_iter *dst_iter, struct bio *src,
			struct bvec_iter *src_iter);
void bio_copy_data(struct bio *dst, struct bio *src);
/* Hands every page of @bio back to the page allocator, one page at a time. */
void bio_free_pages(struct bio *bio);

/*
 * Filling a bio from an I/O iterator (<uk/linux/uio.h>): a bvec iterator's
 * vecs are taken over as they are; a kvec iterator's pages are added.
 */
struct iov_iter;
int bio_iov_iter_get_pages(struct bio *bio, struct iov_iter *iter);
void bio_iov_bvec_set(struct bio *bio, struct iov_iter *iter);
void zero_fill_bio_iter(struct bio *bio, struct bvec_iter iter);

static inline void zero_fill_bio(struct bio *bio)
{
	zero_fill_bio_iter(bio, bio->bi_iter);
}

static inline void bio_io_error(struct bio *bio)
{
	bio->bi_status = BLK_STS_IOERR;
	bio_endio(bio);
}

static inline void bio_wouldblock_error(struct bio *bio)
{
	bio_set_flag(bio, BIO_QUIET);
	bio->bi_status = BLK_STS_AGAIN;
	bio_endio(bio);
}

static inline void bio_inc_remaining(struct bio *bio)
{
	bio_set_flag(bio, BIO_CHAIN);
	smp_mb__before_atomic(); /* flag visible before the count, see bio_remaining_done() */
	atomic_inc(&bio->__bi_remaining);
}

#endif /* UK_LINUX_BIO_H */
