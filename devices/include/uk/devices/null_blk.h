/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * null_blk (drivers/block/null_blk/null_blk.h and main.c): configuration
 * (module parameters and the configfs attribute set), validation, device
 * power on/off, memory-backed storage, badblocks, bandwidth throttling and
 * fault injection decisions, and the blk-mq side (tag set, queue_rq,
 * completions), all in devices/null_blk_main.cc.
 *
 * Upstream: drivers/block/null_blk/null_blk.h @ v6.12
 * Upstream: drivers/block/null_blk/main.c @ v6.12
 */
#ifndef UK_DEVICES_NULL_BLK_H
#define UK_DEVICES_NULL_BLK_H

#include <linux/blkzoned.h>

#include <uk/linux/atomic.h>
#include <uk/linux/badblocks.h>
#include <uk/linux/bio.h>
#include <uk/linux/bitmap.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/configfs.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/hrtimer.h>
#include <uk/linux/list.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/types.h>

#ifndef NUMA_NO_NODE
#define NUMA_NO_NODE (-1)
#endif

/*
 * The Kconfig option that builds null_blk's fault injection: always on here,
 * so that the timeout, requeue and init_hctx faults can be tested.
 */
#define CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION 1

#define NULLB_DISK_NAME_LEN 32
#define NULLB_FAULT_STR_LEN 80

/* dev->flags bits */
enum nullb_device_flags {
	NULLB_DEV_FL_CONFIGURED = 0, /* powered on once: no more reconfiguration */
	NULLB_DEV_FL_UP = 1,	     /* currently on */
	NULLB_DEV_FL_THROTTLED = 2,  /* mbps limit in force */
	NULLB_DEV_FL_CACHE = 3,	     /* write-back cache in use */
};

enum {
	NULL_IRQ_NONE = 0,
	NULL_IRQ_SOFTIRQ = 1,
	NULL_IRQ_TIMER = 2,
};

enum {
	NULL_Q_BIO = 0,
	NULL_Q_RQ = 1,
	NULL_Q_MQ = 2,
};

/* One bit per 512-byte sector of the page, plus LOCK and FREE. */
#define MAP_SZ ((PAGE_SIZE >> SECTOR_SHIFT) + 2)
#define NULLB_PAGE_LOCK (MAP_SZ - 1)
#define NULLB_PAGE_FREE (MAP_SZ - 2)

/*
 * A struct page * of the shim is the page's address and has no fields, but
 * null_blk keeps the page's index in its radix tree in page->index. The
 * page of a nullb_page is therefore this pair: it converts to the struct
 * page * wherever one is wanted (alloc_pages() assigns it, kmap_local_page()
 * and __free_page() take it), and t_page->page->index is the index.
 */
struct nullb_page_ref {
	struct page *addr;
	unsigned long index;

	operator struct page *() const
	{
		return addr;
	}
	struct nullb_page_ref *operator->()
	{
		return this;
	}
	struct nullb_page_ref &operator=(struct page *page)
	{
		addr = page;
		return *this;
	}
};

struct nullb_page {
	struct nullb_page_ref page;
	DECLARE_BITMAP(bitmap, MAP_SZ);
};

/* Stand-in for the kernel's configfs fault_config group. */
struct nullb_fault_config {
	struct fault_attr attr;
};

struct nullb;

/* The per-request PDU (tag_set->cmd_size). */
struct nullb_cmd {
	blk_status_t error;
	bool fake_timeout;
	struct nullb_queue *nq;
	struct hrtimer timer; /* irqmode 2 completion */
};

/* One per hardware context (hctx->driver_data). */
struct nullb_queue {
	struct nullb_device *dev;
	unsigned int requeue_selection;

	struct list_head poll_list; /* started requests of a poll hctx */
	spinlock_t poll_lock;
};

struct nullb_device {
	struct nullb *nullb;
	struct config_group group;	/* the item the attribute functions take */
	char name[NULLB_DISK_NAME_LEN]; /* configfs directory name ("" if none) */
	struct list_head cfs_list;	/* on the configfs group's list */
	struct radix_tree_root data;	/* backing pages of the disk */
	struct radix_tree_root cache;	/* write-back cache pages */
	unsigned long flags;		/* NULLB_DEV_FL_* */
	unsigned int curr_cache;
	struct badblocks badblocks;
	struct nullb_fault_config timeout_config;
	struct nullb_fault_config requeue_config;
	struct nullb_fault_config init_hctx_fault_config;

	unsigned long size;	       /* capacity, in MiB */
	unsigned long completion_nsec; /* completion delay per request, ns */
	unsigned long cache_size;      /* write-back cache limit, MiB */
	unsigned long zone_size;       /* zoned only: MiB per zone */
	unsigned long zone_capacity;   /* zoned only: writable MiB of a zone */
	unsigned int zone_nr_conv;
	unsigned int zone_max_open;
	unsigned int zone_max_active;
	unsigned int zone_append_max_sectors;
	unsigned int submit_queues;
	unsigned int prev_submit_queues;
	unsigned int poll_queues;
	unsigned int prev_poll_queues;
	unsigned int home_node;
	unsigned int queue_mode;
	unsigned int blocksize;
	unsigned int max_sectors;
	unsigned int irqmode;
	unsigned int hw_queue_depth;
	unsigned int index; /* only valid while a disk exists */
	unsigned int mbps;  /* bandwidth cap in MiB/s */
	bool blocking;
	bool use_per_node_hctx;
	bool power;
	bool memory_backed;
	bool discard;
	bool zoned;
	bool zone_full;
	bool virt_boundary;
	bool no_sched;
	bool shared_tags;
	bool shared_tag_bitmap;
	bool fua;
	bool rotational;
	bool badblocks_once;
	bool badblocks_partial_io;
};

