// SPDX-License-Identifier: GPL-2.0-only
// drivers/block/null_blk/main.c: module parameters, the memory backing
// (pages in radix trees, the write-back cache, discard, badblocks and the
// data transfer), fault injection and throttling, the blk-mq side (tag sets,
// nullb_queues, queue maps, null_queue_rq, completion by irqmode, timeouts
// and polling), device power on/off and the configfs attribute set.
//
// Upstream: drivers/block/null_blk/main.c @ v6.12
#define KBUILD_MODNAME "null_blk"

#include <cstdio>
#include <cstring>

#include <uk/devices/null_blk.h>
#include <uk/linux/bitops.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/find.h>
#include <uk/linux/gfp.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/kconfig.h>
#include <uk/linux/kernel.h>
#include <uk/linux/kstrtox.h>
#include <uk/linux/ktime.h>
#include <uk/linux/log2.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/mutex.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>
#include <uk/linux/string.h>

#undef pr_fmt
#define pr_fmt(fmt) "null_blk: " fmt

#define nr_online_nodes 1U

static LIST_HEAD(nullb_list);	  /* powered-on devices */
static LIST_HEAD(nullb_cfs_list); /* configfs-created devices */
static DEFINE_MUTEX(lock);
static DECLARE_BITMAP(nullb_indexes, 1024); /* the kernel's IDA */

static DECLARE_FAULT_ATTR(null_timeout_attr);
static DECLARE_FAULT_ATTR(null_requeue_attr);
static DECLARE_FAULT_ATTR(null_init_hctx_attr);

/* ---- module parameters and their defaults ---- */

static bool g_virt_boundary;
module_param_named(virt_boundary, g_virt_boundary, bool, 0444);
MODULE_PARM_DESC(virt_boundary, "Devices require a virtual boundary. Default: false");

static int g_no_sched;
module_param_named(no_sched, g_no_sched, int, 0444);
MODULE_PARM_DESC(no_sched, "No I/O scheduler");

static int g_submit_queues = 1;
module_param_named(submit_queues, g_submit_queues, int, 0444);
MODULE_PARM_DESC(submit_queues, "Submission queues (hardware contexts)");

static int g_poll_queues = 1;
module_param_named(poll_queues, g_poll_queues, int, 0444);
MODULE_PARM_DESC(poll_queues, "Polled (IOPOLL) submission queues");

static int g_home_node = NUMA_NO_NODE;
module_param_named(home_node, g_home_node, int, 0444);
MODULE_PARM_DESC(home_node, "NUMA home node of the devices");

static char g_timeout_str[NULLB_FAULT_STR_LEN];
module_param_string(timeout, g_timeout_str, sizeof(g_timeout_str), 0444);
MODULE_PARM_DESC(timeout, "Fault injection: timeout=<interval>,<probability>,<space>,<times>");

static char g_requeue_str[NULLB_FAULT_STR_LEN];
module_param_string(requeue, g_requeue_str, sizeof(g_requeue_str), 0444);
MODULE_PARM_DESC(requeue, "Fault injection: requeue=<interval>,<probability>,<space>,<times>");

static char g_init_hctx_str[NULLB_FAULT_STR_LEN];
module_param_string(init_hctx, g_init_hctx_str, sizeof(g_init_hctx_str), 0444);
MODULE_PARM_DESC(
	init_hctx,
	"Fault injection into hctx init: init_hctx=<interval>,<probability>,<space>,<times>");

static int g_queue_mode = NULL_Q_MQ;

static int null_param_store_val(const char *str, int *val, int min, int max)
{
	int ret, new_val;

	ret = kstrtoint(str, 10, &new_val);
	if (ret)
		return -EINVAL;

	if (new_val < min || new_val > max)
		return -EINVAL;

	*val = new_val;
	return 0;
}

static int null_set_queue_mode(const char *str, const struct kernel_param *kp)
{
	return null_param_store_val(str, &g_queue_mode, NULL_Q_BIO, NULL_Q_MQ);
}

static const struct kernel_param_ops null_queue_mode_param_ops = {
	.flags = 0,
	.set = null_set_queue_mode,
	.get = param_get_int,
	.free = NULL,
};

device_param_cb(queue_mode, &null_queue_mode_param_ops, &g_queue_mode, 0444);
__MODULE_PARM_TYPE(queue_mode, "int");
MODULE_PARM_DESC(queue_mode, "Block interface (0=bio, 1=rq, 2=multiqueue; only 2 works)");

static int g_gb = 250;
module_param_named(gb, g_gb, int, 0444);
MODULE_PARM_DESC(gb, "Device size in GB");

static int g_bs = 512;
module_param_named(bs, g_bs, int, 0444);
MODULE_PARM_DESC(bs, "Logical block size in bytes");

static int g_max_sectors;
module_param_named(max_sectors, g_max_sectors, int, 0444);
MODULE_PARM_DESC(max_sectors, "Largest command in 512-byte sectors");

static unsigned int nr_devices = 1;
module_param(nr_devices, uint, 0444);
MODULE_PARM_DESC(nr_devices, "Devices made at load (nullb0, nullb1, ...)");

static bool g_blocking;
module_param_named(blocking, g_blocking, bool, 0444);
MODULE_PARM_DESC(blocking, "Register as a blocking blk-mq driver");

static bool g_shared_tags;
module_param_named(shared_tags, g_shared_tags, bool, 0444);
MODULE_PARM_DESC(shared_tags, "One tag set shared by all devices");

static bool g_shared_tag_bitmap;
module_param_named(shared_tag_bitmap, g_shared_tag_bitmap, bool, 0444);
MODULE_PARM_DESC(shared_tag_bitmap, "One tag bitmap shared by all submission queues");

static int g_irqmode = NULL_IRQ_SOFTIRQ;

static int null_set_irqmode(const char *str, const struct kernel_param *kp)
{
	return null_param_store_val(str, &g_irqmode, NULL_IRQ_NONE, NULL_IRQ_TIMER);
}

static const struct kernel_param_ops null_irqmode_param_ops = {
	.flags = 0,
	.set = null_set_irqmode,
	.get = param_get_int,
	.free = NULL,
};

device_param_cb(irqmode, &null_irqmode_param_ops, &g_irqmode, 0444);
__MODULE_PARM_TYPE(irqmode, "int");
MODULE_PARM_DESC(irqmode, "Completion: 0 inline (none), 1 softirq, 2 hrtimer");

static unsigned long g_completion_nsec = 10000;
module_param_named(completion_nsec, g_completion_nsec, ulong, 0444);
MODULE_PARM_DESC(completion_nsec, "Completion delay in ns with irqmode=2. Default: 10000");

static int g_hw_queue_depth = 64;
module_param_named(hw_queue_depth, g_hw_queue_depth, int, 0444);
MODULE_PARM_DESC(hw_queue_depth, "Tags per hardware queue. Default: 64");

static bool g_use_per_node_hctx;
module_param_named(use_per_node_hctx, g_use_per_node_hctx, bool, 0444);
MODULE_PARM_DESC(use_per_node_hctx, "One hardware context per NUMA node. Default: false");

static bool g_memory_backed;
module_param_named(memory_backed, g_memory_backed, bool, 0444);
MODULE_PARM_DESC(memory_backed, "Keep written data in memory. Default: false");

static bool g_discard;
module_param_named(discard, g_discard, bool, 0444);
MODULE_PARM_DESC(discard, "Discard support (memory-backed devices only). Default: false");

static unsigned long g_cache_size;
module_param_named(cache_size, g_cache_size, ulong, 0444);
MODULE_PARM_DESC(cache_size, "Write cache of a memory-backed device in MiB. Default: 0 (none)");

static bool g_fua = true;
module_param_named(fua, g_fua, bool, 0444);
MODULE_PARM_DESC(fua, "FUA support when there is a cache. Default: true");

static unsigned int g_mbps;
module_param_named(mbps, g_mbps, uint, 0444);
MODULE_PARM_DESC(mbps, "Bandwidth limit in MiB/s. Default: 0 (none)");

static bool g_zoned;
module_param_named(zoned, g_zoned, bool, 0444);
MODULE_PARM_DESC(zoned, "Host-managed zoned devices. Default: false");

static unsigned long g_zone_size = 256;
module_param_named(zone_size, g_zone_size, ulong, 0444);
MODULE_PARM_DESC(zone_size, "Zone size in MB, a power of two. Default: 256");

static unsigned long g_zone_capacity;
module_param_named(zone_capacity, g_zone_capacity, ulong, 0444);
MODULE_PARM_DESC(zone_capacity,
		 "Zone capacity in MB, at most the zone size. Default: 0 (the zone size)");

static unsigned int g_zone_nr_conv;
module_param_named(zone_nr_conv, g_zone_nr_conv, uint, 0444);
MODULE_PARM_DESC(zone_nr_conv, "Conventional zones of a zoned device. Default: 0");

static unsigned int g_zone_max_open;
module_param_named(zone_max_open, g_zone_max_open, uint, 0444);
MODULE_PARM_DESC(zone_max_open, "Open zones allowed at once. Default: 0 (no limit)");

