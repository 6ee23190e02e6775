// SPDX-License-Identifier: GPL-2.0-only
// block/bio.c essentials over plain memory.
//
// Upstream: block/bio.c @ v6.12
#include <cstring>

#include <uk/linux/bio.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/overflow.h>
#include <uk/linux/slab.h>

#include "blk-mq.h"
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
		/* A table of its own: a clone has none (bi_max_vecs 0). */
		if (bio->bi_max_vecs > BIO_INLINE_VECS)
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

struct bio *bio_chain_and_submit(struct bio *prev, struct bio *new_)
{
	if (prev) {
		bio_chain(prev, new_);
		submit_bio(prev);
	}
	return new_;
}

/* A new bio for @bdev, with @bio (if any) chained to it and submitted. */
struct bio *blk_next_bio(struct bio *bio, struct block_device *bdev, unsigned int nr_pages,
			 blk_opf_t opf, gfp_t gfp)
{
	return bio_chain_and_submit(bio, bio_alloc(bdev, nr_pages, opf, gfp));
}

struct bio *bio_kmalloc(unsigned short nr_vecs, gfp_t gfp_mask)
{
	struct bio *bio;

	if (nr_vecs > BIO_MAX_INLINE_VECS)
		return NULL;
	return kmalloc(struct_size(bio, bi_inline_vecs, nr_vecs), gfp_mask);
}

/*
 * Shortens @bio to @new_size bytes; a read also has the bytes past the new
 * end zeroed, since the device will not fill them. The vecs stay as they
 * are: only the size changes.
 */
static void bio_truncate(struct bio *bio, unsigned new_size)
{
	struct bio_vec bv;
	struct bvec_iter iter;
	unsigned int done = 0;
	bool truncated = false;

	if (new_size >= bio->bi_iter.bi_size)
		return;

	if (bio_op(bio) != REQ_OP_READ)
		goto exit;

	bio_for_each_segment(bv, bio, iter)
	{
		if (done + bv.bv_len > new_size) {
			unsigned offset;

			if (!truncated)
				offset = new_size - done;
			else
				offset = 0;
			zero_user(bv.bv_page, bv.bv_offset + offset, bv.bv_len - offset);
			truncated = true;
		}
		done += bv.bv_len;
	}

exit:
	bio->bi_iter.bi_size = new_size;
}

/*
 * Lets I/O reach the last sectors of a device whose size is no multiple of
 * the bio's: the part past the end is cut off. A bio that starts past the
 * end goes on whole, to fail in submit_bio_noacct().
 */
void guard_bio_eod(struct bio *bio)
{
	sector_t maxsector = bdev_nr_sectors(bio->bi_bdev);

	if (!maxsector)
		return;

	if (unlikely(bio->bi_iter.bi_sector >= maxsector))
		return;

	maxsector -= bio->bi_iter.bi_sector;
	if (likely((bio->bi_iter.bi_size >> 9) <= maxsector))
		return;

	bio_truncate(bio, maxsector << 9);
}

static int __bio_clone(struct bio *bio, struct bio *bio_src, gfp_t gfp)
{
	bio_set_flag(bio, BIO_CLONED);
	bio->bi_ioprio = bio_src->bi_ioprio;
	bio->bi_write_hint = bio_src->bi_write_hint;
	bio->bi_iter = bio_src->bi_iter;

	if (bio->bi_bdev) {
		if (bio->bi_bdev == bio_src->bi_bdev && bio_flagged(bio_src, BIO_REMAPPED))
			bio_set_flag(bio, BIO_REMAPPED);
		bio_clone_blkg_association(bio, bio_src);
	}

	if (bio_crypt_clone(bio, bio_src, gfp) < 0)
		return -ENOMEM;
	if (bio_integrity(bio_src) && bio_integrity_clone(bio, bio_src, gfp) < 0)
		return -ENOMEM;
	return 0;
}

/* The clone does not own the vecs: @bio_src must outlive it. */
struct bio *bio_alloc_clone(struct block_device *bdev, struct bio *bio_src, gfp_t gfp,
			    struct bio_set *bs)
{
	struct bio *bio;

