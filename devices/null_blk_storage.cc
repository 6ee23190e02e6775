// SPDX-License-Identifier: GPL-2.0-only
// drivers/block/null_blk/main.c, memory backing: pages in radix trees, the
// write-back cache, discard, badblocks and the data transfer.
//
// Upstream: drivers/block/null_blk/main.c @ v6.12
#include <cstring>

#include <uk/devices/null_blk.h>
#include <uk/linux/bitops.h>
#include <uk/linux/errno.h>
#include <uk/linux/find.h>
#include <uk/linux/gfp.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>

#undef pr_fmt
#define pr_fmt(fmt) "null_blk: " fmt

/* Pages per gang lookup when freeing or flushing the cache. */
#define FREE_BATCH 16

static inline int null_cache_active(struct nullb *nullb)
{
	return test_bit(NULLB_DEV_FL_CACHE, &nullb->dev->flags);
}

static struct nullb_page *null_alloc_page(void)
{
	struct nullb_page *t_page;

	t_page = (struct nullb_page *)kmalloc(sizeof(struct nullb_page), GFP_NOIO);
	if (!t_page)
		return NULL;

	t_page->page = alloc_pages(GFP_NOIO, 0);
	if (!t_page->page) {
		kfree(t_page);
		return NULL;
	}

	memset(t_page->bitmap, 0, sizeof(t_page->bitmap));
	return t_page;
}

static void null_free_page(struct nullb_page *t_page)
{
	__set_bit(NULLB_PAGE_FREE, t_page->bitmap);
	/* A cache page being flushed is freed by the flusher. */
	if (test_bit(NULLB_PAGE_LOCK, t_page->bitmap))
		return;
	__free_page(t_page->page);
	kfree(t_page);
}

static bool null_page_empty(struct nullb_page *page)
{
	int size = MAP_SZ - 2;

	return find_first_bit(page->bitmap, size) == (unsigned long)size;
}

/*
 * The v3.4 radix tree has no radix_tree_delete_item(): this is its contract
 * for the callers below. The entry at @index goes only when it is @item (any
 * entry when @item is NULL); the deleted entry is returned, or NULL.
 */
static void *radix_tree_delete_item(struct radix_tree_root *root, unsigned long index, void *item)
{
	if (item && radix_tree_lookup(root, index) != item)
		return NULL;
	return radix_tree_delete(root, index);
}

static void null_free_sector(struct nullb *nullb, sector_t sector, bool is_cache)
{
	unsigned int sector_bit;
	u64 idx;
	struct nullb_page *t_page, *ret;
	struct radix_tree_root *root;

	root = is_cache ? &nullb->dev->cache : &nullb->dev->data;
	idx = sector >> PAGE_SECTORS_SHIFT;
	sector_bit = (sector & SECTOR_MASK);

	t_page = (struct nullb_page *)radix_tree_lookup(root, idx);
	if (t_page) {
		__clear_bit(sector_bit, t_page->bitmap);

		if (null_page_empty(t_page)) {
			ret = (struct nullb_page *)radix_tree_delete_item(root, idx, t_page);
			WARN_ON(ret != t_page);
			null_free_page(ret);
			if (is_cache)
				nullb->dev->curr_cache -= PAGE_SIZE;
		}
	}
}

static struct nullb_page *null_radix_tree_insert(struct nullb *nullb, u64 idx,
						 struct nullb_page *t_page, bool is_cache)
{
	struct radix_tree_root *root;

	root = is_cache ? &nullb->dev->cache : &nullb->dev->data;

	if (radix_tree_insert(root, idx, t_page)) {
		/* Lost a race (or -ENOMEM): use what is there. */
		null_free_page(t_page);
		t_page = (struct nullb_page *)radix_tree_lookup(root, idx);
		WARN_ON(!t_page || t_page->idx != idx);
	} else if (is_cache) {
		nullb->dev->curr_cache += PAGE_SIZE;
	}
	return t_page;
}