static unsigned int g_zone_max_active;
module_param_named(zone_max_active, g_zone_max_active, uint, 0444);
MODULE_PARM_DESC(zone_max_active, "Active zones allowed at once. Default: 0 (no limit)");

static int g_zone_append_max_sectors = INT_MAX;
module_param_named(zone_append_max_sectors, g_zone_append_max_sectors, int, 0444);
MODULE_PARM_DESC(zone_append_max_sectors,
		 "Largest zone append in 512-byte sectors; 0 emulates zone append");

static bool g_zone_full;
module_param_named(zone_full, g_zone_full, bool, 0444);
MODULE_PARM_DESC(zone_full, "Sequential zones of a zoned device start full. Default: false");

static bool g_rotational;
module_param_named(rotational, g_rotational, bool, 0444);
MODULE_PARM_DESC(rotational, "Report the devices as rotational. Default: false");

void null_blk_reset_module_params(void)
{
	g_virt_boundary = false;
	g_no_sched = 0;
	g_submit_queues = 1;
	g_poll_queues = 1;
	g_home_node = NUMA_NO_NODE;
	g_timeout_str[0] = g_requeue_str[0] = g_init_hctx_str[0] = '\0';
	g_queue_mode = NULL_Q_MQ;
	g_gb = 250;
	g_bs = 512;
	g_max_sectors = 0;
	nr_devices = 1;
	g_blocking = g_shared_tags = g_shared_tag_bitmap = false;
	g_irqmode = NULL_IRQ_SOFTIRQ;
	g_completion_nsec = 10000;
	g_hw_queue_depth = 64;
	g_use_per_node_hctx = g_memory_backed = g_discard = false;
	g_cache_size = 0;
	g_fua = true;
	g_mbps = 0;
	g_zoned = false;
	g_zone_size = 256;
	g_zone_capacity = 0;
	g_zone_nr_conv = g_zone_max_open = g_zone_max_active = 0;
	g_zone_append_max_sectors = INT_MAX;
	g_zone_full = g_rotational = false;
	null_timeout_attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
	null_requeue_attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
	null_init_hctx_attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
}

/* "modprobe null_blk @str": kernel/params.c over this module's parameters. */
int null_blk_module_params(const char *str)
{
	return parse_module_args(KBUILD_MODNAME, str);
}

ssize_t null_blk_param_show(const char *name, char *page)
{
	char full[64];

	if (snprintf(full, sizeof(full), "%s.%s", KBUILD_MODNAME, name) >= (int)sizeof(full))
		return -ENOENT;
	return param_show(full, page);
}

/* ---- memory backing ---- */

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
		WARN_ON(!t_page || t_page->page->index != idx);
	} else if (is_cache)
		nullb->dev->curr_cache += PAGE_SIZE;

	return t_page;
}

