// SPDX-License-Identifier: GPL-2.0-only
//
// The aio side of block/fops.c: def_blk_fops for emulated block devices
// (null_blk and friends behind uk::blkdev_lookup()). Reads and writes are
// direct I/O over the caller's buffers (blkdev_direct_IO): blkdev_rw() with
// a completion callback that ends the kiocb from whatever context the
// device completes in (inline, softirq or timer), fsync is
// blkdev_issue_flush(). A device is opened as a placeholder descriptor (a
// sparse memfd of the device's size, so fstat() reports it) registered with
// aio_register_file().
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <uk/linux/aio_fs.h>
#include <uk/linux/bio.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/errno.h>
#include <uk/linux/slab.h>

#include "usercopy.h"

namespace
{

constexpr int kMaxBlkFd = 65536;

/* file->private_data of an opened device. */
struct blk_file {
	struct block_device *bdev;
	bool direct; /* opened O_DIRECT: no bounce buffering */
};
struct blk_file *blk_fds[kMaxBlkFd];

struct block_device *file_bdev(struct file *file)
{
	return ((struct blk_file *)file->private_data)->bdev;
}

/*
 * Without O_DIRECT the kernel goes through the page cache and takes any
 * buffer alignment. There is no page cache here: a buffer the device
 * cannot take directly goes through an aligned bounce buffer instead
 * (offsets and lengths must still be whole logical blocks).
 */
struct blk_bounce {
	struct kiocb *iocb;
	bool write;
	size_t len;
	void *buf;
	unsigned long nr_segs;
	struct iovec iov[];
};

bool iter_is_aligned(const struct iov_iter *iter, unsigned int lbs)
{
	for (unsigned long i = 0; i < iter->nr_segs; i++)
		if (((unsigned long)iter_iov(iter)[i].iov_base | iter_iov(iter)[i].iov_len) &
		    (lbs - 1))
			return false;
	return true;
}

/* Bytes copied between the bounce buffer and the user's segments. */
size_t bounce_copy(struct blk_bounce *b, bool to_user, size_t len)
{
	char *p = (char *)b->buf;
	size_t done = 0;

	for (unsigned long i = 0; i < b->nr_segs && len; i++) {
		size_t n = min(b->iov[i].iov_len, len);
		size_t left;

		if (to_user)
			left = copy_to_user(b->iov[i].iov_base, p, n);
		else
			left = copy_from_user(p, b->iov[i].iov_base, n);
		done += n - left;
		if (left)
			break;
		p += n;
		len -= n;
	}
	return done;
}

void blk_bounce_free(struct blk_bounce *b)
{
	free(b->buf);
	kfree(b);
}

void blkdev_bounce_done(void *priv, long res)
{
	struct blk_bounce *b = (struct blk_bounce *)priv;
	struct kiocb *iocb = b->iocb;

	/* A read that cannot reach the user's buffer ends short, or -EFAULT. */
	if (!b->write && res > 0) {
		size_t done = bounce_copy(b, true, res);

		if (done < (size_t)res)
			res = done ? (long)done : -EFAULT;
	}
	blk_bounce_free(b);
	iocb->ki_complete(iocb, res);
}

/* __blkdev_direct_IO_async's end: the kiocb completes with bytes or -errno. */
void blkdev_aio_done(void *priv, long res)
{
	struct kiocb *iocb = (struct kiocb *)priv;

	iocb->ki_complete(iocb, res);
}

unsigned int blkdev_rw_flags(const struct kiocb *iocb, bool write)
{
	unsigned int flags = write ? BLKDEV_RW_WRITE : 0;

	if (iocb->ki_flags & IOCB_HIPRI)
		flags |= BLKDEV_RW_POLLED;
	if (iocb->ki_flags & IOCB_NOWAIT)
		flags |= BLKDEV_RW_NOWAIT;
	/* dio_bio_write_op(): a dsync write is a FUA write. */
	if (write && (iocb->ki_flags & (IOCB_DSYNC | IOCB_SYNC)))
		flags |= BLKDEV_RW_FUA;
	return flags;
}

ssize_t blkdev_bounce_IO(struct kiocb *iocb, struct iov_iter *iter, bool write)
{
	struct block_device *bdev = file_bdev(iocb->ki_filp);
	struct blk_bounce *b;
	struct iovec biov;
	ssize_t ret;

	b = (struct blk_bounce *)kmalloc(sizeof(*b) + iter->nr_segs * sizeof(struct iovec),
					 GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->buf = aligned_alloc(PAGE_SIZE, round_up(iter->count, (size_t)PAGE_SIZE));
	if (!b->buf) {
		kfree(b);
		return -ENOMEM;
	}
	b->iocb = iocb;
	b->write = write;
	b->len = iter->count;
	b->nr_segs = iter->nr_segs;
	memcpy(b->iov, iter_iov(iter), iter->nr_segs * sizeof(struct iovec));
	if (write && bounce_copy(b, false, b->len) != b->len) {
		blk_bounce_free(b);
		return -EFAULT;
	}
	/* An unaligned length is refused by blkdev_rw() as for O_DIRECT. */
	biov.iov_base = b->buf;
	biov.iov_len = b->len;
	ret = blkdev_rw(bdev, iocb->ki_pos, &biov, 1, blkdev_rw_flags(iocb, write),
			blkdev_bounce_done, b);
	if (ret != -EIOCBQUEUED)
		blk_bounce_free(b);
	return ret;
}

/*
 * Where __blkdev_direct_IO() pins the user pages (bio_iov_iter_get_pages()),
 * a buffer that cannot be reached ends the request with -EFAULT before any
 * bio is built. Requests that blkdev_rw() refuses or cuts anyway (alignment,
 * position) are left to it, so their errors keep the kernel's order; the
 * probe covers what the device will move.
 */
int blkdev_fault_in(struct block_device *bdev, loff_t pos, const struct iovec *iov,
		    unsigned long nr_segs, bool write)
{
	unsigned int lbs = bdev_logical_block_size(bdev);
	loff_t size = (loff_t)uk::blkdev_size(bdev);
	size_t count = 0, left;

	/* One segment (io_prep_pread/pwrite): the checks and the probe in one pass. */
	if (likely(nr_segs == 1)) {
		char *base = (char *)iov->iov_base;

		count = iov->iov_len;
		if ((((unsigned long)base | count | (unsigned long)pos) & (lbs - 1)) || pos < 0 ||
		    pos >= size)
			return 0;
		left = min(count, (size_t)(size - pos));
		return (write ? fault_in_readable(base, left) : fault_in_writeable(base, left))
			       ? -EFAULT
			       : 0;
	}
	for (unsigned long i = 0; i < nr_segs; i++) {
		if (((unsigned long)iov[i].iov_base | iov[i].iov_len) & (lbs - 1))
			return 0;
		count += iov[i].iov_len;
	}
	if (pos < 0 || pos >= size || ((pos | count) & (lbs - 1)))
		return 0;
	left = min(count, (size_t)(size - pos));
	for (unsigned long i = 0; i < nr_segs && left; i++) {
		char *base = (char *)iov[i].iov_base;
		size_t n = min(iov[i].iov_len, left);

		/* A device write reads the buffer; a device read stores into it. */
		if (write ? fault_in_readable(base, n) : fault_in_writeable(base, n))
			return -EFAULT;
		left -= n;
	}
	return 0;
}

ssize_t blkdev_direct_IO(struct kiocb *iocb, struct iov_iter *iter, bool write)
{
	struct blk_file *bf = (struct blk_file *)iocb->ki_filp->private_data;
	struct block_device *bdev = bf->bdev;

	if (!iter->count)
		return 0;
	if (!bf->direct && iocb->ki_complete &&
	    !iter_is_aligned(iter, bdev_logical_block_size(bdev)))
		return blkdev_bounce_IO(iocb, iter, write);
	if (blkdev_fault_in(bdev, iocb->ki_pos, iter_iov(iter), iter->nr_segs, write))
		return -EFAULT;
	/* Synchronous kiocbs have no ->ki_complete: wait in blkdev_rw(). */
	if (!iocb->ki_complete)
		return blkdev_rw(bdev, iocb->ki_pos, iter_iov(iter), iter->nr_segs,
				 blkdev_rw_flags(iocb, write), nullptr, nullptr);
	return blkdev_rw(bdev, iocb->ki_pos, iter_iov(iter), iter->nr_segs,
			 blkdev_rw_flags(iocb, write), blkdev_aio_done, iocb);
}

ssize_t blkdev_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return blkdev_direct_IO(iocb, to, false);
}

ssize_t blkdev_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	/* blkdev_rw() gives -ENOSPC at or past the end, as blkdev_write_iter. */
	return blkdev_direct_IO(iocb, from, true);
}