void null_free_device_storage(struct nullb_device *dev, bool is_cache)
{
	unsigned long pos = 0;
	int nr_pages;
	struct nullb_page *ret, *t_pages[FREE_BATCH];
	struct radix_tree_root *root;

	root = is_cache ? &dev->cache : &dev->data;

	do {
		int i;

		nr_pages = radix_tree_gang_lookup(root, (void **)t_pages, pos, FREE_BATCH);

		for (i = 0; i < nr_pages; i++) {
			pos = t_pages[i]->idx;
			ret = (struct nullb_page *)radix_tree_delete_item(root, pos, t_pages[i]);
			WARN_ON(ret != t_pages[i]);
			null_free_page(ret);
		}
		pos++;
	} while (nr_pages == FREE_BATCH);

	if (is_cache)
		dev->curr_cache = 0;
}

static struct nullb_page *__null_lookup_page(struct nullb *nullb, sector_t sector, bool for_write,
					     bool is_cache)
{
	unsigned int sector_bit;
	u64 idx;
	struct nullb_page *t_page;
	struct radix_tree_root *root;

	idx = sector >> PAGE_SECTORS_SHIFT;
	sector_bit = (sector & SECTOR_MASK);

	root = is_cache ? &nullb->dev->cache : &nullb->dev->data;
	t_page = (struct nullb_page *)radix_tree_lookup(root, idx);
	WARN_ON(t_page && t_page->idx != idx);

	if (t_page && (for_write || test_bit(sector_bit, t_page->bitmap)))
		return t_page;
	return NULL;
}

static struct nullb_page *null_lookup_page(struct nullb *nullb, sector_t sector, bool for_write,
					   bool ignore_cache)
{
	struct nullb_page *page = NULL;

	if (!ignore_cache)
		page = __null_lookup_page(nullb, sector, for_write, true);
	if (page)
		return page;
	return __null_lookup_page(nullb, sector, for_write, false);
}

/* Called with nullb->lock held (irq); may drop and retake it. */
static struct nullb_page *null_insert_page(struct nullb *nullb, sector_t sector, bool ignore_cache)
	__releases(&nullb->lock) __acquires(&nullb->lock)
{
	u64 idx;
	struct nullb_page *t_page;

	t_page = null_lookup_page(nullb, sector, true, ignore_cache);
	if (t_page)
		return t_page;

	/* Allocate outside the lock; the preload keeps the insert from failing. */
	spin_unlock_irq(&nullb->lock);

	t_page = null_alloc_page();
	if (!t_page)
		goto out_lock;

	if (radix_tree_preload(GFP_NOIO))
		goto out_freepage;

	spin_lock_irq(&nullb->lock);
	idx = sector >> PAGE_SECTORS_SHIFT;
	t_page->idx = idx;
	t_page = null_radix_tree_insert(nullb, idx, t_page, !ignore_cache);
	radix_tree_preload_end();
	return t_page;

out_freepage:
	null_free_page(t_page);
out_lock:
	spin_lock_irq(&nullb->lock);
	return null_lookup_page(nullb, sector, true, ignore_cache);
}

static int null_flush_cache_page(struct nullb *nullb, struct nullb_page *c_page)
{
	int i;
	unsigned int offset;
	u64 idx;
	struct nullb_page *t_page, *ret;
	char *dst, *src;

	idx = c_page->idx;

	t_page = null_insert_page(nullb, idx << PAGE_SECTORS_SHIFT, true);

	__clear_bit(NULLB_PAGE_LOCK, c_page->bitmap);
	if (test_bit(NULLB_PAGE_FREE, c_page->bitmap)) {
		/* Discarded while we were unlocked. */
		null_free_page(c_page);
		if (t_page && null_page_empty(t_page)) {
			ret = (struct nullb_page *)radix_tree_delete_item(&nullb->dev->data, idx,
									  t_page);
			null_free_page(t_page);
		}
		return 0;
	}

	if (!t_page)
		return -ENOMEM;

	src = (char *)kmap_local_page(c_page->page);
	dst = (char *)kmap_local_page(t_page->page);

	for (i = 0; i < PAGE_SECTORS; i += (nullb->dev->blocksize >> SECTOR_SHIFT)) {
		if (test_bit(i, c_page->bitmap)) {
			offset = (i << SECTOR_SHIFT);
			memcpy(dst + offset, src + offset, nullb->dev->blocksize);
			__set_bit(i, t_page->bitmap);
		}
	}

	kunmap_local(dst);
	kunmap_local(src);

	ret = (struct nullb_page *)radix_tree_delete_item(&nullb->dev->cache, idx, c_page);
	null_free_page(ret);
	nullb->dev->curr_cache -= PAGE_SIZE;
	return 0;
}