static void null_free_device_storage(struct nullb_device *dev, bool is_cache)
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
			pos = t_pages[i]->page->index;
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
	WARN_ON(t_page && t_page->page->index != idx);

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
	t_page->page->index = idx;
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
	void *dst, *src;

	idx = c_page->page->index;

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

	src = kmap_local_page(c_page->page);
	dst = kmap_local_page(t_page->page);

	for (i = 0; i < PAGE_SECTORS; i += (nullb->dev->blocksize >> SECTOR_SHIFT)) {
		if (test_bit(i, c_page->bitmap)) {
			offset = (i << SECTOR_SHIFT);
			memcpy((char *)dst + offset, (char *)src + offset, nullb->dev->blocksize);
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
		nullb->cache_flush_pos = c_pages[i]->page->index;
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

static int copy_to_nullb(struct nullb *nullb, struct page *source, unsigned int off,
			 sector_t sector, size_t n, bool is_fua)
{
	size_t temp, count = 0;
	unsigned int offset;
	struct nullb_page *t_page;

	while (count < n) {
		temp = min_t(size_t, nullb->dev->blocksize, n - count);

		if (null_cache_active(nullb) && !is_fua)
			null_make_cache_space(nullb, PAGE_SIZE);

		offset = (sector & SECTOR_MASK) << SECTOR_SHIFT;
		t_page = null_insert_page(nullb, sector, !null_cache_active(nullb) || is_fua);
		if (!t_page)
			return -ENOSPC;

		memcpy_page(t_page->page, offset, source, off + count, temp);

		__set_bit(sector & SECTOR_MASK, t_page->bitmap);

		if (is_fua)
			null_free_sector(nullb, sector, true);

		count += temp;
		sector += temp >> SECTOR_SHIFT;
	}
	return 0;
}

static int copy_from_nullb(struct nullb *nullb, struct page *dest, unsigned int off,
			   sector_t sector, size_t n)
{
	size_t temp, count = 0;
	unsigned int offset;
	struct nullb_page *t_page;

	while (count < n) {
		temp = min_t(size_t, nullb->dev->blocksize, n - count);

		offset = (sector & SECTOR_MASK) << SECTOR_SHIFT;
		t_page = null_lookup_page(nullb, sector, false, !null_cache_active(nullb));

		if (t_page)
			memcpy_page(dest, off + count, t_page->page, offset, temp);
		else
			zero_user(dest, off + count, temp);

		count += temp;
		sector += temp >> SECTOR_SHIFT;
	}
	return 0;
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

static blk_status_t null_handle_flush(struct nullb *nullb)
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

/*
 * With nullb->lock held: one single-page segment, in whole logical blocks
 * (the submitters refuse buffers, positions and lengths that are not), so
 * that no block crosses a page of the device or of the buffer.
 */
static int null_transfer(struct nullb *nullb, struct page *page, unsigned int len, unsigned int off,
			 bool is_write, sector_t sector, bool is_fua)
{
	struct nullb_device *dev = nullb->dev;
	unsigned int valid_len = len;
	int err = 0;

	if (!is_write) {
		if (dev->zoned)
			valid_len = null_zone_valid_read_len(nullb, sector, len);

		if (valid_len) {
			err = copy_from_nullb(nullb, page, off, sector, valid_len);
			off += valid_len;
			len -= valid_len;
		}

		if (len)
			nullb_fill_pattern(nullb, page, len, off);
		flush_dcache_page(page);
	} else {
		flush_dcache_page(page);
		err = copy_to_nullb(nullb, page, off, sector, len, is_fua);
	}

	return err;
}

blk_status_t null_handle_bio_transfer(struct nullb *nullb, struct bio *bio, sector_t nr_sectors)
{
	sector_t sector = bio->bi_iter.bi_sector;
	struct bvec_iter iter;
	struct bio_vec bvec;
	unsigned int len;
	int err = 0;

	spin_lock_irq(&nullb->lock);
	bio_for_each_segment(bvec, bio, iter)
	{
		if (!nr_sectors)
			break;
		len = min_t(sector_t, bvec.bv_len, nr_sectors << SECTOR_SHIFT);
		err = null_transfer(nullb, bvec.bv_page, len, bvec.bv_offset,
				    op_is_write(bio_op(bio)), sector, bio->bi_opf & REQ_FUA);
		if (err)
			break;
		sector += len >> SECTOR_SHIFT;
		nr_sectors -= len >> SECTOR_SHIFT;
	}
	spin_unlock_irq(&nullb->lock);
	return errno_to_blk_status(err);
}

blk_status_t null_check_badblocks(struct nullb_device *dev, sector_t sector,
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

	if (op == REQ_OP_FLUSH)
		return null_handle_flush(nullb);

	if (dev->badblocks.shift != -1)
		badblocks_ret = null_check_badblocks(dev, sector, &nr_sectors);

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

/* ---- fault injection ---- */

/*
 * A kernel built without CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION pays
 * nothing here. Ours always has it: skip should_fail() when the attribute
 * can neither fail nor has a space/interval count to advance (exactly the
 * cases where should_fail() returns false without side effects).
 */
static inline bool null_fault_attr_idle(struct fault_attr *attr)
{
	return !READ_ONCE(attr->probability) && !atomic_read(&attr->space) &&
	       READ_ONCE(attr->interval) <= 1;
}

static bool should_timeout_request(struct request *rq)
{
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);
	struct nullb_device *dev = cmd->nq->dev;

	if (null_fault_attr_idle(&dev->timeout_config.attr))
		return false;
	return should_fail(&dev->timeout_config.attr, 1);
}

static bool should_requeue_request(struct request *rq)
{
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);
	struct nullb_device *dev = cmd->nq->dev;

	if (null_fault_attr_idle(&dev->requeue_config.attr))
		return false;
	return should_fail(&dev->requeue_config.attr, 1);
}

static bool __null_setup_fault(struct fault_attr *attr, char *str)
{
	if (!str[0])
		return true;
	if (!setup_fault_attr(attr, str))
		return false;
	attr->verbose = 0;
	return true;
}

static bool null_setup_fault(void)
{
#ifdef CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION
	if (!__null_setup_fault(&null_timeout_attr, g_timeout_str))
		return false;
	if (!__null_setup_fault(&null_requeue_attr, g_requeue_str))
		return false;
	if (!__null_setup_fault(&null_init_hctx_attr, g_init_hctx_str))
		return false;
#endif
	return true;
}

/* ---- throttling ---- */

/* The bandwidth timer refills the byte budget this many times a second. */
#define TICKS_PER_SEC 50ULL
#define TIMER_INTERVAL (NSEC_PER_SEC / TICKS_PER_SEC)

static inline u64 mb_per_tick(int mbps)
{
	return (1 << 20) / TICKS_PER_SEC * ((u64)mbps);
}

static enum hrtimer_restart nullb_bwtimer_fn(struct hrtimer *timer)
{
	struct nullb *nullb = container_of(timer, struct nullb, bw_timer);
	ktime_t timer_interval = ktime_set(0, TIMER_INTERVAL);
	unsigned int mbps = nullb->dev->mbps;

	/* A whole tick without I/O: stop ticking until the next request. */
	if (atomic_long_read(&nullb->cur_bytes) == (long)mb_per_tick(mbps))
		return HRTIMER_NORESTART;

	atomic_long_set(&nullb->cur_bytes, mb_per_tick(mbps));
	blk_mq_start_stopped_hw_queues(nullb->q, true);

	hrtimer_forward_now(&nullb->bw_timer, timer_interval);
	return HRTIMER_RESTART;
}

static void nullb_setup_bwtimer(struct nullb *nullb)
{
	ktime_t timer_interval = ktime_set(0, TIMER_INTERVAL);

	hrtimer_init(&nullb->bw_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	nullb->bw_timer.function = nullb_bwtimer_fn;
	atomic_long_set(&nullb->cur_bytes, mb_per_tick(nullb->dev->mbps));
	hrtimer_start(&nullb->bw_timer, timer_interval, HRTIMER_MODE_REL);
}

static inline blk_status_t null_handle_throttled(struct nullb_cmd *cmd)
{
	struct nullb_device *dev = cmd->nq->dev;
	struct nullb *nullb = dev->nullb;
	blk_status_t sts = BLK_STS_OK;
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (!hrtimer_active(&nullb->bw_timer))
		hrtimer_restart(&nullb->bw_timer);

	if (atomic_long_sub_return(blk_rq_bytes(rq), &nullb->cur_bytes) < 0) {
		blk_mq_stop_hw_queues(nullb->q);
		/* The timer may have refilled between the sub and the stop. */
		if (atomic_long_read(&nullb->cur_bytes) > 0)
			blk_mq_start_stopped_hw_queues(nullb->q, true);
		sts = BLK_STS_DEV_RESOURCE;
	}
	return sts;
}

/* The global tag set, built by the first shared_tags device. */
static struct blk_mq_tag_set tag_set;

static inline bool blk_should_fake_timeout(struct request_queue *q)
{
	return false; /* no debugfs fail_io_timeout */
}

/* ---- command processing ---- */

static blk_status_t null_handle_rq(struct nullb_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct nullb *nullb = cmd->nq->dev->nullb;
	int err = 0;
	unsigned int len;
	sector_t sector = blk_rq_pos(rq);
	struct req_iterator iter;
	struct bio_vec bvec;

	spin_lock_irq(&nullb->lock);
	rq_for_each_segment(bvec, rq, iter)
	{
		len = bvec.bv_len;
		err = null_transfer(nullb, bvec.bv_page, len, bvec.bv_offset,
				    op_is_write(req_op(rq)), sector, rq->cmd_flags & REQ_FUA);
		if (err)
			break;
		sector += len >> SECTOR_SHIFT;
	}
	spin_unlock_irq(&nullb->lock);

	return errno_to_blk_status(err);
}

/*
 * badblocks_partial_io: the @nr_sectors in front of the first bad block are
 * read, written or discarded before the command fails, as later kernels'
 * null_handle_data_transfer() does.
 */
static blk_status_t null_handle_partial_io(struct nullb_cmd *cmd, sector_t sector,
					   sector_t nr_sectors)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct nullb_device *dev = cmd->nq->dev;
	blk_status_t sts = BLK_STS_OK;
	struct bio *bio;
	sector_t done;

	if (req_op(rq) == REQ_OP_DISCARD)
		return null_handle_discard(dev, sector, nr_sectors);

	__rq_for_each_bio(bio, rq)
	{
		done = min_t(sector_t, nr_sectors, bio_sectors(bio));
		sts = null_handle_bio_transfer(dev->nullb, bio, done);
		nr_sectors -= done;
		if (sts != BLK_STS_OK || !nr_sectors)
			break;
	}
	return sts;
}

static inline blk_status_t null_handle_badblocks(struct nullb_cmd *cmd, sector_t sector,
						 sector_t nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;
	unsigned int good_sectors = nr_sectors;
	blk_status_t sts;

	if (null_check_badblocks(dev, sector, &good_sectors) == BLK_STS_OK)
		return BLK_STS_OK;

	if (dev->memory_backed && good_sectors) {
		sts = null_handle_partial_io(cmd, sector, good_sectors);
		if (sts != BLK_STS_OK)
			return sts;
	}
	return BLK_STS_IOERR;
}

static inline blk_status_t null_handle_memory_backed(struct nullb_cmd *cmd, enum req_op op,
						     sector_t sector, sector_t nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;

	if (op == REQ_OP_DISCARD)
		return null_handle_discard(dev, sector, nr_sectors);

	return null_handle_rq(cmd);
}

blk_status_t null_process_cmd(struct nullb_cmd *cmd, enum req_op op, sector_t sector,
			      unsigned int nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;
	blk_status_t ret;

	if (dev->badblocks.shift != -1) {
		ret = null_handle_badblocks(cmd, sector, nr_sectors);
		if (ret != BLK_STS_OK)
			return ret;
	}

	if (dev->memory_backed)
		return null_handle_memory_backed(cmd, op, sector, nr_sectors);

	return BLK_STS_OK;
}

static void null_complete_rq(struct request *rq)
{
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);

	blk_mq_end_request(rq, cmd->error);
}

static enum hrtimer_restart null_cmd_timer_expired(struct hrtimer *timer)
{
	struct nullb_cmd *cmd = container_of(timer, struct nullb_cmd, timer);

	blk_mq_end_request(blk_mq_rq_from_pdu(cmd), cmd->error);
	return HRTIMER_NORESTART;
}

static void null_cmd_end_timer(struct nullb_cmd *cmd)
{
	ktime_t kt = cmd->nq->dev->completion_nsec;

	hrtimer_start(&cmd->timer, kt, HRTIMER_MODE_REL);
}

static void nullb_zero_read_cmd_buffer(struct nullb_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct nullb_device *dev = cmd->nq->dev;
	struct bio *bio;

	if (!dev->memory_backed && req_op(rq) == REQ_OP_READ) {
		/* clang-format off */
		__rq_for_each_bio(bio, rq)
			zero_fill_bio(bio);
		/* clang-format on */
	}
}

static inline void nullb_complete_cmd(struct nullb_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	/*
	 * A device that is not memory backed never writes the buffers of a
	 * read. That is harmless, but KMSAN reports the uninitialized data
	 * when the caller reads it, so a KMSAN build clears them first.
	 */
	if (IS_ENABLED(CONFIG_KMSAN))
		nullb_zero_read_cmd_buffer(cmd);

	/* Inline, from the completion softirq, or when the timer fires. */
	switch (cmd->nq->dev->irqmode) {
	case NULL_IRQ_SOFTIRQ:
		blk_mq_complete_request(rq);
		break;
	case NULL_IRQ_NONE:
		blk_mq_end_request(rq, cmd->error);
		break;
	case NULL_IRQ_TIMER:
		null_cmd_end_timer(cmd);
		break;
	}
}

static void null_handle_cmd(struct nullb_cmd *cmd, sector_t sector, sector_t nr_sectors,
			    enum req_op op)
{
	struct nullb_device *dev = cmd->nq->dev;
	struct nullb *nullb = dev->nullb;
	blk_status_t sts;

	if (op == REQ_OP_FLUSH) {
		cmd->error = null_handle_flush(nullb);
		goto out;
	}

	if (dev->zoned)
		sts = null_process_zoned_cmd(cmd, op, sector, nr_sectors);
	else
		sts = null_process_cmd(cmd, op, sector, nr_sectors);

	/* An earlier error (a timeout) wins. */
	if (cmd->error == BLK_STS_OK)
		cmd->error = sts;

out:
	nullb_complete_cmd(cmd);
}

/* ---- blk_mq_ops ---- */

static enum blk_eh_timer_return null_timeout_rq(struct request *rq)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);

	if (hctx->type == HCTX_TYPE_POLL) {
		struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;

		spin_lock(&nq->poll_lock);
		/*
		 * null_poll() may have picked it up already (COMPLETE), or
		 * picked it up and ended it (IDLE) after the timeout work saw
		 * it expired: either way it is no longer ours to complete.
		 */
		if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT) {
			spin_unlock(&nq->poll_lock);
			return BLK_EH_DONE;
		}
		list_del_init(&rq->queuelist);
		spin_unlock(&nq->poll_lock);
	}

	pr_info("rq %p timed out\n", rq);

	/*
	 * A faked timeout (or a polled request nobody polls) is completed
	 * here; a real one is completed by its pending completion, now with
	 * BLK_STS_TIMEOUT.
	 */
	cmd->error = BLK_STS_TIMEOUT;
	if (cmd->fake_timeout || hctx->type == HCTX_TYPE_POLL)
		blk_mq_complete_request(rq);
	return BLK_EH_DONE;
}

