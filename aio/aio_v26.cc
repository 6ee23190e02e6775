// SPDX-License-Identifier: GPL-2.0-only
/*
 * fs/aio.c as Linux 2.6 had it: retry-based AIO (2.6.8 to 3.9), with the
 * three states of "AIO workqueue context switch reduction" (2004) and its
 * follow-ups as run-time switches (aio.v26_retry, aio.v26_stall_fix,
 * aio.v26_put_cancel). docs/aio-v26.md describes it.
 *
 * A request's ki_retry method runs with current->io_wait pointing at the
 * request's ki_wait. Where a synchronous call would sleep, the method
 * queues that entry on the wait queue and returns -EIOCBRETRY; the wake-up
 * calls aio_wake_function(), which kicks the request onto its context's
 * run list, and the list is run by io_submit/io_getevents (after the
 * patch) or by aio_kick_handler() on aio_wq.
 *
 * What stands in for the kernel here: the ring is anonymous memory mapped
 * in the program (the kernel wrote it through kmap of the ring pages); the
 * mm's ioctx_list is one list for the process; use_mm()/unuse_mm() only
 * record the borrowed mm; files are this engine's struct file (ukern pipes,
 * host descriptors read and written with pread/pwrite, or ukern block
 * devices, whose O_DIRECT requests go to blk-mq and return -EIOCBQUEUED).
 */
#define KBUILD_MODNAME "aio"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/bio.h>
#include <uk/linux/bitops.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/kernel.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/printk.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/timer.h>

#include "aio_internal.h"
#include "usercopy.h"

#define AIO_RING_MAGIC 0xa10a10a1
#define AIO_RING_COMPAT_FEATURES 1
#define AIO_RING_INCOMPAT_FEATURES 0
#define KIOCB_KEY 0
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#endif

