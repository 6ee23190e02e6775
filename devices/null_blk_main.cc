// SPDX-License-Identifier: GPL-2.0-only
// drivers/block/null_blk/main.c: configuration, validation, power on/off,
// throttling and fault injection. Storage is in null_blk_storage.cc.
//
// Upstream: drivers/block/null_blk/main.c @ v6.12
#define KBUILD_MODNAME "null_blk"

#include <cctype>
#include <cstdio>
#include <cstring>

#include <uk/devices/null_blk.h>
#include <uk/linux/bitops.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/kstrtox.h>
#include <uk/linux/ktime.h>
#include <uk/linux/log2.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/mutex.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>

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

int g_no_sched;
module_param_named(no_sched, g_no_sched, int, 0444);
MODULE_PARM_DESC(no_sched, "No I/O scheduler");

int g_submit_queues = 1;
module_param_named(submit_queues, g_submit_queues, int, 0444);
MODULE_PARM_DESC(submit_queues, "Submission queues (hardware contexts)");

int g_poll_queues = 1;
module_param_named(poll_queues, g_poll_queues, int, 0444);
MODULE_PARM_DESC(poll_queues, "Polled (IOPOLL) submission queues");

int g_home_node = NUMA_NO_NODE;
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

bool g_blocking;
module_param_named(blocking, g_blocking, bool, 0444);
MODULE_PARM_DESC(blocking, "Register as a blocking blk-mq driver");

static bool g_shared_tags;
module_param_named(shared_tags, g_shared_tags, bool, 0444);
MODULE_PARM_DESC(shared_tags, "One tag set shared by all devices");

bool g_shared_tag_bitmap;
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

int g_hw_queue_depth = 64;
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

bool should_timeout_request(struct nullb_device *dev)
{
	if (null_fault_attr_idle(&dev->timeout_config.attr))
		return false;
	return should_fail(&dev->timeout_config.attr, 1);
}

bool should_requeue_request(struct nullb_device *dev)
{
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

blk_status_t null_handle_throttled(struct nullb *nullb, unsigned int bytes)
{
	blk_status_t sts = BLK_STS_OK;

	if (!hrtimer_active(&nullb->bw_timer))
		hrtimer_restart(&nullb->bw_timer);

	if (atomic_long_sub_return(bytes, &nullb->cur_bytes) < 0) {
		blk_mq_stop_hw_queues(nullb->q);
		/* The timer may have refilled between the sub and the stop. */
		if (atomic_long_read(&nullb->cur_bytes) > 0)
			blk_mq_start_stopped_hw_queues(nullb->q, true);
		sts = BLK_STS_DEV_RESOURCE;
	}
	return sts;
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

static ssize_t nullb_device_power_show(struct nullb_device *dev, char *page)
{
	return nullb_device_bool_attr_show(dev->power, page);
}

static ssize_t nullb_device_power_store(struct nullb_device *dev, const char *page, size_t count)
{
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

static ssize_t nullb_device_badblocks_show(struct nullb_device *dev, char *page)
{
	return badblocks_show(&dev->badblocks, page, 0);
}

/* "+start-end" marks sectors bad, "-start-end" clears them. */
static ssize_t nullb_device_badblocks_store(struct nullb_device *dev, const char *page,
					    size_t count)
{
	char *orig, *buf, *tmp, *end_p;
	u64 start, end;
	int ret;

	orig = kstrndup(page, count, GFP_KERNEL);
	if (!orig)
		return -ENOMEM;

	/* strstrip() */
	buf = orig;
	while (isspace(*buf))
		buf++;
	end_p = buf + strlen(buf);
	while (end_p > buf && isspace(end_p[-1]))
		*--end_p = '\0';

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
	cmpxchg(&dev->badblocks.shift, -1, 0);
	if (buf[0] == '+')
		ret = badblocks_set(&dev->badblocks, start, end - start + 1, 1);
	else
		ret = badblocks_clear(&dev->badblocks, start, end - start + 1);
	if (ret == 0)
		ret = count;
out:
	kfree(orig);
	return ret;
}

static ssize_t nullb_device_zone_readonly_store(struct nullb_device *dev, const char *page,
						size_t count)
{
	return zone_cond_store(dev, page, count, BLK_ZONE_COND_READONLY);
}

static ssize_t nullb_device_zone_offline_store(struct nullb_device *dev, const char *page,
					       size_t count)
{
	return zone_cond_store(dev, page, count, BLK_ZONE_COND_OFFLINE);
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
		return nullb_device_power_store(dev, page, count);
	case A_BADBLOCKS:
		return nullb_device_badblocks_store(dev, page, count);
	case A_ZONE_OFFLINE:
		return nullb_device_zone_offline_store(dev, page, count);
	case A_ZONE_READONLY:
		return nullb_device_zone_readonly_store(dev, page, count);
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
		return nullb_device_power_show(dev, page);
	case A_BADBLOCKS:
		return nullb_device_badblocks_show(dev, page);
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