static blk_status_t null_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;
	sector_t nr_sectors = blk_rq_sectors(rq);
	sector_t sector = blk_rq_pos(rq);
	const bool is_poll = hctx->type == HCTX_TYPE_POLL;

	might_sleep_if(hctx->flags & BLK_MQ_F_BLOCKING);

	if (!is_poll && nq->dev->irqmode == NULL_IRQ_TIMER) {
		hrtimer_init(&cmd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
		cmd->timer.function = null_cmd_timer_expired;
	}
	cmd->error = BLK_STS_OK;
	cmd->nq = nq;
	cmd->fake_timeout = should_timeout_request(rq) || blk_should_fake_timeout(rq->q);

	if (should_requeue_request(rq)) {
		/*
		 * An odd count hands the request back with BLK_STS_RESOURCE so
		 * the block core retries it; an even one requeues it from here
		 * via blk_mq_requeue_request(). The counter is bumped without a
		 * lock (direct issue and the requeue work may both reach this
		 * for one queue); upstream accepts the same race, whose only
		 * effect is that one path is taken twice in a row.
		 */
		data_race(nq->requeue_selection++);
		if (data_race(nq->requeue_selection) & 1)
			return BLK_STS_RESOURCE;
		blk_mq_requeue_request(rq, true);
		return BLK_STS_OK;
	}

	if (test_bit(NULLB_DEV_FL_THROTTLED, &nq->dev->flags)) {
		blk_status_t sts = null_handle_throttled(cmd);

		if (sts != BLK_STS_OK)
			return sts;
	}

	blk_mq_start_request(rq);

	if (is_poll) {
		spin_lock(&nq->poll_lock);
		list_add_tail(&rq->queuelist, &nq->poll_list);
		spin_unlock(&nq->poll_lock);
		return BLK_STS_OK;
	}
	if (cmd->fake_timeout)
		return BLK_STS_OK;

	null_handle_cmd(cmd, sector, nr_sectors, req_op(rq));
	return BLK_STS_OK;
}

/* A plug's requests, one null_queue_rq() each; the refused stay on the list. */
static void null_queue_rqs(struct rq_list *rqlist)
{
	struct rq_list requeue_list = {};
	struct blk_mq_queue_data bd = {};
	blk_status_t ret;

	do {
		struct request *rq = rq_list_pop(rqlist);

		bd.rq = rq;
		ret = null_queue_rq(rq->mq_hctx, &bd);
		if (ret != BLK_STS_OK)
			rq_list_add_tail(&requeue_list, rq);
	} while (!rq_list_empty(rqlist));

	*rqlist = requeue_list;
}

static int null_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;
	LIST_HEAD(list);
	int nr = 0;
	struct request *rq;

	spin_lock(&nq->poll_lock);
	list_splice_init(&nq->poll_list, &list);
	list_for_each_entry (rq, &list, queuelist)
		blk_mq_set_request_complete(rq);
	spin_unlock(&nq->poll_lock);

	while (!list_empty(&list)) {
		struct nullb_cmd *cmd;
		struct request *req;

		req = list_first_entry(&list, struct request, queuelist);
		list_del_init(&req->queuelist);
		cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(req);
		cmd->error =
			null_process_cmd(cmd, req_op(req), blk_rq_pos(req), blk_rq_sectors(req));
		if (!blk_mq_add_to_batch(req, iob, cmd->error != BLK_STS_OK,
					 blk_mq_end_request_batch))
			blk_mq_end_request(req, cmd->error);
		nr++;
	}

	return nr;
}

static bool should_init_hctx_fail(struct nullb_device *dev)
{
	return should_fail(&dev->init_hctx_fault_config.attr, 1);
}

static void null_init_queue(struct nullb *nullb, struct nullb_queue *nq)
{
	nq->dev = nullb->dev;
	INIT_LIST_HEAD(&nq->poll_list);
	spin_lock_init(&nq->poll_lock);
}

static int null_init_hctx(struct blk_mq_hw_ctx *hctx, void *driver_data, unsigned int hctx_idx)
{
	struct nullb *nullb = (struct nullb *)hctx->queue->queuedata;
	struct nullb_queue *nq;

	if (should_init_hctx_fail(nullb->dev))
		return -EFAULT;

	nq = &nullb->queues[hctx_idx];
	hctx->driver_data = nq;
	null_init_queue(nullb, nq);

	return 0;
}

static void null_exit_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;

	if (nq)
		WARN_ON_ONCE(!list_empty(&nq->poll_list));
}

static void null_map_queues(struct blk_mq_tag_set *set)
{
	struct nullb *nullb = (struct nullb *)set->driver_data;
	int i, qoff;
	unsigned int submit_queues = g_submit_queues;
	unsigned int poll_queues = g_poll_queues;

	if (nullb) {
		struct nullb_device *dev = nullb->dev;

		/*
		 * A failed nr_hw_queues update leaves the set as it was:
		 * map with the previous counts then.
		 */
		if (set->nr_hw_queues == dev->submit_queues + dev->poll_queues) {
			submit_queues = dev->submit_queues;
			poll_queues = dev->poll_queues;
		} else if (set->nr_hw_queues == dev->prev_submit_queues + dev->prev_poll_queues) {
			submit_queues = dev->prev_submit_queues;
			poll_queues = dev->prev_poll_queues;
		} else {
			pr_warn("tag set has unexpected nr_hw_queues: %d\n", set->nr_hw_queues);
			WARN_ON_ONCE(true);
			submit_queues = 1;
			poll_queues = 0;
		}
	}

	for (i = 0, qoff = 0; i < (int)set->nr_maps; i++) {
		struct blk_mq_queue_map *map = &set->map[i];

		switch (i) {
		case HCTX_TYPE_DEFAULT:
			map->nr_queues = submit_queues;
			break;
		case HCTX_TYPE_READ:
			map->nr_queues = 0;
			continue;
		case HCTX_TYPE_POLL:
			map->nr_queues = poll_queues;
			break;
		}
		map->queue_offset = qoff;
		qoff += map->nr_queues;
		blk_mq_map_queues(map);
	}
}

static const struct blk_mq_ops null_mq_ops = {
	.queue_rq = null_queue_rq,
	.commit_rqs = NULL,
	.queue_rqs = null_queue_rqs,
	.timeout = null_timeout_rq,
	.poll = null_poll,
	.complete = null_complete_rq,
	.init_hctx = null_init_hctx,
	.exit_hctx = null_exit_hctx,
	.init_request = NULL,
	.exit_request = NULL,
	.map_queues = null_map_queues,
};

/* ---- tag sets, queues, disk ---- */

static int null_init_tag_set(struct blk_mq_tag_set *set, int poll_queues)
{
	set->ops = &null_mq_ops;
	set->cmd_size = sizeof(struct nullb_cmd);
	set->timeout = 5 * HZ;
	set->nr_maps = 1;
	if (poll_queues) {
		set->nr_hw_queues += poll_queues;
		set->nr_maps += 2;
	}
	return blk_mq_alloc_tag_set(set);
}

static int null_init_global_tag_set(void)
{
	int error;

	if (tag_set.ops)
		return 0;

	tag_set.nr_hw_queues = g_submit_queues;
	tag_set.queue_depth = g_hw_queue_depth;
	tag_set.numa_node = g_home_node;
	tag_set.flags = BLK_MQ_F_SHOULD_MERGE;
	if (g_no_sched)
		tag_set.flags |= BLK_MQ_F_NO_SCHED;
	if (g_shared_tag_bitmap)
		tag_set.flags |= BLK_MQ_F_TAG_HCTX_SHARED;
	if (g_blocking)
		tag_set.flags |= BLK_MQ_F_BLOCKING;

	error = null_init_tag_set(&tag_set, g_poll_queues);
	if (error)
		tag_set.ops = NULL;
	return error;
}

void null_free_global_tag_set(void)
{
	if (tag_set.ops) {
		blk_mq_free_tag_set(&tag_set);
		memset((void *)&tag_set, 0, sizeof(tag_set));
	}
}