namespace uk::aio26
{

Engine aio_engine = Engine::kCurrent;
RetryMode aio_retry_mode = RetryMode::kRunning;
bool aio_stall_fix = true;
bool aio_put_cancel = true;

static const char *const aio_engine_names[] = { "current", "v26" };
module_param_enum(engine, aio_engine, aio_engine_names, 0644);
MODULE_PARM_DESC(
	engine, "fs/aio.c of the contexts io_setup() makes: current (6.12), v26 (retry-based 2.6)");

static const char *const aio_retry_names[] = { "before", "after", "running" };
module_param_enum(v26_retry, aio_retry_mode, aio_retry_names, 0644);
MODULE_PARM_DESC(
	v26_retry,
	"v26 retries: before (queue_work per retry), after (run by io_submit/io_getevents, "
	"delayed work), running (after + ctx->running guard)");

module_param_named(v26_stall_fix, aio_stall_fix, bool, 0644);
MODULE_PARM_DESC(v26_stall_fix,
		 "v26: 1-jiffy worker delay when somebody waits, aio_run_all_iocbs()");

module_param_named(v26_put_cancel, aio_put_cancel, bool, 0644);
MODULE_PARM_DESC(v26_put_cancel, "v26: cancel_delayed_work(&ctx->wq) before freeing a context");

static RetryMode retry_mode(void)
{
	return aio_retry_mode;
}

/* ---- the ring (the same ABI as aio.cc's) ---- */
struct aio_ring {
	unsigned id;
	unsigned nr;
	unsigned head;
	unsigned tail;
	unsigned magic;
	unsigned compat_features;
	unsigned incompat_features;
	unsigned header_length;
	struct io_event io_events[];
};
static_assert(sizeof(struct aio_ring) == 32, "aio_ring header is ABI");

/* ---- counters ---- */
static Stats aio_stats;
static long live_reqs;
static long live_ctx;

#define STAT_INC(f) __atomic_fetch_add(&aio_stats.f, 1, __ATOMIC_RELAXED)

Stats stats(void)
{
	Stats s;

	s.kick_handler_runs = __atomic_load_n(&aio_stats.kick_handler_runs, __ATOMIC_RELAXED);
	s.worker_iocbs_run = __atomic_load_n(&aio_stats.worker_iocbs_run, __ATOMIC_RELAXED);
	s.queue_work_calls = __atomic_load_n(&aio_stats.queue_work_calls, __ATOMIC_RELAXED);
	s.retries = __atomic_load_n(&aio_stats.retries, __ATOMIC_RELAXED);
	s.kicks = __atomic_load_n(&aio_stats.kicks, __ATOMIC_RELAXED);
	s.running_skips = __atomic_load_n(&aio_stats.running_skips, __ATOMIC_RELAXED);
	return s;
}

long nr_live_reqs(void)
{
	return __atomic_load_n(&live_reqs, __ATOMIC_RELAXED);
}

long nr_live_ctx(void)
{
	return __atomic_load_n(&live_ctx, __ATOMIC_RELAXED);
}

/* ---- use_mm / unuse_mm ---- */
static __thread struct mm_struct *active_mm;

void use_mm(struct mm_struct *mm)
{
	active_mm = mm;
}

void unuse_mm(struct mm_struct *mm)
{
	WARN_ON(active_mm != mm);
	active_mm = NULL;
}

struct mm_struct *current_active_mm(void)
{
	return active_mm ? active_mm : aio_current_mm();
}

/* ---- aio_wq and the deferred fput ---- */
struct workqueue_struct *aio_wq;
static std::once_flag aio_wq_once;

static DEFINE_SPINLOCK(fput_lock);
static LIST_HEAD(fput_head);
struct fput_entry {
	struct list_head list;
	struct file *file;
};
static void aio_fput_routine(struct work_struct *work);
static DECLARE_WORK(fput_work, aio_fput_routine);

static void aio_setup(void)
{
	std::call_once(aio_wq_once, [] { aio_wq = create_workqueue("aio"); });
}

/*
 * The work items of aio_wq go through these: the shim's workqueue, or the
 * test hook's (aio_wq_ops) when a test runs the worker and the timer itself.
 */
const AioWqOps *aio_wq_ops;

static bool aio_wq_queue_work(struct work_struct *work)
{
	if (unlikely(aio_wq_ops))
		return aio_wq_ops->queue_work(work);
	return queue_work(aio_wq, work);
}

static bool aio_wq_queue_delayed_work(struct delayed_work *dwork, unsigned long delay)
{
	if (unlikely(aio_wq_ops))
		return aio_wq_ops->queue_delayed_work(dwork, delay);
	return queue_delayed_work(aio_wq, dwork, delay);
}

static bool aio_wq_cancel_delayed_work(struct delayed_work *dwork)
{
	if (unlikely(aio_wq_ops))
		return aio_wq_ops->cancel_delayed_work(dwork);
	return cancel_delayed_work(dwork);
}

static void aio_wq_flush(void)
{
	if (unlikely(aio_wq_ops)) {
		aio_wq_ops->flush();
		return;
	}
	flush_workqueue(aio_wq);
}

void flush_aio_wq(void)
{
	aio_setup();
	aio_wq_flush();
}

/* ---- files ---- */
static ssize_t host_aio_read(struct kiocb *iocb, char __user *buf, size_t count, loff_t pos)
{
	ssize_t ret = pread(iocb->ki_filp->f_fd, buf, count, pos);

	return ret < 0 ? -errno : ret;
}

static ssize_t host_aio_write(struct kiocb *iocb, const char __user *buf, size_t count, loff_t pos)
{
	ssize_t ret = pwrite(iocb->ki_filp->f_fd, buf, count, pos);

	return ret < 0 ? -errno : ret;
}

static int host_aio_fsync(struct kiocb *iocb, int datasync)
{
	int fd = iocb->ki_filp->f_fd;
	int ret = datasync ? fdatasync(fd) : fsync(fd);

	return ret < 0 ? -errno : 0;
}

static int host_release(struct file *file)
{
	close(file->f_fd);
	return 0;
}

static const struct file_operations host_fops = {
	.aio_read = host_aio_read,
	.aio_write = host_aio_write,
	.aio_fsync = host_aio_fsync,
	.read = NULL,
	.write = NULL,
	.release = host_release,
};

/*
 * A ukern block device (a descriptor of aio_open_blkdev()), as 2.6's
 * def_blk_fops with generic_file_aio_read/write over blkdev_direct_IO:
 * opened O_DIRECT, a request's bios go to blk-mq and the method returns
 * -EIOCBQUEUED; the end of the last bio calls aio_complete() with the bytes
 * done or -errno, from whatever context the device completes in. The
 * direct-I/O checks are blockdev_direct_IO's: an offset, length or buffer
 * that is not a whole number of logical blocks is -EINVAL. Without
 * O_DIRECT the transfer completes in the method (2.6 read and wrote
 * through the page cache synchronously there), through an aligned bounce
 * buffer when the caller's is not aligned. private_data is the file
 * aio_fget() gave, whose reference keeps the device.
 */
static struct block_device *v26_file_bdev(struct file *file, bool *direct)
{
	return uk::aio_file_bdev((struct ::file *)file->private_data, direct);
}

/* dio_complete() of an asynchronous request: the kiocb's event. */
static void blkdev_v26_end_io(void *priv, long res)
{
	aio_complete((struct kiocb *)priv, res, 0);
}

static ssize_t blkdev_v26_rw(struct kiocb *iocb, char __user *buf, size_t count, loff_t pos,
			     bool write)
{
	bool direct = false;
	struct block_device *bdev = v26_file_bdev(iocb->ki_filp, &direct);
	unsigned int flags = write ? BLKDEV_RW_WRITE : 0;
	unsigned int lbs = bdev_logical_block_size(bdev);
	struct iovec iov = { .iov_base = buf, .iov_len = count };
	ssize_t ret;
	void *bounce;

	if (!count)
		return 0;
	if (direct || !(((unsigned long)buf | count) & (lbs - 1))) {
		if (uk::aio_blkdev_fault_in(bdev, pos, &iov, 1, write))
			return -EFAULT;
		return blkdev_rw(bdev, pos, &iov, 1, flags, direct ? blkdev_v26_end_io : NULL,
				 direct ? iocb : NULL);
	}
	/* a length that is not whole blocks stays -EINVAL, as with O_DIRECT */
	if (count & (lbs - 1))
		return -EINVAL;
	bounce = aligned_alloc(PAGE_SIZE, round_up(count, (size_t)PAGE_SIZE));
	if (!bounce)
		return -ENOMEM;
	if (write && copy_from_user(bounce, buf, count)) {
		free(bounce);
		return -EFAULT;
	}
	iov.iov_base = bounce;
	ret = blkdev_rw(bdev, pos, &iov, 1, flags, NULL, NULL);
	if (!write && ret > 0) {
		size_t done = ret - copy_to_user(buf, bounce, ret);

		if (done < (size_t)ret)
			ret = done ? (ssize_t)done : -EFAULT;
	}
	free(bounce);
	return ret;
}

static ssize_t blkdev_v26_aio_read(struct kiocb *iocb, char __user *buf, size_t count, loff_t pos)
{
	return blkdev_v26_rw(iocb, buf, count, pos, false);
}

static ssize_t blkdev_v26_aio_write(struct kiocb *iocb, const char __user *buf, size_t count,
				    loff_t pos)
{
	return blkdev_v26_rw(iocb, (char __user *)buf, count, pos, true);
}

/* blkdev_issue_flush(), in the method: there is no page cache to write back. */
static int blkdev_v26_aio_fsync(struct kiocb *iocb, int datasync)
{
	struct block_device *bdev = v26_file_bdev(iocb->ki_filp, NULL);
	struct bio bio;

	(void)datasync;
	bio_init(&bio, bdev, NULL, 0, REQ_OP_FLUSH);
	return submit_bio_wait(&bio);
}

static int blkdev_v26_release(struct file *file)
{
	::fput((struct ::file *)file->private_data);
	return 0;
}

static const struct file_operations blkdev_v26_fops = {
	.aio_read = blkdev_v26_aio_read,
	.aio_write = blkdev_v26_aio_write,
	.aio_fsync = blkdev_v26_aio_fsync,
	.read = NULL,
	.write = NULL,
	.release = blkdev_v26_release,
};

/* A v26 file over the block device behind @fd, or NULL if @fd is not one. */
static struct file *blkdev_v26_fget(int fd)
{
	struct ::file host_storage = {};
	struct ::file *bf;
	struct file *file;