	bio = bio_alloc_bioset(bdev, 0, bio_src->bi_opf, gfp, bs);
	if (!bio)
		return NULL;

	if (__bio_clone(bio, bio_src, gfp) < 0) {
		bio_put(bio);
		return NULL;
	}
	bio->bi_io_vec = bio_src->bi_io_vec;

	return bio;
}

int bio_init_clone(struct block_device *bdev, struct bio *bio, struct bio *bio_src, gfp_t gfp)
{
	int ret;

	bio_init(bio, bdev, bio_src->bi_io_vec, 0, bio_src->bi_opf);
	ret = __bio_clone(bio, bio_src, gfp);
	if (ret)
		bio_uninit(bio);
	return ret;
}

static void bio_wait_end_io(struct bio *bio)
{
	complete((struct completion *)bio->bi_private);
	bio_put(bio);
}

void bio_await_chain(struct bio *bio)
{
	DECLARE_COMPLETION_ONSTACK_MAP(done, bio->bi_bdev->bd_disk->lockdep_map);

	bio->bi_private = &done;
	bio->bi_end_io = bio_wait_end_io;
	bio_endio(bio);
	blk_wait_io(&done);
}

void __bio_advance(struct bio *bio, unsigned bytes)
{
	if (bio_integrity(bio))
		bio_integrity_advance(bio, bytes);

	bio_crypt_advance(bio, bytes);
	bio_advance_iter(bio, &bio->bi_iter, bytes);
}

/* Copies from @src to @dst, each from its iterator on, as far as both reach. */
void bio_copy_data_iter(struct bio *dst, struct bvec_iter *dst_iter, struct bio *src,
			struct bvec_iter *src_iter)
{
	while (src_iter->bi_size && dst_iter->bi_size) {
		struct bio_vec src_bv = bio_iter_iovec(src, *src_iter);
		struct bio_vec dst_bv = bio_iter_iovec(dst, *dst_iter);
		unsigned int bytes = min(src_bv.bv_len, dst_bv.bv_len);
		void *src_buf = bvec_kmap_local(&src_bv);
		void *dst_buf = bvec_kmap_local(&dst_bv);

		memcpy(dst_buf, src_buf, bytes);

		kunmap_local(dst_buf);
		kunmap_local(src_buf);

		bio_advance_iter_single(src, src_iter, bytes);
		bio_advance_iter_single(dst, dst_iter, bytes);
	}
}

void bio_copy_data(struct bio *dst, struct bio *src)
{
	struct bvec_iter src_iter = src->bi_iter;
	struct bvec_iter dst_iter = dst->bi_iter;

	bio_copy_data_iter(dst, &dst_iter, src, &src_iter);
}

struct bio *bio_split(struct bio *bio, int sectors, gfp_t gfp, struct bio_set *bs)
{
	struct bio *split;

	BUG_ON(sectors <= 0);
	BUG_ON(sectors >= bio_sectors(bio));

	/* A zone append cannot be split: the device picks its sector. */
	if (WARN_ON_ONCE(bio_op(bio) == REQ_OP_ZONE_APPEND))
		return NULL;

	split = bio_alloc_clone(bio->bi_bdev, bio, gfp, bs);
	if (!split)
		return NULL;

	split->bi_iter.bi_size = sectors << 9;

	if (bio_integrity(split))
		bio_integrity_trim(split);

	bio_advance(bio, split->bi_iter.bi_size);

	if (bio_flagged(bio, BIO_TRACE_COMPLETION))
		bio_set_flag(split, BIO_TRACE_COMPLETION);

	return split;
}

void bio_trim(struct bio *bio, sector_t offset, sector_t size)
{
	if (WARN_ON_ONCE(offset > BIO_MAX_SECTORS || size > BIO_MAX_SECTORS ||
			 offset + size > bio_sectors(bio)))
		return;

	size <<= 9;
	if (offset == 0 && size == bio->bi_iter.bi_size)
		return;

	bio_advance(bio, offset << 9);
	bio->bi_iter.bi_size = size;

	if (bio_integrity(bio))
		bio_integrity_trim(bio);
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