static int null_setup_tagset(struct nullb *nullb)
{
	if (nullb->dev->shared_tags) {
		nullb->tag_set = &tag_set;
		return null_init_global_tag_set();
	}

	nullb->tag_set = &nullb->__tag_set;
	nullb->tag_set->driver_data = nullb;
	nullb->tag_set->nr_hw_queues = nullb->dev->submit_queues;
	nullb->tag_set->queue_depth = nullb->dev->hw_queue_depth;
	nullb->tag_set->numa_node = nullb->dev->home_node;
	nullb->tag_set->flags = BLK_MQ_F_SHOULD_MERGE;
	if (nullb->dev->no_sched)
		nullb->tag_set->flags |= BLK_MQ_F_NO_SCHED;
	if (nullb->dev->shared_tag_bitmap)
		nullb->tag_set->flags |= BLK_MQ_F_TAG_HCTX_SHARED;
	if (nullb->dev->blocking)
		nullb->tag_set->flags |= BLK_MQ_F_BLOCKING;
	return null_init_tag_set(nullb->tag_set, nullb->dev->poll_queues);
}

static int setup_queues(struct nullb *nullb)
{
	int nqueues = nr_cpu_ids;

	if (g_poll_queues)
		nqueues += g_poll_queues;

	nullb->queues =
		(struct nullb_queue *)kcalloc(nqueues, sizeof(struct nullb_queue), GFP_KERNEL);
	if (!nullb->queues)
		return -ENOMEM;

	return 0;
}

static void cleanup_queues(struct nullb *nullb)
{
	kfree(nullb->queues);
	nullb->queues = NULL;
}

static void null_config_discard(struct nullb *nullb, struct queue_limits *lim)
{
	if (nullb->dev->discard == false)
		return;

	if (!nullb->dev->memory_backed) {
		nullb->dev->discard = false;
		pr_info("discard option is ignored without memory backing\n");
		return;
	}

	if (nullb->dev->zoned) {
		nullb->dev->discard = false;
		pr_info("discard option is ignored in zoned mode\n");
		return;
	}

	lim->max_hw_discard_sectors = UINT_MAX >> 9;
}

/* No CONFIG_BLK_DEV_ZONED here: zoned devices are refused as such kernels do. */
static int null_init_zoned_dev(struct nullb_device *dev, struct queue_limits *lim)
{
	pr_err("CONFIG_BLK_DEV_ZONED not enabled\n");
	return -EINVAL;
}

/*
 * What null_add_dev() does between naming the disk and starting the
 * bandwidth timer: the nullb_queues, the tag set (the global one for
 * shared_tags), the queue limits (discard; zoned devices are refused), and
 * the disk, added so that uk::blkdev_lookup() finds it by name.
 * null_del_dev() calls null_del_dev_blk() (del_gendisk(), which drains the
 * I/O) first and null_free_dev_blk() (the disk, the tag set and the queues)
 * after stopping the timer; null_update_nr_hw_queues_blk() changes the
 * hardware queue count of a live device and returns the count it got.
 */
static int null_add_dev_blk(struct nullb *nullb)
{
	struct nullb_device *dev = nullb->dev;
	struct queue_limits lim = {};
	int rv;

	rv = setup_queues(nullb);
	if (rv)
		return rv;

	rv = null_setup_tagset(nullb);
	if (rv)
		goto out_cleanup_queues;

	lim.logical_block_size = dev->blocksize;
	lim.physical_block_size = dev->blocksize;
	lim.max_hw_sectors = nullb->max_hw_sectors;
	if (dev->virt_boundary)
		lim.virt_boundary_mask = PAGE_SIZE - 1;
	null_config_discard(nullb, &lim);
	if (dev->zoned) {
		rv = null_init_zoned_dev(dev, &lim);
		if (rv)
			goto out_cleanup_tags;
	}

	nullb->disk = blk_mq_alloc_disk(nullb->tag_set, &lim, nullb);
	if (IS_ERR(nullb->disk)) {
		rv = PTR_ERR(nullb->disk);
		nullb->disk = NULL;
		goto out_cleanup_tags;
	}
	nullb->q = nullb->disk->queue;

	set_capacity(nullb->disk, nullb->capacity);
	nullb->disk->private_data = nullb;
	snprintf(nullb->disk->disk_name, DISK_NAME_LEN, "%s", nullb->disk_name);

	rv = add_disk(nullb->disk);
	if (rv)
		goto out_cleanup_disk;
	return 0;

out_cleanup_disk:
	put_disk(nullb->disk);
	nullb->disk = NULL;
	nullb->q = NULL;
out_cleanup_tags:
	if (nullb->tag_set == &nullb->__tag_set)
		blk_mq_free_tag_set(nullb->tag_set);
out_cleanup_queues:
	nullb->tag_set = NULL;
	cleanup_queues(nullb);
	return rv;
}

static void null_del_dev_blk(struct nullb *nullb)
{
	if (nullb->disk)
		del_gendisk(nullb->disk);
}

static void null_free_dev_blk(struct nullb *nullb)
{
	if (nullb->disk) {
		put_disk(nullb->disk);
		nullb->disk = NULL;
		nullb->q = NULL;
	}
	if (nullb->tag_set == &nullb->__tag_set)
		blk_mq_free_tag_set(nullb->tag_set);
	nullb->tag_set = NULL;
	cleanup_queues(nullb);
}

static int null_update_nr_hw_queues_blk(struct nullb *nullb, unsigned int nr_hw_queues)
{
	struct blk_mq_tag_set *set = nullb->tag_set;

	if (!set || !nullb->q)
		return nr_hw_queues;
	blk_mq_update_nr_hw_queues(set, nr_hw_queues);
	return set->nr_hw_queues;
}

/* ---- devices ---- */

static struct nullb_device *null_alloc_dev(void)
{
	struct nullb_device *dev;

	dev = (struct nullb_device *)kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return NULL;

#ifdef CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION
	dev->timeout_config.attr = null_timeout_attr;
	dev->requeue_config.attr = null_requeue_attr;
	dev->init_hctx_fault_config.attr = null_init_hctx_attr;
#endif

	INIT_LIST_HEAD(&dev->cfs_list);
	INIT_RADIX_TREE(&dev->data, GFP_ATOMIC);
	INIT_RADIX_TREE(&dev->cache, GFP_ATOMIC);
	if (badblocks_init(&dev->badblocks, 0)) {
		kfree(dev);
		return NULL;
	}

	dev->size = g_gb * 1024;
	dev->completion_nsec = g_completion_nsec;
	dev->submit_queues = g_submit_queues;
	dev->prev_submit_queues = g_submit_queues;
	dev->poll_queues = g_poll_queues;
	dev->prev_poll_queues = g_poll_queues;
	dev->home_node = g_home_node;
	dev->queue_mode = g_queue_mode;
	dev->blocksize = g_bs;
	dev->max_sectors = g_max_sectors;
	dev->irqmode = g_irqmode;
	dev->hw_queue_depth = g_hw_queue_depth;
	dev->blocking = g_blocking;
	dev->memory_backed = g_memory_backed;
	dev->discard = g_discard;
	dev->cache_size = g_cache_size;
	dev->mbps = g_mbps;
	dev->use_per_node_hctx = g_use_per_node_hctx;
	dev->zoned = g_zoned;
	dev->zone_size = g_zone_size;
	dev->zone_capacity = g_zone_capacity;
	dev->zone_nr_conv = g_zone_nr_conv;
	dev->zone_max_open = g_zone_max_open;
	dev->zone_max_active = g_zone_max_active;
	dev->zone_append_max_sectors = g_zone_append_max_sectors;
	dev->zone_full = g_zone_full;
	dev->virt_boundary = g_virt_boundary;
	dev->no_sched = g_no_sched;
	dev->shared_tags = g_shared_tags;
	dev->shared_tag_bitmap = g_shared_tag_bitmap;
	dev->fua = g_fua;
	dev->rotational = g_rotational;
	return dev;
}

static void null_free_dev(struct nullb_device *dev)
{
	if (!dev)
		return;
	badblocks_exit(&dev->badblocks);
	kfree(dev);
}