	if (!uk::aio_is_blkdev(fd))
		return NULL;
	bf = ::aio_fget((unsigned)fd, &host_storage);
	if (!bf)
		return NULL;
	if (!uk::aio_file_bdev(bf, NULL)) {
		::fput(bf);
		return NULL;
	}
	file = (struct file *)kzalloc(sizeof(*file), GFP_KERNEL);
	if (!file) {
		::fput(bf);
		return NULL;
	}
	file->f_op = &blkdev_v26_fops;
	if (bf->f_mode & FMODE_READ)
		file->f_mode |= 1u; /* FMODE_READ */
	if (bf->f_mode & FMODE_WRITE)
		file->f_mode |= 2u; /* FMODE_WRITE */
	file->f_fd = -1;
	file->private_data = bf;
	atomic_long_set(&file->f_count, 1);
	return file;
}

static constexpr int kMaxFds = 1 << 16;
static DEFINE_SPINLOCK(fd_lock);
static struct file *fd_table[kMaxFds];

int fd_install(int fd, struct file *file)
{
	int ret = 0;

	if (fd < 0 || fd >= kMaxFds)
		return -EMFILE;
	spin_lock(&fd_lock);
	if (fd_table[fd])
		ret = -EBUSY;
	else
		fd_table[fd] = file;
	spin_unlock(&fd_lock);
	return ret;
}

int fd_close(int fd)
{
	struct file *file = NULL;

	if (fd < 0 || fd >= kMaxFds)
		return -EBADF;
	spin_lock(&fd_lock);
	file = fd_table[fd];
	fd_table[fd] = NULL;
	spin_unlock(&fd_lock);
	if (!file)
		return -EBADF;
	/* the number is free at once, as close(2)'s; the file lives on in its requests */
	close(fd);
	fput(file);
	return 0;
}

bool fd_is_ours(int fd)
{
	bool ret;

	if (fd < 0 || fd >= kMaxFds)
		return false;
	spin_lock(&fd_lock);
	ret = fd_table[fd] != NULL;
	spin_unlock(&fd_lock);
	return ret;
}

struct file *fget(unsigned int fd)
{
	struct file *file = NULL;
	struct stat st;
	int fl, dfd;

	if (fd < (unsigned)kMaxFds) {
		spin_lock(&fd_lock);
		file = fd_table[fd];
		if (file)
			atomic_long_inc(&file->f_count);
		spin_unlock(&fd_lock);
		if (file)
			return file;
		file = blkdev_v26_fget((int)fd);
		if (file)
			return file;
	}
	fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || fstat((int)fd, &st))
		return NULL;
	dfd = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return NULL;
	file = (struct file *)kzalloc(sizeof(*file), GFP_KERNEL);
	if (!file) {
		close(dfd);
		return NULL;
	}
	file->f_op = &host_fops;
	file->f_flags = (unsigned)fl;
	if ((fl & O_ACCMODE) != O_WRONLY)
		file->f_mode |= 1u; /* FMODE_READ */
	if ((fl & O_ACCMODE) != O_RDONLY)
		file->f_mode |= 2u; /* FMODE_WRITE */
	file->f_fifo = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
	file->f_fd = dfd;
	atomic_long_set(&file->f_count, 1);
	return file;
}

void fput(struct file *file)
{
	if (atomic_long_dec_and_test(&file->f_count)) {
		if (file->f_op->release)
			file->f_op->release(file);
		kfree(file);
	}
}

/* The last reference of a request's file went under ctx_lock: release it from aio_wq. */
static void aio_fput_routine(struct work_struct *work)
{
	LIST_HEAD(list);

	spin_lock_irq(&fput_lock);
	list_splice_init(&fput_head, &list);
	spin_unlock_irq(&fput_lock);
	while (!list_empty(&list)) {
		struct fput_entry *e = list_first_entry(&list, struct fput_entry, list);

		list_del(&e->list);
		e->file->f_op->release(e->file);
		kfree(e->file);
		kfree(e);
	}
}

static void aio_fput_deferred(struct file *file)
{
	unsigned long flags;
	struct fput_entry *e;

	if (!atomic_long_dec_and_test(&file->f_count))
		return;
	if (!file->f_op->release) {
		kfree(file);
		return;
	}
	e = (struct fput_entry *)kmalloc(sizeof(*e), GFP_ATOMIC | __GFP_NOFAIL);
	e->file = file;
	spin_lock_irqsave(&fput_lock, flags);
	list_add_tail(&e->list, &fput_head);
	spin_unlock_irqrestore(&fput_lock, flags);
	aio_wq_queue_work(&fput_work);
}

/* ---- contexts: the mm's ioctx_list ---- */
static DEFINE_SPINLOCK(ioctx_list_lock);
static struct kioctx *ioctx_list;
static int nr_ctx_listed; /* lets owns() skip the lock while no context exists */

static DEFINE_SPINLOCK(aio_nr_lock);
static unsigned long aio_nr_v26; /* events reserved by this engine's contexts */

static void aio_kick_handler(struct work_struct *work);