struct nullb {
	struct nullb_device *dev;
	struct list_head list;
	unsigned int index;
	struct request_queue *q; /* set by null_add_dev_blk() */
	struct gendisk *disk;
	struct blk_mq_tag_set *tag_set; /* &__tag_set, or the global one (shared_tags) */
	struct blk_mq_tag_set __tag_set;
	struct nullb_queue *queues;
	atomic_long_t cur_bytes; /* throttling budget left this tick */
	struct hrtimer bw_timer;
	unsigned long cache_flush_pos;
	spinlock_t lock;	     /* storage (radix trees, pages) */
	sector_t capacity;	     /* in 512-byte sectors */
	unsigned int max_hw_sectors; /* validated queue limit */
	char disk_name[NULLB_DISK_NAME_LEN];
};

/* ---- module parameters (module_param*) ---- */
/*
 * The parameters are module_param()s of module "null_blk" (kernel/params.c,
 * <uk/linux/moduleparam.h>): on a command line they are "null_blk.NAME"
 * (UKERN_CMDLINE, docs/params.md). null_blk_module_params() is "modprobe
 * null_blk @args": "name=value name2=value2 ..." with the kernel's parsing
 * (quotes, '-' == '_' in names, a bool without a value means true). 0, or
 * the error of the last bad parameter, each named by a pr_err(): -ENOENT
 * (unknown name: the kernel's loader would warn and go on), -EINVAL or
 * -ERANGE (bad value), -ENOSPC (string too long). The others stay set.
 */
int null_blk_module_params(const char *args);
/* Restores every module parameter to its default (tests). */
void null_blk_reset_module_params(void);
/* Reads a module parameter as /sys/module/null_blk/parameters/<name> shows it. */
ssize_t null_blk_param_show(const char *name, char *page);
/* module_init/module_exit: nr_devices devices named nullb<N>. */
int null_init(void);
void null_exit(void);

/* ---- configfs (/sys/kernel/config/nullb/) ---- */
/* mkdir: a device with the module defaults, or ERR_PTR(-EEXIST/-ENOMEM). */
struct nullb_device *nullb_group_make(const char *name);
/* rmdir: powers off and frees the device and its storage. */
void nullb_group_drop(struct nullb_device *dev);
/*
 * Writes @page to attribute @attr: strlen(page) on success, or -EINVAL
 * (bad value), -EBUSY (configured and the attribute has no apply
 * function), -ENOENT (no such attribute), -EPERM (read-only). Fault
 * injection attributes are "<group>/<name>", e.g. "timeout_inject/times".
 */
ssize_t nullb_attr_store(struct nullb_device *dev, const char *attr, const char *page);
/*
 * Reads attribute @attr into @page (PAGE_SIZE bytes); length or -errno. As
 * configfs, -EIO with a warning when the show claims more than a page.
 */
ssize_t nullb_attr_show(struct nullb_device *dev, const char *attr, char *page);
/* The group's "features": every attribute name, comma separated. */
ssize_t nullb_group_features_show(char *page);

/* ---- device life cycle ---- */
int null_add_dev(struct nullb_device *dev);
void null_del_dev(struct nullb *nullb);
/* The device whose disk is named @name, or NULL (null_find_dev_by_name()). */
struct nullb *null_lookup_dev(const char *name);
unsigned int null_nr_devices(void);

/* Module exit: frees the global tag set (shared_tags) if it was built. */
void null_free_global_tag_set(void);

/* ---- memory-backed storage ---- */
blk_status_t null_handle_discard(struct nullb_device *dev, sector_t sector, sector_t nr_sectors);
/*
 * The data part of null_handle_rq() for a bio: at most @nr_sectors,
 * starting at bio->bi_iter.bi_sector (takes nullb->lock).
 */
blk_status_t null_handle_bio_transfer(struct nullb *nullb, struct bio *bio, sector_t nr_sectors);
/*
 * The bad-block test of null_handle_badblocks(): BLK_STS_IOERR if [sector,
 * +*nr_sectors) hits a bad block, with *nr_sectors set to the partial I/O
 * allowed (badblocks_partial_io) or 0; the hit range is cleared first with
 * badblocks_once.
 */
blk_status_t null_check_badblocks(struct nullb_device *dev, sector_t sector,
				  unsigned int *nr_sectors);
/* Bad blocks, then the memory-backed transfer or discard of a command. */
blk_status_t null_process_cmd(struct nullb_cmd *cmd, enum req_op op, sector_t sector,
			      unsigned int nr_sectors);
/*
 * null_handle_cmd() minus the request and its completion: a flush writes
 * the cache back; anything else meets the bad blocks, then the memory-backed
 * transfer or discard of @bio (NULL for a flush or a discard).
 */
blk_status_t null_process_bio(struct nullb *nullb, struct bio *bio, enum req_op op, sector_t sector,
			      unsigned int nr_sectors);

/* ---- zoned devices: none here, as in a kernel without CONFIG_BLK_DEV_ZONED ---- */
static inline blk_status_t null_process_zoned_cmd(struct nullb_cmd *cmd, enum req_op op,
						  sector_t sector, sector_t nr_sectors)
{
	return BLK_STS_NOTSUPP;
}

static inline size_t null_zone_valid_read_len(struct nullb *nullb, sector_t sector,
					      unsigned int len)
{
	return len;
}

static inline ssize_t zone_cond_store(struct nullb_device *dev, const char *page, size_t count,
				      enum blk_zone_cond cond)
{
	return -EOPNOTSUPP;
}

#endif /* UK_DEVICES_NULL_BLK_H */