static int null_validate_conf(struct nullb_device *dev)
{
	if (dev->queue_mode == NULL_Q_RQ) {
		pr_err("legacy IO path is no longer available\n");
		return -EINVAL;
	}
	if (dev->queue_mode == NULL_Q_BIO) {
		pr_err("BIO-based IO path is no longer available, using blk-mq instead.\n");
		dev->queue_mode = NULL_Q_MQ;
	}

	if (dev->use_per_node_hctx) {
		if (dev->submit_queues != nr_online_nodes)
			dev->submit_queues = nr_online_nodes;
	} else if (dev->submit_queues > nr_cpu_ids)
		dev->submit_queues = nr_cpu_ids;
	else if (dev->submit_queues == 0)
		dev->submit_queues = 1;
	dev->prev_submit_queues = dev->submit_queues;

	if (dev->poll_queues > (unsigned int)g_poll_queues)
		dev->poll_queues = g_poll_queues;
	dev->prev_poll_queues = dev->poll_queues;
	dev->irqmode = min_t(unsigned int, dev->irqmode, NULL_IRQ_TIMER);

	/* Memory backing allocates in queue_rq, which must then be allowed to sleep. */
	if (dev->memory_backed)
		dev->blocking = true;
	else
		dev->cache_size = 0;
	dev->cache_size = min_t(unsigned long, ULONG_MAX / 1024 / 1024, dev->cache_size);
	dev->mbps = min_t(unsigned int, 1024 * 40, dev->mbps);

	if (dev->zoned && (!dev->zone_size || !is_power_of_2(dev->zone_size))) {
		pr_err("zone_size must be power-of-two\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The queue_limits checks blk_mq_alloc_disk() would make (blk_validate_limits)
 * for what null_blk sets: block size and max_hw_sectors.
 */
static int null_validate_limits(struct nullb *nullb)
{
	struct nullb_device *dev = nullb->dev;
	unsigned int max_hw = dev->max_sectors;

	if (dev->blocksize < SECTOR_SIZE || dev->blocksize > PAGE_SIZE ||
	    !is_power_of_2(dev->blocksize)) {
		pr_err("invalid blocksize %u (512..%lu, power of two)\n", dev->blocksize,
		       PAGE_SIZE);
		return -EINVAL;
	}
	if (!max_hw)
		max_hw = 255; /* BLK_SAFE_MAX_SECTORS */
	if (max_hw < PAGE_SECTORS) {
		pr_err("invalid max_sectors %u (at least %u)\n", dev->max_sectors,
		       (unsigned int)PAGE_SECTORS);
		return -EINVAL;
	}
	nullb->max_hw_sectors = round_down(max_hw, dev->blocksize >> SECTOR_SHIFT);
	return 0;
}

static int null_ida_alloc(void)
{
	unsigned long bit = find_first_zero_bit(nullb_indexes, 1024);

	if (bit >= 1024)
		return -ENOSPC;
	__set_bit(bit, nullb_indexes);
	return bit;
}

int null_add_dev(struct nullb_device *dev)
{
	struct nullb *nullb;
	int rv;

	rv = null_validate_conf(dev);
	if (rv)
		return rv;
	if (dev->shared_tags) {
		/* The global tag set was sized by the module's queue counts. */
		dev->submit_queues = g_submit_queues;
		dev->prev_submit_queues = g_submit_queues;
		dev->poll_queues = g_poll_queues;
		dev->prev_poll_queues = g_poll_queues;
	}

	nullb = (struct nullb *)kzalloc(sizeof(*nullb), GFP_KERNEL);
	if (!nullb)
		return -ENOMEM;
	nullb->dev = dev;
	dev->nullb = nullb;
	INIT_LIST_HEAD(&nullb->list);
	spin_lock_init(&nullb->lock);

	rv = null_validate_limits(nullb);
	if (rv)
		goto out_free_nullb;
	if (dev->cache_size > 0)
		set_bit(NULLB_DEV_FL_CACHE, &dev->flags);

	rv = null_ida_alloc();
	if (rv < 0)
		goto out_free_nullb;
	nullb->index = rv;
	dev->index = rv;

	if (dev->name[0])
		snprintf(nullb->disk_name, sizeof(nullb->disk_name), "%s", dev->name);
	else
		snprintf(nullb->disk_name, sizeof(nullb->disk_name), "nullb%d", nullb->index);
	nullb->capacity = ((sector_t)dev->size * SZ_1M) >> SECTOR_SHIFT;

	rv = null_add_dev_blk(nullb);
	if (rv)
		goto out_ida_free;

	if (dev->mbps) {
		set_bit(NULLB_DEV_FL_THROTTLED, &dev->flags);
		nullb_setup_bwtimer(nullb);
	}

	list_add_tail(&nullb->list, &nullb_list);
	pr_info("disk %s created\n", nullb->disk_name);
	return 0;

out_ida_free:
	__clear_bit(nullb->index, nullb_indexes);
out_free_nullb:
	clear_bit(NULLB_DEV_FL_CACHE, &dev->flags);
	kfree(nullb);
	dev->nullb = NULL;
	return rv;
}

void null_del_dev(struct nullb *nullb)
{
	struct nullb_device *dev;

	if (!nullb)
		return;
	dev = nullb->dev;

	__clear_bit(nullb->index, nullb_indexes);
	list_del_init(&nullb->list);

	null_del_dev_blk(nullb);

	if (test_bit(NULLB_DEV_FL_THROTTLED, &dev->flags)) {
		hrtimer_cancel(&nullb->bw_timer);
		atomic_long_set(&nullb->cur_bytes, LONG_MAX);
		blk_mq_start_stopped_hw_queues(nullb->q, true);
		clear_bit(NULLB_DEV_FL_THROTTLED, &dev->flags);
	}
	null_free_dev_blk(nullb);

	if (test_bit(NULLB_DEV_FL_CACHE, &dev->flags)) {
		null_free_device_storage(dev, true);
		clear_bit(NULLB_DEV_FL_CACHE, &dev->flags);
	}
	kfree(nullb);
	dev->nullb = NULL;
}

static struct nullb *null_find_dev_by_name(const char *name)
{
	struct nullb *nullb = NULL, *nb;

	mutex_lock(&lock);
	list_for_each_entry (nb, &nullb_list, list) {
		if (strcmp(nb->disk_name, name) == 0) {
			nullb = nb;
			break;
		}
	}
	mutex_unlock(&lock);
	return nullb;
}

struct nullb *null_lookup_dev(const char *name)
{
	return null_find_dev_by_name(name);
}

unsigned int null_nr_devices(void)
{
	struct nullb *nb;
	unsigned int n = 0;

	mutex_lock(&lock);
	list_for_each_entry (nb, &nullb_list, list)
		n++;
	mutex_unlock(&lock);
	return n;
}

/* ---- configfs ---- */

static struct nullb_device *null_find_cfs_dev(const char *name)
{
	struct nullb_device *dev;

	list_for_each_entry (dev, &nullb_cfs_list, cfs_list)
		if (strcmp(dev->name, name) == 0)
			return dev;
	return NULL;
}

struct nullb_device *nullb_group_make(const char *name)
{
	struct nullb_device *dev;

	if (!name || !name[0] || strlen(name) >= NULLB_DISK_NAME_LEN)
		return (struct nullb_device *)ERR_PTR(-EINVAL);
	if (null_find_dev_by_name(name))
		return (struct nullb_device *)ERR_PTR(-EEXIST);
	mutex_lock(&lock);
	if (null_find_cfs_dev(name)) {
		mutex_unlock(&lock);
		return (struct nullb_device *)ERR_PTR(-EEXIST);
	}
	dev = null_alloc_dev();
	if (!dev) {
		mutex_unlock(&lock);
		return (struct nullb_device *)ERR_PTR(-ENOMEM);
	}
	strcpy(dev->name, name);
	dev->group.cg_item.ci_name = dev->name;
	list_add_tail(&dev->cfs_list, &nullb_cfs_list);
	mutex_unlock(&lock);
	return dev;
}

void nullb_group_drop(struct nullb_device *dev)
{
	mutex_lock(&lock);
	if (test_and_clear_bit(NULLB_DEV_FL_UP, &dev->flags)) {
		dev->power = false;
		null_del_dev(dev->nullb);
	}
	list_del_init(&dev->cfs_list);
	mutex_unlock(&lock);
	/* nullb_device_release() */
	null_free_device_storage(dev, false);
	null_free_dev(dev);
}

static int nullb_update_nr_hw_queues(struct nullb_device *dev, unsigned int submit_queues,
				     unsigned int poll_queues)
{
	int nr_hw_queues;

	if (!dev->nullb)
		return 0;
	/*
	 * Other devices use the global tag set too, and null_map_queues() maps
	 * it by the module's counts: its hardware queues are not this device's
	 * to change.
	 */
	if (dev->shared_tags)
		return -EINVAL;
	/* Zero submit queues is not a valid setting. */
	if (!submit_queues)
		return -EINVAL;
	/* The per-hctx nullb_queue array is sized by these limits. */
	if (submit_queues > nr_cpu_ids || poll_queues > (unsigned int)g_poll_queues)
		return -EINVAL;

	dev->prev_submit_queues = dev->submit_queues;
	dev->prev_poll_queues = dev->poll_queues;
	dev->submit_queues = submit_queues;
	dev->poll_queues = poll_queues;

	nr_hw_queues = submit_queues + poll_queues;
	if (null_update_nr_hw_queues_blk(dev->nullb, nr_hw_queues) != nr_hw_queues) {
		dev->submit_queues = dev->prev_submit_queues;
		dev->poll_queues = dev->prev_poll_queues;
		return -ENOMEM;
	}
	return 0;
}

static int nullb_apply_submit_queues(struct nullb_device *dev, unsigned int submit_queues)
{
	return nullb_update_nr_hw_queues(dev, submit_queues, dev->poll_queues);
}

static int nullb_apply_poll_queues(struct nullb_device *dev, unsigned int poll_queues)
{
	return nullb_update_nr_hw_queues(dev, dev->submit_queues, poll_queues);
}

enum nullb_attr_type {
	A_UINT,
	A_ULONG,
	A_BOOL,
	A_POWER,
	A_BADBLOCKS,
	A_ZONE_OFFLINE,
	A_ZONE_READONLY,
};

struct nullb_attr {
	const char *name;
	enum nullb_attr_type type;
	size_t offset;
	int (*apply)(struct nullb_device *dev, unsigned int new_value);
};

/* clang-format off */
#define NA(field, type) { #field, type, offsetof(struct nullb_device, field), NULL }
#define NA_APPLY(field, fn) { #field, A_UINT, offsetof(struct nullb_device, field), fn }
/* clang-format on */

/* Same order as the kernel's nullb_device_attrs[] (so "features" matches). */
static const struct nullb_attr nullb_device_attrs[] = {
	{ "badblocks", A_BADBLOCKS, 0, NULL },
	NA(badblocks_once, A_BOOL),
	NA(badblocks_partial_io, A_BOOL),
	NA(blocking, A_BOOL),
	NA(blocksize, A_UINT),
	NA(cache_size, A_ULONG),
	NA(completion_nsec, A_ULONG),
	NA(discard, A_BOOL),
	NA(fua, A_BOOL),
	NA(home_node, A_UINT),
	NA(hw_queue_depth, A_UINT),
	NA(index, A_UINT),
	NA(irqmode, A_UINT),
	NA(max_sectors, A_UINT),
	NA(mbps, A_UINT),
	NA(memory_backed, A_BOOL),
	NA(no_sched, A_BOOL),
	NA_APPLY(poll_queues, nullb_apply_poll_queues),
	{ "power", A_POWER, 0, NULL },
	NA(queue_mode, A_UINT),
	NA(rotational, A_BOOL),
	NA(shared_tag_bitmap, A_BOOL),
	NA(shared_tags, A_BOOL),
	NA(size, A_ULONG),
	NA_APPLY(submit_queues, nullb_apply_submit_queues),
	NA(use_per_node_hctx, A_BOOL),
	NA(virt_boundary, A_BOOL),
	NA(zone_append_max_sectors, A_UINT),
	NA(zone_capacity, A_ULONG),
	NA(zone_full, A_BOOL),
	NA(zone_max_active, A_UINT),
	NA(zone_max_open, A_UINT),
	NA(zone_nr_conv, A_UINT),
	{ "zone_offline", A_ZONE_OFFLINE, 0, NULL },
	{ "zone_readonly", A_ZONE_READONLY, 0, NULL },
	NA(zone_size, A_ULONG),
	NA(zoned, A_BOOL),
};

static const struct nullb_attr *nullb_find_attr(const char *name)
{
	for (const struct nullb_attr &a : nullb_device_attrs)
		if (strcmp(a.name, name) == 0)
			return &a;
	return NULL;
}

static inline struct nullb_device *to_nullb_device(struct config_item *item)
{
	return item ? container_of(to_config_group(item), struct nullb_device, group) : NULL;
}

/* The typed show and store helpers every plain attribute goes through. */
static inline ssize_t nullb_device_uint_attr_show(unsigned int val, char *page)
{
	return snprintf(page, PAGE_SIZE, "%u\n", val);
}

static inline ssize_t nullb_device_ulong_attr_show(unsigned long val, char *page)
{
	return snprintf(page, PAGE_SIZE, "%lu\n", val);
}

static inline ssize_t nullb_device_bool_attr_show(bool val, char *page)
{
	return snprintf(page, PAGE_SIZE, "%u\n", val);
}

static ssize_t nullb_device_uint_attr_store(unsigned int *val, const char *page, size_t count)
{
	unsigned int tmp;
	int result;

	result = kstrtouint(page, 0, &tmp);
	if (result < 0)
		return result;

	*val = tmp;
	return count;
}

static ssize_t nullb_device_ulong_attr_store(unsigned long *val, const char *page, size_t count)
{
	int result;
	unsigned long tmp;

	result = kstrtoul(page, 0, &tmp);
	if (result < 0)
		return result;

	*val = tmp;
	return count;
}

static ssize_t nullb_device_bool_attr_store(bool *val, const char *page, size_t count)
{
	bool tmp;
	int result;

	result = kstrtobool(page, &tmp);
	if (result < 0)
		return result;

	*val = tmp;
	return count;
}

static ssize_t nullb_device_power_show(struct config_item *item, char *page)
{
	return nullb_device_bool_attr_show(to_nullb_device(item)->power, page);
}

static ssize_t nullb_device_power_store(struct config_item *item, const char *page, size_t count)
{
	struct nullb_device *dev = to_nullb_device(item);
	bool newp = false;
	ssize_t ret;

	ret = nullb_device_bool_attr_store(&newp, page, count);
	if (ret < 0)
		return ret;

	ret = count;
	mutex_lock(&lock);
	if (!dev->power && newp) {
		if (test_and_set_bit(NULLB_DEV_FL_UP, &dev->flags))
			goto out;
		ret = null_add_dev(dev);
		if (ret) {
			clear_bit(NULLB_DEV_FL_UP, &dev->flags);
			goto out;
		}
		set_bit(NULLB_DEV_FL_CONFIGURED, &dev->flags);
		dev->power = newp;
		ret = count;
	} else if (dev->power && !newp) {
		if (test_and_clear_bit(NULLB_DEV_FL_UP, &dev->flags)) {
			dev->power = newp;
			null_del_dev(dev->nullb);
		}
		clear_bit(NULLB_DEV_FL_CONFIGURED, &dev->flags);
	}
out:
	mutex_unlock(&lock);
	return ret;
}

static ssize_t nullb_device_badblocks_show(struct config_item *item, char *page)
{
	struct nullb_device *t_dev = to_nullb_device(item);

	return badblocks_show(&t_dev->badblocks, page, 0);
}

/* "+start-end" marks sectors bad, "-start-end" clears them. */
static ssize_t nullb_device_badblocks_store(struct config_item *item, const char *page,
					    size_t count)
{
	struct nullb_device *t_dev = to_nullb_device(item);
	char *orig, *buf, *tmp;
	u64 start, end;
	int ret;

	orig = kstrndup(page, count, GFP_KERNEL);
	if (!orig)
		return -ENOMEM;

	buf = strstrip(orig);

	ret = -EINVAL;
	if (buf[0] != '+' && buf[0] != '-')
		goto out;
	tmp = strchr(&buf[1], '-');
	if (!tmp)
		goto out;
	*tmp = '\0';
	ret = kstrtoull(buf + 1, 0, &start);
	if (ret)
		goto out;
	ret = kstrtoull(tmp + 1, 0, &end);
	if (ret)
		goto out;
	ret = -EINVAL;
	if (start > end)
		goto out;
	/* The first write enables badblocks (shift -1 -> 0). */
	cmpxchg(&t_dev->badblocks.shift, -1, 0);
	if (buf[0] == '+')
		ret = badblocks_set(&t_dev->badblocks, start, end - start + 1, 1);
	else
		ret = badblocks_clear(&t_dev->badblocks, start, end - start + 1);
	if (ret == 0)
		ret = count;
out:
	kfree(orig);
	return ret;
}

static ssize_t nullb_device_zone_readonly_store(struct config_item *item, const char *page,
						size_t count)
{
	struct nullb_device *dev = to_nullb_device(item);
	ssize_t ret;

	mutex_lock(&lock);
	ret = zone_cond_store(dev, page, count, BLK_ZONE_COND_READONLY);
	mutex_unlock(&lock);

	return ret;
}

static ssize_t nullb_device_zone_offline_store(struct config_item *item, const char *page,
					       size_t count)
{
	struct nullb_device *dev = to_nullb_device(item);
	ssize_t ret;

	mutex_lock(&lock);
	ret = zone_cond_store(dev, page, count, BLK_ZONE_COND_OFFLINE);
	mutex_unlock(&lock);

	return ret;
}

/* "timeout_inject/<knob>" and friends: the fault_config configfs groups. */
static struct fault_attr *nullb_fault_group(struct nullb_device *dev, const char *attr,
					    const char **knob)
{
	static const struct {
		const char *group;
		size_t offset;
	} groups[] = {
		{ "timeout_inject/", offsetof(struct nullb_device, timeout_config) },
		{ "requeue_inject/", offsetof(struct nullb_device, requeue_config) },
		{ "init_hctx_fault_inject/",
		  offsetof(struct nullb_device, init_hctx_fault_config) },
	};

	for (const auto &g : groups) {
		size_t n = strlen(g.group);

		if (strncmp(attr, g.group, n) == 0) {
			*knob = attr + n;
			return &((struct nullb_fault_config *)((char *)dev + g.offset))->attr;
		}
	}
	return NULL;
}

static ssize_t nullb_fault_store(struct fault_attr *fa, const char *knob, const char *page,
				 size_t count)
{
	unsigned long v;
	int iv, ret;

	if (strcmp(knob, "times") == 0 || strcmp(knob, "space") == 0) {
		ret = kstrtoint(page, 0, &iv);
		if (ret)
			return ret;
		atomic_set(knob[0] == 't' ? &fa->times : &fa->space, iv);
		return count;
	}
	ret = kstrtoul(page, 0, &v);
	if (ret)
		return ret;
	if (strcmp(knob, "probability") == 0) {
		if (v > 100)
			return -EINVAL;
		fa->probability = v;
	} else if (strcmp(knob, "interval") == 0) {
		if (v == 0)
			return -EINVAL;
		fa->interval = v;
	} else if (strcmp(knob, "verbose") == 0) {
		fa->verbose = v;
	} else {
		return -ENOENT;
	}
	return count;
}

static ssize_t nullb_fault_show(struct fault_attr *fa, const char *knob, char *page)
{
	if (strcmp(knob, "times") == 0)
		return snprintf(page, PAGE_SIZE, "%d\n", atomic_read(&fa->times));
	if (strcmp(knob, "space") == 0)
		return snprintf(page, PAGE_SIZE, "%d\n", atomic_read(&fa->space));
	if (strcmp(knob, "probability") == 0)
		return snprintf(page, PAGE_SIZE, "%lu\n", fa->probability);
	if (strcmp(knob, "interval") == 0)
		return snprintf(page, PAGE_SIZE, "%lu\n", fa->interval);
	if (strcmp(knob, "verbose") == 0)
		return snprintf(page, PAGE_SIZE, "%lu\n", fa->verbose);
	return -ENOENT;
}

ssize_t nullb_attr_store(struct nullb_device *dev, const char *name, const char *page)
{
	const struct nullb_attr *a;
	size_t count = strlen(page);
	struct fault_attr *fa;
	const char *knob;
	void *field;
	int ret;

	fa = nullb_fault_group(dev, name, &knob);
	if (fa)
		return nullb_fault_store(fa, knob, page, count);

	a = nullb_find_attr(name);
	if (!a)
		return -ENOENT;
	field = (char *)dev + a->offset;

	switch (a->type) {
	case A_POWER:
		return nullb_device_power_store(&dev->group.cg_item, page, count);
	case A_BADBLOCKS:
		return nullb_device_badblocks_store(&dev->group.cg_item, page, count);
	case A_ZONE_OFFLINE:
		return nullb_device_zone_offline_store(&dev->group.cg_item, page, count);
	case A_ZONE_READONLY:
		return nullb_device_zone_readonly_store(&dev->group.cg_item, page, count);
	case A_UINT: {
		int (*apply_fn)(struct nullb_device * dev, unsigned int new_value) = a->apply;
		unsigned int new_value = 0;

		ret = nullb_device_uint_attr_store(&new_value, page, count);
		if (ret < 0)
			return ret;
		guard(mutex)(&lock);
		if (apply_fn)
			ret = apply_fn(dev, new_value);
		else if (test_bit(NULLB_DEV_FL_CONFIGURED, &dev->flags))
			ret = -EBUSY;
		if (ret < 0)
			return ret;
		*(unsigned int *)field = new_value;
		return count;
	}
	case A_ULONG: {
		unsigned long new_value = 0;

		ret = nullb_device_ulong_attr_store(&new_value, page, count);
		if (ret < 0)
			return ret;
		guard(mutex)(&lock);
		if (test_bit(NULLB_DEV_FL_CONFIGURED, &dev->flags))
			return -EBUSY;
		*(unsigned long *)field = new_value;
		return count;
	}
	case A_BOOL: {
		bool new_value = false;

		ret = nullb_device_bool_attr_store(&new_value, page, count);
		if (ret < 0)
			return ret;
		guard(mutex)(&lock);
		if (test_bit(NULLB_DEV_FL_CONFIGURED, &dev->flags))
			return -EBUSY;
		*(bool *)field = new_value;
		return count;
	}
	}
	return -EINVAL;
}

static ssize_t nullb_attr_show_one(struct nullb_device *dev, const char *name, char *page)
{
	const struct nullb_attr *a;
	struct fault_attr *fa;
	const char *knob;
	void *field;

	fa = nullb_fault_group(dev, name, &knob);
	if (fa)
		return nullb_fault_show(fa, knob, page);

	a = nullb_find_attr(name);
	if (!a)
		return -ENOENT;
	field = (char *)dev + a->offset;

	switch (a->type) {
	case A_POWER:
		return nullb_device_power_show(&dev->group.cg_item, page);
	case A_BADBLOCKS:
		return nullb_device_badblocks_show(&dev->group.cg_item, page);
	case A_ZONE_OFFLINE:
	case A_ZONE_READONLY:
		return -EPERM;
	case A_UINT:
		return nullb_device_uint_attr_show(*(unsigned int *)field, page);
	case A_ULONG:
		return nullb_device_ulong_attr_show(*(unsigned long *)field, page);
	case A_BOOL:
		return nullb_device_bool_attr_show(*(bool *)field, page);
	}
	return -EINVAL;
}

/* fs/configfs/file.c's bound on what a ->show() may claim to have written */
#define SIMPLE_ATTR_SIZE 4096

/*
 * The read side of configfs (fill_read_buffer()): a ->show() that returns
 * more than SIMPLE_ATTR_SIZE bytes gets a warning, and the read fails with
 * -EIO. badblocks_show() does so once its ranges pass a page: it adds what
 * snprintf() would have written.
 */
ssize_t nullb_attr_show(struct nullb_device *dev, const char *name, char *page)
{
	ssize_t count = nullb_attr_show_one(dev, name, page);

	if (count < 0)
		return count;
	if (WARN_ON_ONCE(count > (ssize_t)SIMPLE_ATTR_SIZE))
		return -EIO;
	return count;
}

ssize_t nullb_group_features_show(char *page)
{
	size_t left = PAGE_SIZE, written = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nullb_device_attrs); i++) {
		char delimiter = i + 1 == ARRAY_SIZE(nullb_device_attrs) ? '\n' : ',';
		int ret = snprintf(page + written, left, "%s%c", nullb_device_attrs[i].name,
				   delimiter);

		if ((size_t)ret >= left) {
			WARN_ONCE(1, "Too many null_blk features to print\n");
			memset(page, 0, PAGE_SIZE);
			return -ENOBUFS;
		}
		left -= ret;
		written += ret;
	}
	return written;
}

/* ---- module init/exit ---- */

static int null_create_dev(void)
{
	struct nullb_device *dev;
	int ret;

	dev = null_alloc_dev();
	if (!dev)
		return -ENOMEM;
	mutex_lock(&lock);
	ret = null_add_dev(dev);
	mutex_unlock(&lock);
	if (ret) {
		null_free_dev(dev);
		return ret;
	}
	return 0;
}

static void null_destroy_dev(struct nullb *nullb)
{
	struct nullb_device *dev = nullb->dev;

	null_del_dev(nullb);
	null_free_device_storage(dev, false);
	null_free_dev(dev);
}

int null_init(void)
{
	struct nullb *nullb;
	unsigned int i;
	int ret;

	if (g_bs > (int)PAGE_SIZE) {
		pr_warn("invalid block size\n");
		pr_warn("defaults block size to %lu\n", PAGE_SIZE);
		g_bs = PAGE_SIZE;
	}
	if (g_home_node != NUMA_NO_NODE && g_home_node >= (int)nr_online_nodes) {
		pr_err("invalid home_node value\n");
		g_home_node = NUMA_NO_NODE;
	}
	if (!null_setup_fault())
		return -EINVAL;
	if (g_queue_mode == NULL_Q_RQ) {
		pr_err("legacy IO path is no longer available\n");
		return -EINVAL;
	}
	if (g_use_per_node_hctx) {
		if (g_submit_queues != (int)nr_online_nodes) {
			pr_warn("submit_queues param is set to %u.\n", nr_online_nodes);
			g_submit_queues = nr_online_nodes;
		}
	} else if (g_submit_queues > (int)nr_cpu_ids) {
		g_submit_queues = nr_cpu_ids;
	} else if (g_submit_queues <= 0) {
		g_submit_queues = 1;
	}

	for (i = 0; i < nr_devices; i++) {
		ret = null_create_dev();
		if (ret)
			goto err_dev;
	}
	pr_info("module loaded\n");
	return 0;

err_dev:
	mutex_lock(&lock);
	while (!list_empty(&nullb_list)) {
		nullb = list_entry(nullb_list.next, struct nullb, list);
		null_destroy_dev(nullb);
	}
	mutex_unlock(&lock);
	null_free_global_tag_set();
	return ret;
}

void null_exit(void)
{
	struct nullb *nullb;

	/* configfs_unregister_subsystem(): drop every configfs device first. */
	while (!list_empty(&nullb_cfs_list))
		nullb_group_drop(list_first_entry(&nullb_cfs_list, struct nullb_device, cfs_list));

	mutex_lock(&lock);
	while (!list_empty(&nullb_list)) {
		nullb = list_entry(nullb_list.next, struct nullb, list);
		null_destroy_dev(nullb);
	}
	mutex_unlock(&lock);
	null_free_global_tag_set();
}