static int aio_setup_ring(struct kioctx *ctx)
{
	struct aio_ring_info *info = &ctx->ring_info;
	unsigned nr_events = ctx->max_reqs;
	unsigned long size;
	struct aio_ring *ring;
	void *p;

	/* one slot stays empty (head == tail means empty), one for good luck */
	nr_events += 2;
	size = sizeof(struct aio_ring) + nr_events * sizeof(struct io_event);
	size = (size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -EAGAIN;
	info->mmap_base = (unsigned long)p;
	info->mmap_size = size;
	info->nr = (unsigned)((size - sizeof(struct aio_ring)) / sizeof(struct io_event));
	info->tail = 0;
	ctx->user_id = info->mmap_base;

	ring = (struct aio_ring *)p;
	ring->nr = info->nr;
	ring->id = ~0U;
	ring->head = ring->tail = 0;
	ring->magic = AIO_RING_MAGIC;
	ring->compat_features = AIO_RING_COMPAT_FEATURES;
	ring->incompat_features = AIO_RING_INCOMPAT_FEATURES;
	ring->header_length = sizeof(struct aio_ring);
	return 0;
}

static void aio_free_ring(struct kioctx *ctx)
{
	struct aio_ring_info *info = &ctx->ring_info;

	if (info->mmap_size)
		munmap((void *)info->mmap_base, info->mmap_size);
	info->mmap_size = 0;
}

static struct aio_ring *ctx_ring(struct kioctx *ctx)
{
	return (struct aio_ring *)ctx->ring_info.mmap_base;
}

static struct kioctx *ioctx_alloc(unsigned nr_events)
{
	struct kioctx *ctx;

	/* Prevent overflows */
	if (nr_events > (0x10000000U / sizeof(struct io_event)) ||
	    nr_events > (0x10000000U / sizeof(struct kiocb)))
		return (struct kioctx *)ERR_PTR(-EINVAL);
	if ((unsigned long)nr_events > aio_max_nr)
		return (struct kioctx *)ERR_PTR(-EAGAIN);

	ctx = (struct kioctx *)kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return (struct kioctx *)ERR_PTR(-ENOMEM);
	ctx->max_reqs = nr_events;
	ctx->mm = aio_current_mm();
	atomic_set(&ctx->users, 1);
	spin_lock_init(&ctx->ctx_lock);
	spin_lock_init(&ctx->ring_info.ring_lock);
	init_waitqueue_head(&ctx->wait);
	INIT_LIST_HEAD(&ctx->active_reqs);
	INIT_LIST_HEAD(&ctx->run_list);
	INIT_DELAYED_WORK(&ctx->wq, aio_kick_handler);

	if (aio_setup_ring(ctx) < 0) {
		kfree(ctx);
		return (struct kioctx *)ERR_PTR(-EAGAIN);
	}

	/* limit the number of events of the engine's contexts */
	spin_lock(&aio_nr_lock);
	if (aio_nr_v26 + ctx->max_reqs > aio_max_nr || aio_nr_v26 + ctx->max_reqs < aio_nr_v26)
		ctx->max_reqs = 0;
	else
		aio_nr_v26 += ctx->max_reqs;
	spin_unlock(&aio_nr_lock);
	if (ctx->max_reqs == 0) {
		aio_free_ring(ctx);
		kfree(ctx);
		return (struct kioctx *)ERR_PTR(-EAGAIN);
	}

	spin_lock(&ioctx_list_lock);
	ctx->next = ioctx_list;
	ioctx_list = ctx;
	WRITE_ONCE(nr_ctx_listed, nr_ctx_listed + 1);
	spin_unlock(&ioctx_list_lock);
	__atomic_fetch_add(&live_ctx, 1, __ATOMIC_RELAXED);
	return ctx;
}

/*
 * __put_ioctx: the last reference went. A delayed work item may still be
 * pending as a timer; without cancel_delayed_work() it fires on the freed
 * context.
 */
static void __put_ioctx(struct kioctx *ctx)
{
	unsigned nr_events = ctx->max_reqs;

	BUG_ON(ctx->reqs_active);

	if (READ_ONCE(aio_put_cancel))
		aio_wq_cancel_delayed_work(&ctx->wq);
	aio_wq_flush();
	aio_free_ring(ctx);
	ctx->mm = NULL;
	kfree(ctx);
	__atomic_fetch_sub(&live_ctx, 1, __ATOMIC_RELAXED);

	if (nr_events) {
		spin_lock(&aio_nr_lock);
		BUG_ON(aio_nr_v26 < nr_events);
		aio_nr_v26 -= nr_events;
		spin_unlock(&aio_nr_lock);
	}
}

static inline void get_ioctx(struct kioctx *ctx)
{
	BUG_ON(atomic_read(&ctx->users) <= 0);
	atomic_inc(&ctx->users);
}

void put_ioctx(struct kioctx *ctx)
{
	BUG_ON(atomic_read(&ctx->users) <= 0);
	if (atomic_dec_and_test(&ctx->users))
		__put_ioctx(ctx);
}

struct kioctx *lookup_ioctx(unsigned long ctx_id)
{
	struct kioctx *ioctx;

	spin_lock(&ioctx_list_lock);
	for (ioctx = ioctx_list; ioctx; ioctx = ioctx->next) {
		if (likely(ioctx->user_id == ctx_id && !ioctx->dead)) {
			get_ioctx(ioctx);
			break;
		}
	}
	spin_unlock(&ioctx_list_lock);
	return ioctx;
}

bool owns(unsigned long ctx_id)
{
	struct kioctx *ioctx;
	bool found = false;

	if (!READ_ONCE(nr_ctx_listed))
		return false;
	spin_lock(&ioctx_list_lock);
	for (ioctx = ioctx_list; ioctx; ioctx = ioctx->next)
		if (ioctx->user_id == ctx_id)
			found = true;
	spin_unlock(&ioctx_list_lock);
	return found;
}

/* ---- requests ---- */
static struct kiocb *__aio_get_req(struct kioctx *ctx)
{
	struct kiocb *req;
	struct aio_ring *ring;
	unsigned avail;

	req = (struct kiocb *)kzalloc(sizeof(*req), GFP_KERNEL);
	if (unlikely(!req))
		return NULL;

	req->ki_flags = 0;
	req->ki_users = 2; /* one for the submitter, one for the completion */
	req->ki_key = KIOCB_KEY;
	req->ki_ctx = ctx;
	req->ki_cancel = NULL;
	req->ki_retry = NULL;
	INIT_LIST_HEAD(&req->ki_run_list);
	INIT_LIST_HEAD(&req->ki_list);

	/* Check if the completion queue has enough free space to accept an event from this io. */
	spin_lock_irq(&ctx->ctx_lock);
	ring = ctx_ring(ctx);
	avail = (READ_ONCE(ring->head) + ctx->ring_info.nr - 1 - ctx->ring_info.tail) %
		ctx->ring_info.nr;
	if ((unsigned)ctx->reqs_active < avail) {
		list_add(&req->ki_list, &ctx->active_reqs);
		ctx->reqs_active++;
		__atomic_fetch_add(&live_reqs, 1, __ATOMIC_RELAXED);
	} else {
		kfree(req);
		req = NULL;
	}
	spin_unlock_irq(&ctx->ctx_lock);
	return req;
}

static inline struct kiocb *aio_get_req(struct kioctx *ctx)
{
	return __aio_get_req(ctx);
}

static void really_put_req(struct kioctx *ctx, struct kiocb *req)
{
	kfree(req);
	ctx->reqs_active--;
	__atomic_fetch_sub(&live_reqs, 1, __ATOMIC_RELAXED);

	if (unlikely(!ctx->reqs_active && ctx->dead))
		wake_up(&ctx->wait);
}

/* Returns true if this put freed the request. Called with ctx_lock held. */
static int __aio_put_req(struct kioctx *ctx, struct kiocb *req)
{
	struct file *filp;

	req->ki_users--;
	BUG_ON(req->ki_users < 0);
	if (likely(req->ki_users))
		return 0;
	list_del(&req->ki_list); /* remove from active_reqs */
	filp = req->ki_filp;
	req->ki_cancel = NULL;
	req->ki_retry = NULL;
	if (filp)
		aio_fput_deferred(filp);
	really_put_req(ctx, req);
	return 1;
}

int aio_put_req(struct kiocb *req)
{
	struct kioctx *ctx = req->ki_ctx;
	int ret;

	spin_lock_irq(&ctx->ctx_lock);
	ret = __aio_put_req(ctx, req);
	spin_unlock_irq(&ctx->ctx_lock);
	return ret;
}

/* ---- the retry engine ---- */

/*
 * aio_run_iocb: one retry of @iocb. Called and returns with ctx_lock held
 * (dropped around ki_retry); the caller holds a reference on the request.
 */
ssize_t aio_run_iocb(struct kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;
	ssize_t (*retry)(struct kiocb *);
	ssize_t ret;

	STAT_INC(retries);
	if (__atomic_fetch_add(&iocb->ki_retried, 1, __ATOMIC_RELAXED) > 1024 * 1024)
		pr_debug("aio_run_iocb: %p retried %ld times\n", iocb, iocb->ki_retried);

	retry = iocb->ki_retry;
	if (!retry) {
		pr_warn("aio_run_iocb: iocb->ki_retry = NULL\n");
		return 0;
	}

	/*
	 * A kick that arrives while this retry runs must not queue the
	 * request yet, only be remembered: KICKED is cleared, and null run
	 * list links make __queue_kicked_iocb() think the request is queued
	 * already. When this iteration ends, a recorded kick requeues it.
	 */
	kiocbClearKicked(iocb);
	iocb->ki_run_list.next = iocb->ki_run_list.prev = NULL;
	spin_unlock_irq(&ctx->ctx_lock);

	/* Quit retrying if the i/o has been cancelled */
	if (kiocbIsCancelled(iocb)) {
		ret = -EINTR;
		aio_complete(iocb, ret, 0);
		/* must not access the iocb after this */
		goto out;
	}

	/* Run the method in async context: where it would wait, it queues ki_wait. */
	BUG_ON(current->io_wait != NULL);
	current->io_wait = &iocb->ki_wait;
	ret = retry(iocb);
	current->io_wait = NULL;

	if (ret != -EIOCBRETRY && ret != -EIOCBQUEUED) {
		BUG_ON(!list_empty_careful(&iocb->ki_wait.entry));
		aio_complete(iocb, ret, 0);
	} else if (ret == -EIOCBRETRY && list_empty_careful(&iocb->ki_wait.entry)) {
		/* Nothing will wake us (a short transfer): run again. */
		kiocbSetKicked(iocb);
	}
out:
	spin_lock_irq(&ctx->ctx_lock);

	if (-EIOCBRETRY == ret) {
		/* From here on a kick queues the request itself. */
		INIT_LIST_HEAD(&iocb->ki_run_list);
		/* ... and one that came in meanwhile is ours to queue. */
		if (kiocbIsKicked(iocb))
			__queue_kicked_iocb(iocb);
	}
	return ret;
}

/* Puts @iocb on the run list unless it is there (or in flight). ctx_lock held. */
int __queue_kicked_iocb(struct kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;

	lockdep_assert_held(&ctx->ctx_lock);
	if (list_empty(&iocb->ki_run_list)) {
		list_add_tail(&iocb->ki_run_list, &ctx->run_list);
		return 1;
	}
	return 0;
}

/*
 * __aio_run_iocbs: runs the requests on the run list once each (the list
 * is spliced off first, so that one context cannot monopolise the caller).
 * Called with ctx_lock held. Returns whether the run list filled up again.
 */
int __aio_run_iocbs(struct kioctx *ctx)
{
	struct kiocb *iocb;
	LIST_HEAD(run_list);
	bool guard = retry_mode() == RetryMode::kRunning;

	if (guard) {
		if (ctx->running) {
			STAT_INC(running_skips);
			return 0;
		}
		ctx->running = 1;
	}
	list_splice_init(&ctx->run_list, &run_list);
	while (!list_empty(&run_list)) {
		iocb = list_entry(run_list.next, struct kiocb, ki_run_list);
		list_del(&iocb->ki_run_list);
		/* Hold an extra reference while retrying i/o. */
		iocb->ki_users++;
		aio_run_iocb(iocb);
		__aio_put_req(ctx, iocb);
	}
	if (guard)
		ctx->running = 0;
	if (!list_empty(&ctx->run_list))
		return 1;
	return 0;
}

/* One pass over the run list, taking ctx_lock. */
void aio_run_iocbs(struct kioctx *ctx)
{
	int requeue;

	spin_lock_irq(&ctx->ctx_lock);
	requeue = __aio_run_iocbs(ctx);
	spin_unlock_irq(&ctx->ctx_lock);
	if (requeue)
		aio_queue_work(ctx);
}

/* Runs the run list until it stays empty. */
void aio_run_all_iocbs(struct kioctx *ctx)
{
	spin_lock_irq(&ctx->ctx_lock);
	while (__aio_run_iocbs(ctx))
		;
	spin_unlock_irq(&ctx->ctx_lock);
}

/*
 * aio_queue_work: start the worker. If somebody waits in io_getevents, in
 * a jiffy; otherwise in HZ/10, by which time io_submit or io_getevents
 * has likely run the list already. Without the stall fix the delay is
 * HZ/10 whoever waits.
 */
void aio_queue_work(struct kioctx *ctx)
{
	unsigned long timeout;

	smp_mb();
	if (READ_ONCE(aio_stall_fix) && waitqueue_active(&ctx->wait))
		timeout = 1;
	else
		timeout = HZ / 10;
	if (aio_wq_queue_delayed_work(&ctx->wq, timeout))
		STAT_INC(queue_work_calls);
}

/* Starts the worker as the retry state says: at once before the patch. */
static void aio_start_worker(struct kioctx *ctx)
{
	if (retry_mode() == RetryMode::kBefore) {
		if (aio_wq_queue_work(&ctx->wq.work))
			STAT_INC(queue_work_calls);
	} else {
		aio_queue_work(ctx);
	}
}

/*
 * aio_kick_handler: the work item on aio_wq. Borrows the submitter's mm,
 * runs the list once under ctx_lock, and requeues itself at once if the
 * list filled up again.
 */
static void aio_kick_handler(struct work_struct *work)
{
	struct kioctx *ctx = container_of(to_delayed_work(work), struct kioctx, wq);
	int requeue;

	STAT_INC(kick_handler_runs);
	use_mm(ctx->mm);
	spin_lock_irq(&ctx->ctx_lock);
	if (!list_empty(&ctx->run_list))
		STAT_INC(worker_iocbs_run);
	requeue = __aio_run_iocbs(ctx);
	unuse_mm(ctx->mm);
	spin_unlock_irq(&ctx->ctx_lock);
	/* we are on the worker already: no delay */
	if (requeue && aio_wq_queue_work(&ctx->wq.work))
		STAT_INC(queue_work_calls);
}

/* Queues a kicked request and starts the worker. */
void queue_kicked_iocb(struct kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;
	unsigned long flags;
	int run;

	spin_lock_irqsave(&ctx->ctx_lock, flags);
	run = __queue_kicked_iocb(iocb);
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
	if (run)
		aio_start_worker(ctx);
}

/*
 * kick_iocb: @iocb may make progress; run its retry again. A kick while
 * KICKED is set is absorbed.
 */
void kick_iocb(struct kiocb *iocb)
{
	STAT_INC(kicks);
	__atomic_fetch_add(&iocb->ki_kicked, 1, __ATOMIC_RELAXED);
	/* If it is kicked already, it is queued (or will be) already. */
	if (!kiocbTryKick(iocb)) {
		__atomic_fetch_add(&iocb->ki_queued, 1, __ATOMIC_RELAXED);
		queue_kicked_iocb(iocb);
	}
}

/*
 * aio_wake_function: ki_wait's callback. Runs under the wait-queue lock of
 * the queue the retry waited on; ctx_lock nests inside it.
 */
int aio_wake_function(wait_queue_entry_t *wait, unsigned mode, int sync, void *key)
{
	struct kiocb *iocb = container_of(wait, struct kiocb, ki_wait);

	(void)mode;
	(void)sync;
	(void)key;
	/* off the queue with a release store: list_empty_careful() pairs with it */
	__list_del_entry(&wait->entry);
	WRITE_ONCE(wait->entry.prev, &wait->entry);
	smp_store_release(&wait->entry.next, &wait->entry);
	kick_iocb(iocb);
	return 1;
}

/*
 * aio_complete: posts the request's event on the ring and drops the
 * completion's reference. A cancelled request posts nothing: io_cancel
 * gave the program its event. Returns whether the request was freed.
 */
int aio_complete(struct kiocb *iocb, long res, long res2)
{
	struct kioctx *ctx = iocb->ki_ctx;
	struct aio_ring_info *info = &ctx->ring_info;
	struct aio_ring *ring;
	struct io_event *event;
	unsigned long flags;
	unsigned tail;
	int ret;

	spin_lock_irqsave(&ctx->ctx_lock, flags);

	if (iocb->ki_run_list.prev && !list_empty(&iocb->ki_run_list))
		list_del_init(&iocb->ki_run_list);

	if (kiocbIsCancelled(iocb))
		goto put_rq;

	ring = ctx_ring(ctx);
	tail = info->tail;
	event = &ring->io_events[tail];
	if (++tail >= info->nr)
		tail = 0;

	event->obj = (u64)(unsigned long)iocb->ki_obj_user;
	event->data = iocb->ki_user_data;
	event->res = res;
	event->res2 = res2;

	/* the event is visible before the tail that publishes it */
	info->tail = tail;
	__atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);

put_rq:
	ret = __aio_put_req(ctx, iocb);
	/*
	 * The wake-up happens under ctx_lock: once it is dropped, io_destroy
	 * may free the context.
	 */
	if (waitqueue_active(&ctx->wait))
		wake_up(&ctx->wait);
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
	return ret;
}