/* blkdev_fsync(): no page cache here, so only blkdev_issue_flush(). */
int blkdev_fsync(struct file *file, int datasync)
{
	struct bio bio;

	bio_init(&bio, file_bdev(file), nullptr, 0, REQ_OP_FLUSH);
	return submit_bio_wait(&bio);
}

} // namespace

/* The last fput(): the close, or the last request in flight after it. */
static int blkdev_release(struct file *file)
{
	struct blk_file *bf = (struct blk_file *)file->private_data;

	uk::blkdev_put(bf->bdev);
	kfree(bf);
	return 0;
}

const struct file_operations def_blk_fops = {
	.read_iter = blkdev_read_iter,
	.write_iter = blkdev_write_iter,
	.fsync = blkdev_fsync,
	.poll = nullptr,
	.release = blkdev_release,
};

namespace uk
{

int aio_open_blkdev(const char *name, int flags)
{
	struct block_device *bdev;
	struct blk_file *bf;
	fmode_t mode = FMODE_NOWAIT;
	int fd, ret;

	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		mode |= FMODE_READ;
		break;
	case O_WRONLY:
		mode |= FMODE_WRITE;
		break;
	case O_RDWR:
		mode |= FMODE_READ | FMODE_WRITE;
		break;
	default:
		return -EINVAL;
	}
	bdev = blkdev_lookup(name);
	if (!bdev)
		return -ENOENT;
	bf = (struct blk_file *)kmalloc(sizeof(*bf), GFP_KERNEL);
	if (!bf) {
		ret = -ENOMEM;
		goto put;
	}
	bf->bdev = bdev;
	bf->direct = flags & O_DIRECT;
	fd = memfd_create("ukern-blkdev", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0) {
		ret = -errno;
		goto put;
	}
	if (ftruncate(fd, (off_t)blkdev_size(bdev)) < 0) {
		ret = -errno;
		goto close_fd;
	}
	if (fd >= kMaxBlkFd) {
		ret = -EMFILE;
		goto close_fd;
	}
	ret = aio_register_file(fd, &def_blk_fops, mode, bf);
	if (ret)
		goto close_fd;
	__atomic_store_n(&blk_fds[fd], bf, __ATOMIC_RELEASE);
	return fd;

close_fd:
	close(fd);
put:
	kfree(bf);
	blkdev_put(bdev);
	return ret;
}

bool aio_is_blkdev(int fd)
{
	return fd >= 0 && fd < kMaxBlkFd && __atomic_load_n(&blk_fds[fd], __ATOMIC_ACQUIRE);
}

struct block_device *aio_file_bdev(struct file *file, bool *direct)
{
	struct blk_file *bf;

	if (!file || file->f_op != &def_blk_fops)
		return nullptr;
	bf = (struct blk_file *)file->private_data;
	if (direct)
		*direct = bf->direct;
	return bf->bdev;
}

int aio_blkdev_fault_in(struct block_device *bdev, loff_t pos, const struct iovec *iov,
			unsigned long nr_segs, bool write)
{
	return blkdev_fault_in(bdev, pos, iov, nr_segs, write);
}

int aio_close_blkdev(int fd)
{
	struct blk_file *bf;

	if (fd < 0 || fd >= kMaxBlkFd)
		return -EBADF;
	bf = __atomic_exchange_n(&blk_fds[fd], nullptr, __ATOMIC_ACQ_REL);
	if (!bf)
		return -EBADF;
	/* The device and bf go at the last fput() (blkdev_release()). */
	aio_unregister_file(fd);
	return close(fd) < 0 ? -errno : 0;
}

} // namespace uk