static int null_make_cache_space(struct nullb *nullb, unsigned long n)
{
	int i, err, nr_pages;
	struct nullb_page *c_pages[FREE_BATCH];
	unsigned long flushed = 0, one_round;

again:
	if ((nullb->dev->cache_size * 1024 * 1024) > nullb->dev->curr_cache + n ||
	    nullb->dev->curr_cache == 0)
		return 0;

	nr_pages = radix_tree_gang_lookup(&nullb->dev->cache, (void **)c_pages,
					  nullb->cache_flush_pos, FREE_BATCH);
	/*
	 * null_flush_cache_page() may drop the lock: mark the pages so that a
	 * concurrent free defers to us instead of freeing under our feet.
	 */
	for (i = 0; i < nr_pages; i++) {
		nullb->cache_flush_pos = c_pages[i]->idx;
		if (test_bit(NULLB_PAGE_LOCK, c_pages[i]->bitmap))
			c_pages[i] = NULL; /* someone else is flushing it */
		else
			__set_bit(NULLB_PAGE_LOCK, c_pages[i]->bitmap);
	}

	one_round = 0;
	for (i = 0; i < nr_pages; i++) {
		if (c_pages[i] == NULL)
			continue;
		err = null_flush_cache_page(nullb, c_pages[i]);
		if (err)
			return err;
		one_round++;
	}
	flushed += one_round << PAGE_SHIFT;

	if (n > flushed) {
		if (nr_pages == 0)
			nullb->cache_flush_pos = 0;
		if (one_round == 0) {
			/* Let the other flushers progress. */
			spin_unlock_irq(&nullb->lock);
			spin_lock_irq(&nullb->lock);
		}
		goto again;
	}
	return 0;
}

blk_status_t copy_to_nullb(struct nullb *nullb, void *source, loff_t pos, size_t n, bool is_fua)
{
	size_t temp, count = 0;
	struct nullb_page *t_page;
	sector_t sector;

	while (count < n) {
		temp = min3((size_t)nullb->dev->blocksize, n - count,
			    (size_t)(PAGE_SIZE - offset_in_page(pos)));
		sector = pos >> SECTOR_SHIFT;

		if (null_cache_active(nullb) && !is_fua)
			null_make_cache_space(nullb, PAGE_SIZE);

		t_page = null_insert_page(nullb, sector, !null_cache_active(nullb) || is_fua);
		if (!t_page)
			return BLK_STS_NOSPC;

		memcpy((char *)kmap_local_page(t_page->page) + offset_in_page(pos),
		       (char *)source + count, temp);

		__set_bit(sector & SECTOR_MASK, t_page->bitmap);

		if (is_fua)
			null_free_sector(nullb, sector, true);

		count += temp;
		pos += temp;
	}
	return BLK_STS_OK;
}

void copy_from_nullb(struct nullb *nullb, void *dest, loff_t pos, size_t n)
{
	size_t temp, count = 0;
	struct nullb_page *t_page;
	sector_t sector;

	while (count < n) {
		temp = min3((size_t)nullb->dev->blocksize, n - count,
			    (size_t)(PAGE_SIZE - offset_in_page(pos)));
		sector = pos >> SECTOR_SHIFT;

		t_page = null_lookup_page(nullb, sector, false, !null_cache_active(nullb));
		if (t_page)
			memcpy((char *)dest + count,
			       (char *)kmap_local_page(t_page->page) + offset_in_page(pos), temp);
		else
			memset((char *)dest + count, 0, temp);

		count += temp;
		pos += temp;
	}
}

static void nullb_fill_pattern(struct nullb *nullb, struct page *page, unsigned int len,
			       unsigned int off)
{
	memset_page(page, off, 0xff, len);
}

blk_status_t null_handle_discard(struct nullb_device *dev, sector_t sector, sector_t nr_sectors)
{
	struct nullb *nullb = dev->nullb;
	size_t n = nr_sectors << SECTOR_SHIFT;
	size_t temp;

	spin_lock_irq(&nullb->lock);
	while (n > 0) {
		temp = min_t(size_t, n, dev->blocksize);
		null_free_sector(nullb, sector, false);
		if (null_cache_active(nullb))
			null_free_sector(nullb, sector, true);
		sector += temp >> SECTOR_SHIFT;
		n -= temp;
	}
	spin_unlock_irq(&nullb->lock);
	return BLK_STS_OK;
}