/* aio_read_evt: one event off the ring, or 0. */
static int aio_read_evt(struct kioctx *ioctx, struct io_event *ent)
{
	struct aio_ring_info *info = &ioctx->ring_info;
	struct aio_ring *ring = ctx_ring(ioctx);
	unsigned long head;
	int ret = 0;

	spin_lock(&info->ring_lock);
	head = __atomic_load_n(&ring->head, __ATOMIC_RELAXED) % info->nr;
	if (head != __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE)) {
		*ent = ring->io_events[head];
		head = (head + 1) % info->nr;
		/* the event is read before the slot is handed back */
		__atomic_store_n(&ring->head, (unsigned)head, __ATOMIC_RELEASE);
		ret = 1;
	}
	spin_unlock(&info->ring_lock);
	return ret;
}

struct aio_timeout {
	struct timer_list timer;
	int timed_out;
	struct task_struct *p;
};

static void timeout_func(struct timer_list *t)
{
	struct aio_timeout *to = from_timer(to, t, timer);

	WRITE_ONCE(to->timed_out, 1);
	wake_up_process(to->p);
}

/* Runs the list before sleeping in read_events (after the patch). */
static void read_events_run(struct kioctx *ctx)
{
	if (READ_ONCE(aio_stall_fix)) {
		aio_run_all_iocbs(ctx);
		return;
	}
	aio_run_iocbs(ctx);
}

