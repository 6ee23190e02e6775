/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The slice of the VFS that fs/aio.c talks to (include/linux/fs.h, uio.h):
 * struct file with its file_operations, struct kiocb and struct iov_iter.
 *
 * Every file descriptor a program hands to io_submit() is routed by number:
 * a descriptor registered with aio_register_file() is served by the ops table
 * given there (an emulated device; benchmarks use an in-memory null file),
 * every other one by the host-fd implementation (pread/pwrite/preadv2/fsync,
 * and readiness that an epoll thread turns into wake-ups of a wait queue),
 * which is itself just another file_operations.
 */
#ifndef UK_LINUX_AIO_FS_H
#define UK_LINUX_AIO_FS_H

#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <uk/linux/atomic.h>
#include <uk/linux/errno.h>
#include <uk/linux/types.h>
#include <uk/linux/uio.h>

typedef unsigned int fmode_t;

#define FMODE_READ 0x1u
#define FMODE_WRITE 0x2u
#define FMODE_CAN_ATOMIC_WRITE 0x80u /* no file here has it */
#define FMODE_NOWAIT 0x8000000u

/* ki_flags (include/linux/fs.h) */
#define IOCB_HIPRI (1 << 0)
#define IOCB_DSYNC (1 << 1)
#define IOCB_SYNC (1 << 2)
#define IOCB_APPEND (1 << 4)
#define IOCB_DIRECT (1 << 17)
#define IOCB_NOWAIT (1 << 20)
#define IOCB_EVENTFD (1 << 16)
#define IOCB_WRITE (1 << 6)
#define IOCB_NOIO (1 << 21)
#define IOCB_AIO_RW (1 << 23)

struct file;
struct kiocb;
struct poll_table_struct;

typedef unsigned int __poll_t;

struct file_operations {
	/*
	 * Return bytes done or -errno to complete now, or -EIOCBQUEUED after
	 * arranging for iocb->ki_complete(iocb, res) to be called later.
	 * A synchronous -EBADF/-EINVAL/-EOPNOTSUPP from the host is turned
	 * into an io_submit() error by the caller, as the kernel's checks are.
	 */
	ssize_t (*read_iter)(struct kiocb *iocb, struct iov_iter *to);
	ssize_t (*write_iter)(struct kiocb *iocb, struct iov_iter *from);
	/* Synchronous; aio runs it from its workqueue. NULL: -EINVAL. */
	int (*fsync)(struct file *file, int datasync);
	/*
	 * The events ready now (EPOLL* bits); a file that can wait hands its
	 * wait queue head to poll_wait() (<uk/linux/poll.h>) and wakes it
	 * with the ready events as the key. NULL: DEFAULT_POLLMASK, no wait.
	 */
	__poll_t (*poll)(struct file *file, struct poll_table_struct *pt);
	/* The last reference to a registered file went (NULL: nothing to do). */
	int (*release)(struct file *file);
};

struct file {
	const struct file_operations *f_op;
	fmode_t f_mode;
	unsigned int f_flags; /* O_* flags, O_DIRECT included */
	int f_iocb_flags;     /* iocb_flags(): the IOCB_* bits f_flags implies */
	int f_fd;	      /* host descriptor (a dup for async requests) */
	bool f_owned_fd;      /* f_fd is ours to close at fput() */
	/*
	 * References to a registered file: the registration's, and one per
	 * request that aio_fget() handed it to, so that closing the device
	 * while a request is in flight leaves the file (and ->release) to the
	 * request's fput(). 0 for the per-request host files.
	 */
	atomic_long_t f_count;
	void *private_data;
};

/* vfs_fsync() (fs/sync.c), for the whole file: ->fsync or -EINVAL. */
static inline int vfs_fsync(struct file *file, int datasync)
{
	if (!file->f_op->fsync)
		return -EINVAL;
	return file->f_op->fsync(file, datasync);
}

