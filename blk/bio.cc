// SPDX-License-Identifier: GPL-2.0-only
// block/bio.c essentials over plain memory.
//
// Upstream: block/bio.c @ v6.12
#include <cstring>

#include <uk/linux/bio.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>

#include "blk-off.h"

/*
 * Sets up a bio the caller allocated, over @table of @max_vecs vecs: every
 * field but the inline vecs, one by one (no memset on the fast path).
 */
void bio_init(struct bio *bio, struct block_device *bdev, struct bio_vec *table,
	      unsigned short max_vecs, blk_opf_t opf)
{
	bio->bi_next = NULL;
	bio->bi_bdev = bdev;
	bio->bi_opf = opf;
	bio->bi_flags = 0;
	bio->bi_ioprio = 0;
	bio->bi_write_hint = 0;
	bio->bi_status = 0;
	bio->bi_iter.bi_sector = 0;
	bio->bi_iter.bi_size = 0;
	bio->bi_iter.bi_idx = 0;
	bio->bi_iter.bi_bvec_done = 0;
	bio->bi_end_io = NULL;
	bio->bi_private = NULL;
#ifdef CONFIG_BLK_CGROUP
	bio->bi_blkg = NULL;
	bio->bi_issue.value = 0;
	if (bdev)
		bio_associate_blkg(bio);
#ifdef CONFIG_BLK_CGROUP_IOCOST
	bio->bi_iocost_cost = 0;
#endif
#endif
#ifdef CONFIG_BLK_INLINE_ENCRYPTION
	bio->bi_crypt_context = NULL;
#endif
#ifdef CONFIG_BLK_DEV_INTEGRITY
	bio->bi_integrity = NULL;
#endif
	bio->bi_vcnt = 0;

	atomic_set(&bio->__bi_remaining, 1);
	atomic_set(&bio->__bi_cnt, 1);
	bio->bi_cookie = BLK_QC_T_NONE;

	bio->bi_max_vecs = max_vecs;
	bio->bi_io_vec = table;
	bio->bi_pool = NULL;
}

/* Drops what bio_init() attached; with cgroups, integrity and crypto off, nothing. */
void bio_uninit(struct bio *bio)
{
#ifdef CONFIG_BLK_CGROUP
	if (bio->bi_blkg) {
		blkg_put(bio->bi_blkg);
		bio->bi_blkg = NULL;
	}
#endif
	if (bio_integrity(bio))
		bio_integrity_free(bio);

	bio_crypt_free_ctx(bio);
}

void bio_reset(struct bio *bio, struct block_device *bdev, blk_opf_t opf)
{
	bio_uninit(bio);
	memset(bio, 0, BIO_RESET_BYTES);
	atomic_set(&bio->__bi_remaining, 1);
	bio->bi_bdev = bdev;
	if (bio->bi_bdev)
		bio_associate_blkg(bio);
	bio->bi_opf = opf;
}

/*
 * A bio_set: one slab of front_pad + bio + BIO_INLINE_VECS vecs (the
 * kernel's bio_slab with its back_pad) with a mempool of pool_size of them,
 * so that a bio allocation that may sleep does not fail; longer vec tables
 * come from kmalloc (the kernel's biovec slabs and pool).
 */
int bioset_init(struct bio_set *bs, unsigned int pool_size, unsigned int front_pad, int flags)
{
	unsigned int back_pad =
		(flags & BIOSET_NEED_BVECS) ? BIO_INLINE_VECS * sizeof(struct bio_vec) : 0;

	bs->front_pad = front_pad;
	bs->back_pad = back_pad;
	bs->bio_slab = kmem_cache_create("bio", front_pad + sizeof(struct bio) + back_pad,
					 __alignof__(struct bio), 0, NULL);
	if (!bs->bio_slab)
		return -ENOMEM;
	if (mempool_init_slab_pool(&bs->bio_pool, pool_size, bs->bio_slab))
		goto bad;
	return 0;
bad:
	bioset_exit(bs);
	return -ENOMEM;
}

void bioset_exit(struct bio_set *bs)
{
	mempool_exit(&bs->bio_pool);
	kmem_cache_destroy(bs->bio_slab);
	bs->bio_slab = NULL;
}

struct bio *bio_alloc_bioset(struct block_device *bdev, unsigned short nr_vecs, blk_opf_t opf,
			     gfp_t gfp_mask, struct bio_set *bs)
{
	struct bio_vec *bvl = NULL;
	struct bio *bio;
	void *p;

	if (WARN_ON_ONCE(!bs->back_pad && nr_vecs))
		return NULL;
	if (nr_vecs > BIO_MAX_VECS)
		return NULL;

	p = mempool_alloc(&bs->bio_pool, gfp_mask);
	if (unlikely(!p))
		return NULL;
	bio = (struct bio *)((char *)p + bs->front_pad);

	if (nr_vecs > BIO_INLINE_VECS) {
		bvl = (struct bio_vec *)kmalloc_array(nr_vecs, sizeof(*bvl), gfp_mask);
		if (unlikely(!bvl)) {
			mempool_free(p, &bs->bio_pool);
			return NULL;
		}
	} else if (nr_vecs) {
		bvl = bio->bi_inline_vecs;
	}
	bio_init(bio, bdev, bvl, nr_vecs, opf);
	bio->bi_pool = bs;
	return bio;
}