static long read_events(struct kioctx *ctx, long min_nr, long nr, struct io_event __user *event,
			const struct timespec __user *timeout)
{
	struct task_struct *tsk = current;
	DECLARE_WAITQUEUE(wait, tsk);
	struct aio_timeout to;
	struct io_event ent;
	bool armed = false;
	int retry = 0;
	long ret;
	long i = 0;

	memset(&ent, 0, sizeof(ent));
again:
	ret = 0;
	while (likely(i < nr)) {
		ret = aio_read_evt(ctx, &ent);
		if (unlikely(ret <= 0))
			break;
		ret = -EFAULT;
		if (unlikely(copy_to_user(event, &ent, sizeof(ent))))
			break;
		ret = 0;
		event++;
		i++;
	}
	if (min_nr <= i)
		return i;
	if (ret)
		return ret;

	/* End fast path. A racy look at the run list, redone below. */
	if (retry_mode() != RetryMode::kBefore && !retry &&
	    unlikely(!list_empty_careful(&ctx->run_list))) {
		retry = 1;
		read_events_run(ctx);
		goto again;
	}

	to.timed_out = 0;
	to.p = tsk;
	if (timeout) {
		struct timespec ts;
		struct timespec64 ts64;
		unsigned long delay;

		ret = -EFAULT;
		if (unlikely(copy_from_user(&ts, timeout, sizeof(ts))))
			goto out;
		if (ts.tv_sec < 0 || (ts.tv_sec == 0 && ts.tv_nsec <= 0)) {
			to.timed_out = 1;
		} else {
			ts64.tv_sec = ts.tv_sec;
			ts64.tv_nsec = ts.tv_nsec;
			delay = timespec64_to_jiffies(&ts64);
			timer_setup_on_stack(&to.timer, timeout_func, 0);
			to.timer.expires = jiffies + delay;
			add_timer(&to.timer);
			armed = true;
		}
	}

	ret = 0;
	while (likely(i < nr)) {
		add_wait_queue_exclusive(&ctx->wait, &wait);
		do {
			set_current_state(TASK_INTERRUPTIBLE);
			ret = aio_read_evt(ctx, &ent);
			if (ret)
				break;
			if (min_nr <= i)
				break;
			ret = 0;
			if (READ_ONCE(to.timed_out)) /* Only check after read evt */
				break;
			schedule();
			if (signal_pending(tsk)) {
				ret = -EINTR;
				break;
			}
		} while (1);
		__set_current_state(TASK_RUNNING);
		remove_wait_queue(&ctx->wait, &wait);

		if (unlikely(ret <= 0))
			break;

		ret = -EFAULT;
		if (unlikely(copy_to_user(event, &ent, sizeof(ent)))) {
			pr_debug("aio: lost an event due to EFAULT.\n");
			break;
		}
		event++;
		i++;
	}

	if (armed) {
		timer_delete_sync(&to.timer);
		destroy_timer_on_stack(&to.timer);
	}
out:
	return i ? i : ret;
}

/*
 * aio_cancel_all: cancel every active request that has a cancel method.
 * The method is called without ctx_lock, holding a reference it drops.
 */