/* The IOCB_* flags a file's open flags imply (include/linux/fs.h). */
static inline int iocb_flags(struct file *file)
{
	int res = 0;

	if (file->f_flags & O_APPEND)
		res |= IOCB_APPEND;
	if (file->f_flags & O_DIRECT)
		res |= IOCB_DIRECT;
	if (file->f_flags & O_DSYNC)
		res |= IOCB_DSYNC;
	if ((file->f_flags & O_SYNC) == O_SYNC)
		res |= IOCB_SYNC;
	return res;
}

struct kiocb {
	struct file *ki_filp;
	long long ki_pos;
	void (*ki_complete)(struct kiocb *iocb, long ret);
	void *private_;
	int ki_flags;
	int ki_rw_flags; /* the RWF_* bits as given (host preadv2/pwritev2) */
	u16 ki_ioprio;
};

/* The host-fd implementation. */
extern const struct file_operations host_file_operations;

typedef unsigned short umode_t;
struct super_block;

/*
 * An inode, as far as aio looks at one (include/linux/fs.h). No file here
 * has an inode of its own: file_inode() answers one anonymous inode whose
 * mode names no file type (read and write for the owner, as the kernel's
 * anonymous inodes have), so S_ISREG() holds for none of them.
 */
struct inode {
	umode_t i_mode;
	struct super_block *i_sb;
};

extern struct inode aio_anon_inode;

static inline struct inode *file_inode(const struct file *f)
{
	return &aio_anon_inode;
}

/*
 * The freeze protection a write to a regular file holds on its superblock
 * from submission to completion (sb_start_write(), sb_end_write()). No
 * superblock here can be frozen, and no file is a regular file
 * (file_inode()), so aio_write() and aio_complete_rw() never get here.
 */
static inline void kiocb_start_write(struct kiocb *iocb) {}
static inline void kiocb_end_write(struct kiocb *iocb) {}

/*
 * Routes descriptor `fd` to `fops` (mode: FMODE_READ|FMODE_WRITE...).
 * Returns 0, -EBADF for a bad number or -EBUSY when already registered.
 */
int aio_register_file(int fd, const struct file_operations *fops, fmode_t mode, void *private_data);
int aio_unregister_file(int fd);

/* An in-memory "null" device for benchmarks (until null_blk exists):
 * reads and writes complete inline with the full length, no syscall. */
extern const struct file_operations aio_null_file_operations;

/*
 * block/fops.c's def_blk_fops: direct I/O on an emulated block device
 * (private_data is its struct block_device). A buffer, offset or length
 * that is not a whole number of logical blocks gets -EINVAL in the event.
 */
extern const struct file_operations def_blk_fops;

#ifdef __cplusplus
struct block_device;
namespace uk
{
/*
 * Opens block device @name ("nullb0", "/dev/nullb0" or "/dev/ukern/nullb0")
 * for aio: returns a descriptor (a sparse memfd of the device's size, so
 * fstat() shows the size) routed to def_blk_fops, or -ENOENT (no such
 * device), -EINVAL (bad access mode), -EMFILE. @flags: O_RDONLY, O_WRONLY
 * or O_RDWR, optionally O_CLOEXEC and O_DIRECT. I/O always bypasses any
 * cache; without O_DIRECT a buffer the device cannot take (alignment) goes
 * through a bounce buffer. Offsets and lengths must be whole logical blocks.
 */
int aio_open_blkdev(const char *name, int flags);
/* Unregisters, drops the device and closes @fd; no I/O may be in flight. */
int aio_close_blkdev(int fd);
bool aio_is_blkdev(int fd);
/*
 * The device behind @file, a file aio_fget() returned for a descriptor of
 * aio_open_blkdev(), and whether it was opened O_DIRECT; NULL for any other
 * file. Valid while the caller holds its reference on @file.
 */
::block_device *aio_file_bdev(struct file *file, bool *direct);
/*
 * Direct I/O's stand-in for pinning the user pages: -EFAULT when a page of
 * the buffer that the device would move cannot be reached, else 0
 * (aio/aio_blkdev.cc).
 */
int aio_blkdev_fault_in(::block_device *bdev, loff_t pos, const struct iovec *iov,
			unsigned long nr_segs, bool write);
} // namespace uk
#endif

#endif /* UK_LINUX_AIO_FS_H */