blk_status_t null_handle_flush(struct nullb *nullb)
{
	int err;

	if (!null_cache_active(nullb))
		return 0;

	spin_lock_irq(&nullb->lock);
	while (true) {
		err = null_make_cache_space(nullb, nullb->dev->cache_size * 1024 * 1024);
		if (err || nullb->dev->curr_cache == 0)
			break;
	}
	WARN_ON(!radix_tree_empty(&nullb->dev->cache));
	spin_unlock_irq(&nullb->lock);
	return errno_to_blk_status(err);
}

blk_status_t null_transfer(struct nullb *nullb, struct page *page, unsigned int len,
			   unsigned int off, bool is_write, loff_t pos, bool is_fua)
{
	struct nullb_device *dev = nullb->dev;
	unsigned int valid_len = len;
	blk_status_t err = BLK_STS_OK;
	char *p;

	p = (char *)kmap_local_page(page);
	if (!is_write) {
		if (dev->zoned)
			valid_len = null_zone_valid_read_len(nullb, pos >> SECTOR_SHIFT, len);

		if (valid_len) {
			copy_from_nullb(nullb, p + off, pos, valid_len);
			off += valid_len;
			len -= valid_len;
		}

		if (len)
			nullb_fill_pattern(nullb, page, len, off);
	} else {
		err = copy_to_nullb(nullb, p + off, pos, len, is_fua);
	}
	kunmap_local(p);
	return err;
}

blk_status_t null_handle_bio_transfer(struct nullb *nullb, struct bio *bio, sector_t nr_sectors)
{
	blk_status_t err = BLK_STS_OK;
	unsigned int len;
	loff_t pos = (loff_t)bio->bi_iter.bi_sector << SECTOR_SHIFT;
	size_t max_bytes = nr_sectors << SECTOR_SHIFT;
	size_t transferred_bytes = 0;
	struct bvec_iter iter;
	struct bio_vec bvec;

	spin_lock_irq(&nullb->lock);
	bio_for_each_segment(bvec, bio, iter)
	{
		len = bvec.bv_len;
		if (transferred_bytes + len > max_bytes)
			len = max_bytes - transferred_bytes;
		err = null_transfer(nullb, bvec.bv_page, len, bvec.bv_offset,
				    op_is_write(bio_op(bio)), pos, bio->bi_opf & REQ_FUA);
		if (err)
			break;
		pos += len;
		transferred_bytes += len;
		if (transferred_bytes >= max_bytes)
			break;
	}
	spin_unlock_irq(&nullb->lock);
	return err;
}

blk_status_t null_handle_badblocks(struct nullb_device *dev, sector_t sector,
				   unsigned int *nr_sectors)
{
	struct badblocks *bb = &dev->badblocks;
	unsigned int block_sectors = dev->blocksize >> SECTOR_SHIFT;
	sector_t first_bad;
	int bad_sectors;
	unsigned int partial_io_sectors = 0;

	if (!badblocks_check(bb, sector, *nr_sectors, &first_bad, &bad_sectors))
		return BLK_STS_OK;

	if (dev->badblocks_once)
		badblocks_clear(bb, first_bad, bad_sectors);

	if (dev->badblocks_partial_io) {
		if (!IS_ALIGNED(first_bad, (sector_t)block_sectors))
			first_bad = ALIGN_DOWN(first_bad, (sector_t)block_sectors);
		if (sector < first_bad)
			partial_io_sectors = first_bad - sector;
	}
	*nr_sectors = partial_io_sectors;
	return BLK_STS_IOERR;
}

blk_status_t null_process_bio(struct nullb *nullb, struct bio *bio, enum req_op op, sector_t sector,
			      unsigned int nr_sectors)
{
	struct nullb_device *dev = nullb->dev;
	blk_status_t badblocks_ret = BLK_STS_OK;
	blk_status_t ret;

	if (dev->badblocks.shift != -1)
		badblocks_ret = null_handle_badblocks(dev, sector, &nr_sectors);

	if (dev->memory_backed && nr_sectors) {
		if (op == REQ_OP_DISCARD)
			ret = null_handle_discard(dev, sector, nr_sectors);
		else
			ret = null_handle_bio_transfer(nullb, bio, nr_sectors);
		if (ret != BLK_STS_OK)
			return ret;
	}
	return badblocks_ret;
}