static void aio_cancel_all(struct kioctx *ctx)
{
	int (*cancel)(struct kiocb *, struct io_event *);
	struct io_event res;

	spin_lock_irq(&ctx->ctx_lock);
	while (!list_empty(&ctx->active_reqs)) {
		struct list_head *pos = ctx->active_reqs.next;
		struct kiocb *iocb = list_entry(pos, struct kiocb, ki_list);

		list_del_init(&iocb->ki_list);
		cancel = iocb->ki_cancel;
		memset(&res, 0, sizeof(res));
		if (cancel) {
			iocb->ki_users++;
			kiocbSetCancelled(iocb);
			spin_unlock_irq(&ctx->ctx_lock);
			cancel(iocb, &res);
			spin_lock_irq(&ctx->ctx_lock);
		}
	}
	spin_unlock_irq(&ctx->ctx_lock);
}

/*
 * wait_for_all_aios: sleep until the context has no request left. Retries
 * that a cancel kicked are run here rather than left to the worker.
 */
static void wait_for_all_aios(struct kioctx *ctx)
{
	struct task_struct *tsk = current;
	DECLARE_WAITQUEUE(wait, tsk);

	aio_run_all_iocbs(ctx);
	spin_lock_irq(&ctx->ctx_lock);
	if (!ctx->reqs_active)
		goto out;

	add_wait_queue(&ctx->wait, &wait);
	set_current_state(TASK_UNINTERRUPTIBLE);
	while (ctx->reqs_active) {
		spin_unlock_irq(&ctx->ctx_lock);
		schedule();
		aio_run_all_iocbs(ctx);
		set_current_state(TASK_UNINTERRUPTIBLE);
		spin_lock_irq(&ctx->ctx_lock);
	}
	__set_current_state(TASK_RUNNING);
	remove_wait_queue(&ctx->wait, &wait);
out:
	spin_unlock_irq(&ctx->ctx_lock);
}

static void io_destroy(struct kioctx *ioctx)
{
	struct kioctx **tmp;
	int was_dead;

	/* delete the entry from the list if someone else hasn't already */
	spin_lock(&ioctx_list_lock);
	spin_lock_irq(&ioctx->ctx_lock);
	was_dead = ioctx->dead;
	ioctx->dead = 1;
	spin_unlock_irq(&ioctx->ctx_lock);
	for (tmp = &ioctx_list; *tmp && *tmp != ioctx; tmp = &(*tmp)->next)
		;
	if (*tmp) {
		*tmp = ioctx->next;
		WRITE_ONCE(nr_ctx_listed, nr_ctx_listed - 1);
	}
	spin_unlock(&ioctx_list_lock);

	if (likely(!was_dead))
		put_ioctx(ioctx); /* the list's reference */

	aio_cancel_all(ioctx);
	wait_for_all_aios(ioctx);
	put_ioctx(ioctx); /* once for the lookup */
}

/* ---- the methods io_submit sets as ki_retry ---- */
static ssize_t aio_pread(struct kiocb *iocb)
{
	struct file *file = iocb->ki_filp;
	ssize_t ret;

	ret = file->f_op->aio_read(iocb, iocb->ki_buf, iocb->ki_left, iocb->ki_pos);
	/*
	 * Can't just depend on iocb->ki_left to determine whether we are
	 * done: a pipe or socket completes as soon as any data arrived.
	 */
	if (ret > 0) {
		iocb->ki_buf += ret;
		WRITE_ONCE(iocb->ki_left, iocb->ki_left - ret);
		iocb->ki_pos += ret;
		if (!file->f_fifo)
			ret = -EIOCBRETRY;
	}
	/* This means we must have transferred all that we could */
	if (ret == 0 || iocb->ki_left == 0)
		ret = iocb->ki_nbytes - iocb->ki_left;
	return ret;
}

static ssize_t aio_pwrite(struct kiocb *iocb)
{
	struct file *file = iocb->ki_filp;
	ssize_t ret;

	ret = file->f_op->aio_write(iocb, iocb->ki_buf, iocb->ki_left, iocb->ki_pos);
	if (ret > 0) {
		iocb->ki_buf += ret;
		WRITE_ONCE(iocb->ki_left, iocb->ki_left - ret);
		iocb->ki_pos += ret;
		ret = -EIOCBRETRY;
	}
	/* This means we must have transferred all that we could */
	if (ret == 0 || iocb->ki_left == 0)
		ret = iocb->ki_nbytes - iocb->ki_left;
	return ret;
}

static ssize_t aio_fdsync(struct kiocb *iocb)
{
	return iocb->ki_filp->f_op->aio_fsync(iocb, 1);
}

static ssize_t aio_fsync(struct kiocb *iocb)
{
	return iocb->ki_filp->f_op->aio_fsync(iocb, 0);
}

/* Picks the retry method for the opcode; -errno for a request it cannot be. */
static ssize_t aio_setup_iocb(struct kiocb *kiocb)
{
	struct file *file = kiocb->ki_filp;
	ssize_t ret = 0;

	switch (kiocb->ki_opcode) {
	case IOCB_CMD_PREAD:
		ret = -EBADF;
		if (unlikely(!(file->f_mode & 1u)))
			break;
		ret = -EFAULT;
		if (unlikely(!access_ok(kiocb->ki_buf, kiocb->ki_left)))
			break;
		ret = -EINVAL;
		if (file->f_op->aio_read)
			kiocb->ki_retry = aio_pread;
		break;
	case IOCB_CMD_PWRITE:
		ret = -EBADF;
		if (unlikely(!(file->f_mode & 2u)))
			break;
		ret = -EFAULT;
		if (unlikely(!access_ok(kiocb->ki_buf, kiocb->ki_left)))
			break;
		ret = -EINVAL;
		if (file->f_op->aio_write)
			kiocb->ki_retry = aio_pwrite;
		break;
	case IOCB_CMD_FDSYNC:
		ret = -EINVAL;
		if (file->f_op->aio_fsync)
			kiocb->ki_retry = aio_fdsync;
		break;
	case IOCB_CMD_FSYNC:
		ret = -EINVAL;
		if (file->f_op->aio_fsync)
			kiocb->ki_retry = aio_fsync;
		break;
	default:
		pr_debug("EINVAL: io_submit: no operation provided\n");
		ret = -EINVAL;
	}

	if (!kiocb->ki_retry)
		return ret;
	return 0;
}