struct bio *bio_alloc(struct block_device *bdev, unsigned short nr_vecs, blk_opf_t opf,
		      gfp_t gfp_mask)
{
	struct bio *bio;

	if (nr_vecs > BIO_MAX_VECS)
		return NULL;
	bio = kmalloc(sizeof(*bio) + nr_vecs * sizeof(struct bio_vec), gfp_mask);
	if (unlikely(!bio))
		return NULL;
	bio_init(bio, bdev, nr_vecs ? bio->bi_inline_vecs : NULL, nr_vecs, opf);
	return bio;
}

static void bio_free(struct bio *bio)
{
	struct bio_set *bs = bio->bi_pool;

	bio_uninit(bio);
	if (bs) {
		if (bio->bi_io_vec != bio->bi_inline_vecs)
			kfree(bio->bi_io_vec);
		mempool_free((char *)bio - bs->front_pad, &bs->bio_pool);
	} else {
		kfree(bio);
	}
}

void bio_put(struct bio *bio)
{
	if (unlikely(bio_flagged(bio, BIO_REFFED))) {
		BUG_ON(!atomic_read(&bio->__bi_cnt));
		if (!atomic_dec_and_test(&bio->__bi_cnt))
			return;
	}
	bio_free(bio);
}

void __bio_add_page(struct bio *bio, struct page *page, unsigned int len, unsigned int off)
{
	WARN_ON_ONCE(bio_flagged(bio, BIO_CLONED));
	WARN_ON_ONCE(bio->bi_vcnt >= bio->bi_max_vecs);

	bvec_set_page(&bio->bi_io_vec[bio->bi_vcnt], page, len, off);
	bio->bi_iter.bi_size += len;
	bio->bi_vcnt++;
}

/* Merge into the last bvec if the new range continues it in memory. */
static bool bio_try_merge_page(struct bio *bio, struct page *page, unsigned int len,
			       unsigned int off)
{
	struct bio_vec *bv;

	if (!bio->bi_vcnt)
		return false;
	bv = &bio->bi_io_vec[bio->bi_vcnt - 1];
	if ((char *)page_address(bv->bv_page) + bv->bv_offset + bv->bv_len !=
	    (char *)page_address(page) + off)
		return false;
	if (bio->bi_iter.bi_size > UINT_MAX - len)
		return false;
	bv->bv_len += len;
	bio->bi_iter.bi_size += len;
	return true;
}

int bio_add_page(struct bio *bio, struct page *page, unsigned int len, unsigned int off)
{
	if (WARN_ON_ONCE(bio_flagged(bio, BIO_CLONED)))
		return 0;
	if (bio->bi_iter.bi_size > UINT_MAX - len)
		return 0;
	if (bio_try_merge_page(bio, page, len, off))
		return len;
	if (bio->bi_vcnt >= bio->bi_max_vecs)
		return 0;
	__bio_add_page(bio, page, len, off);
	return len;
}

void bio_add_virt_nofail(struct bio *bio, void *vaddr, unsigned int len)
{
	__bio_add_page(bio, virt_to_page(vaddr), len, offset_in_page(vaddr));
}

void zero_fill_bio_iter(struct bio *bio, struct bvec_iter start)
{
	struct bio_vec bv;
	struct bvec_iter iter;

	__bio_for_each_segment(bv, bio, iter, start) memzero_bvec(&bv);
}

/*
 * A chained bio completes only when its last remaining reference does.
 * The atomic_dec_and_test() is fully ordered, so the completing caller sees
 * every bi_status store made by the others (pairs with bio_inc_remaining()).
 */
static inline bool bio_remaining_done(struct bio *bio)
{
	if (!bio_flagged(bio, BIO_CHAIN))
		return true;

	BUG_ON(atomic_read(&bio->__bi_remaining) <= 0);

	if (atomic_dec_and_test(&bio->__bi_remaining)) {
		bio_clear_flag(bio, BIO_CHAIN);
		return true;
	}
	return false;
}

static struct bio *__bio_chain_endio(struct bio *bio)
{
	struct bio *parent = (struct bio *)bio->bi_private;

	if (bio->bi_status && !parent->bi_status)
		parent->bi_status = bio->bi_status;
	bio_put(bio);
	return parent;
}

static void bio_chain_endio(struct bio *bio)
{
	bio_endio(__bio_chain_endio(bio));
}

void bio_chain(struct bio *bio, struct bio *parent)
{
	BUG_ON(bio->bi_private || bio->bi_end_io);

	bio->bi_private = parent;
	bio->bi_end_io = bio_chain_endio;
	bio_inc_remaining(parent);
}

void bio_endio(struct bio *bio)
{
again:
	if (!bio_remaining_done(bio))
		return;
	if (!bio_integrity_endio(bio))
		return;

	blk_zone_bio_endio(bio);

	rq_qos_done_bio(bio);

	if (bio->bi_bdev && bio_flagged(bio, BIO_TRACE_COMPLETION)) {
		trace_block_bio_complete(bdev_get_queue(bio->bi_bdev), bio);
		bio_clear_flag(bio, BIO_TRACE_COMPLETION);
	}

	/* A chain is walked up in this loop, not by recursing through ->bi_end_io. */
	if (bio->bi_end_io == bio_chain_endio) {
		bio = __bio_chain_endio(bio);
		goto again;
	}

#ifdef CONFIG_BLK_CGROUP
	/* Covers the callers of bio_init() that never call bio_uninit(). */
	if (bio->bi_blkg) {
		blkg_put(bio->bi_blkg);
		bio->bi_blkg = NULL;
	}
#endif

	if (bio->bi_end_io)
		bio->bi_end_io(bio);
}