static long io_submit_one(struct kioctx *ctx, struct iocb __user *user_iocb, struct iocb *iocb)
{
	struct kiocb *req;
	struct file *file;
	ssize_t ret;

	/* enforce forwards compatibility on users */
	if (unlikely(iocb->aio_rw_flags || iocb->aio_reserved2 || iocb->aio_flags)) {
		pr_debug("EINVAL: io_submit: reserved field set\n");
		return -EINVAL;
	}
	/* prevent overflows */
	if (unlikely(iocb->aio_buf != (unsigned long)iocb->aio_buf ||
		     iocb->aio_nbytes != (size_t)iocb->aio_nbytes ||
		     (ssize_t)iocb->aio_nbytes < 0)) {
		pr_debug("EINVAL: io_submit: overflow check\n");
		return -EINVAL;
	}

	file = fget(iocb->aio_fildes);
	if (unlikely(!file))
		return -EBADF;

	req = aio_get_req(ctx); /* returns with 2 references to req */
	if (unlikely(!req)) {
		fput(file);
		return -EAGAIN;
	}

	req->ki_filp = file;
	if (unlikely(put_user(KIOCB_KEY, &user_iocb->aio_key))) {
		ret = -EFAULT;
		goto out_put_req;
	}
	req->ki_obj_user = user_iocb;
	req->ki_user_data = iocb->aio_data;
	req->ki_pos = iocb->aio_offset;
	req->ki_buf = (char __user *)(unsigned long)iocb->aio_buf;
	req->ki_left = req->ki_nbytes = iocb->aio_nbytes;
	req->ki_opcode = iocb->aio_lio_opcode;
	init_waitqueue_func_entry(&req->ki_wait, aio_wake_function);
	INIT_LIST_HEAD(&req->ki_wait.entry);
	req->ki_retried = 0;

	ret = aio_setup_iocb(req);
	if (ret)
		goto out_put_req;

	spin_lock_irq(&ctx->ctx_lock);
	if (retry_mode() == RetryMode::kBefore) {
		ret = aio_run_iocb(req);
		spin_unlock_irq(&ctx->ctx_lock);
		/* a retry that was kicked meanwhile sits on the run list */
		if (-EIOCBRETRY == ret && !list_empty_careful(&ctx->run_list))
			aio_start_worker(ctx);
	} else {
		list_add_tail(&req->ki_run_list, &ctx->run_list);
		/* drain the run list */
		while (__aio_run_iocbs(ctx))
			;
		spin_unlock_irq(&ctx->ctx_lock);
	}
	aio_put_req(req); /* drop extra ref to req */
	return 0;

out_put_req:
	aio_put_req(req); /* drop extra ref to req */
	aio_put_req(req); /* drop i/o ref to req */
	return ret;
}

/* ---- the system calls ---- */
long sys_io_setup(unsigned nr_events, unsigned long __user *ctxp)
{
	struct kioctx *ioctx;
	unsigned long ctx;
	long ret;

	aio_setup();
	ret = get_user(ctx, ctxp);
	if (unlikely(ret))
		return ret;

	ret = -EINVAL;
	if (unlikely(ctx || (int)nr_events <= 0)) {
		pr_debug("EINVAL: io_setup: ctx or nr_events > max\n");
		return ret;
	}

	ioctx = ioctx_alloc(nr_events);
	ret = PTR_ERR(ioctx);
	if (!IS_ERR(ioctx)) {
		ret = put_user(ioctx->user_id, ctxp);
		if (!ret)
			return 0;
		get_ioctx(ioctx); /* io_destroy() expects us to hold a ref */
		io_destroy(ioctx);
	}
	return ret;
}

long sys_io_destroy(unsigned long ctx)
{
	struct kioctx *ioctx = lookup_ioctx(ctx);

	if (likely(NULL != ioctx)) {
		io_destroy(ioctx);
		return 0;
	}
	pr_debug("EINVAL: io_destroy: invalid context id\n");
	return -EINVAL;
}

long sys_io_submit(unsigned long ctx_id, long nr, struct iocb __user *__user *iocbpp)
{
	struct kioctx *ctx;
	long ret = 0;
	long i;

	if (unlikely(nr < 0))
		return -EINVAL;

	ctx = lookup_ioctx(ctx_id);
	if (unlikely(!ctx)) {
		pr_debug("EINVAL: io_submit: invalid context id\n");
		return -EINVAL;
	}

	for (i = 0; i < nr; i++) {
		struct iocb __user *user_iocb;
		struct iocb tmp;

		if (unlikely(get_user(user_iocb, iocbpp + i))) {
			ret = -EFAULT;
			break;
		}
		if (unlikely(copy_from_user(&tmp, user_iocb, sizeof(tmp)))) {
			ret = -EFAULT;
			break;
		}
		ret = io_submit_one(ctx, user_iocb, &tmp);
		if (ret)
			break;
	}

	put_ioctx(ctx);
	return i ? i : ret;
}

/* Finds the active request @iocb with @key. ctx_lock held. */
static struct kiocb *lookup_kiocb(struct kioctx *ctx, struct iocb __user *iocb, u32 key)
{
	struct kiocb *kiocb;

	list_for_each_entry (kiocb, &ctx->active_reqs, ki_list) {
		if (kiocb->ki_obj_user == iocb && kiocb->ki_key == key)
			return kiocb;
	}
	return NULL;
}

long sys_io_cancel(unsigned long ctx_id, struct iocb __user *iocb, struct io_event __user *result)
{
	int (*cancel)(struct kiocb * iocb, struct io_event * res);
	struct kioctx *ctx;
	struct kiocb *kiocb;
	u32 key;
	long ret;

	ret = get_user(key, &iocb->aio_key);
	if (unlikely(ret))
		return -EFAULT;

	ctx = lookup_ioctx(ctx_id);
	if (unlikely(!ctx))
		return -EINVAL;

	spin_lock_irq(&ctx->ctx_lock);
	ret = -EAGAIN;
	kiocb = lookup_kiocb(ctx, iocb, key);
	if (kiocb && kiocb->ki_cancel) {
		cancel = kiocb->ki_cancel;
		kiocb->ki_users++;
		kiocbSetCancelled(kiocb);
	} else {
		cancel = NULL;
	}
	spin_unlock_irq(&ctx->ctx_lock);

	if (NULL != cancel) {
		struct io_event tmp;

		memset(&tmp, 0, sizeof(tmp));
		tmp.obj = (u64)(unsigned long)kiocb->ki_obj_user;
		tmp.data = kiocb->ki_user_data;
		ret = cancel(kiocb, &tmp);
		if (!ret) {
			/* Cancellation succeeded: the result goes to the user's buffer. */
			if (copy_to_user(result, &tmp, sizeof(tmp)))
				ret = -EFAULT;
		}
	} else {
		ret = -EINVAL;
	}

	put_ioctx(ctx);
	return ret;
}

long sys_io_getevents(unsigned long ctx_id, long min_nr, long nr, struct io_event __user *events,
		      const struct timespec __user *timeout)
{
	struct kioctx *ioctx = lookup_ioctx(ctx_id);
	long ret = -EINVAL;

	if (likely(ioctx)) {
		if (likely(min_nr <= nr && min_nr >= 0 && nr >= 0))
			ret = read_events(ioctx, min_nr, nr, events, timeout);
		put_ioctx(ioctx);
	}
	return ret;
}

} // namespace uk::aio26
