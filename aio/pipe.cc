// SPDX-License-Identifier: GPL-2.0-only
/*
 * fs/pipe.c of the 2.6 era for the retry-based AIO engine, with the pipe
 * AIO of the 2004 companion patch: pipe_wait() returns an int, and while a
 * retry runs (current->io_wait is the request's ki_wait) it queues that
 * entry on the pipe's wait queue and returns -EIOCBRETRY instead of
 * sleeping. The aio methods return the bytes moved or -EIOCBRETRY; a
 * cancel method reports the bytes done (or -EINTR).
 *
 * Differences from the kernel's: a write with no reader returns -EPIPE
 * without sending SIGPIPE; an AIO read of an empty pipe waits (queues its
 * request) whether or not the end is O_NONBLOCK, the request being what
 * waits, never the task.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/kernel.h>
#include <uk/linux/pipe_fs_i.h>
#include <uk/linux/sched.h>
#include <uk/linux/sched/signal.h>
#include <uk/linux/slab.h>

#include "usercopy.h"

#define FMODE_READ 0x1u
#define FMODE_WRITE 0x2u

namespace uk::aio26
{

static long live_pipes;

long nr_live_pipes(void)
{
	return __atomic_load_n(&live_pipes, __ATOMIC_RELAXED);
}

/*
 * pipe_wait: drop the pipe's mutex and wait for a wake-up on its queue.
 * In a retry, queue the request's entry instead and return -EIOCBRETRY
 * (the mutex stays held: the caller unlocks on its way out).
 */
static int pipe_wait(struct pipe_inode_info *pipe)
{
	wait_queue_entry_t *io_wait = current->io_wait;

	if (io_wait && !is_sync_wait(io_wait)) {
		unsigned long flags;

		spin_lock_irqsave(&pipe->wait.lock, flags);
		if (list_empty(&io_wait->entry))
			__add_wait_queue(&pipe->wait, io_wait);
		spin_unlock_irqrestore(&pipe->wait.lock, flags);
		return -EIOCBRETRY;
	}

	DEFINE_WAIT(wait);
	prepare_to_wait(&pipe->wait, &wait, TASK_INTERRUPTIBLE);
	mutex_unlock(&pipe->mutex);
	schedule();
	finish_wait(&pipe->wait, &wait);
	mutex_lock(&pipe->mutex);
	return 0;
}

static bool in_retry(void)
{
	return current->io_wait && !is_sync_wait(current->io_wait);
}

static ssize_t pipe_readv(struct file *filp, char __user *buf, size_t total_len)
{
	struct pipe_inode_info *pipe = (struct pipe_inode_info *)filp->private_data;
	int do_wakeup = 0;
	ssize_t ret = 0;

	if (unlikely(total_len == 0))
		return 0;

	mutex_lock(&pipe->mutex);
	for (;;) {
		unsigned int size = pipe->len;

		if (size) {
			char *pipebuf = pipe->base + pipe->start;
			size_t chars = PIPE_SIZE - pipe->start;

			if (chars > total_len)
				chars = total_len;
			if (chars > size)
				chars = size;
			if (copy_to_user(buf, pipebuf, chars)) {
				if (!ret)
					ret = -EFAULT;
				break;
			}
			ret += chars;
			buf += chars;
			pipe->start = (pipe->start + chars) & (PIPE_SIZE - 1);
			pipe->len -= chars;
			if (!pipe->len)
				pipe->start = 0;
			total_len -= chars;
			do_wakeup = 1;
			if (!total_len)
				break; /* common path: read succeeded */
		}
		if (pipe->len) /* more to do? */
			continue;
		if (!pipe->writers)
			break;
		if (!pipe->waiting_writers) {
			/* a writer that waits may still give us more: wait for it */
			if (ret)
				break;
			if ((filp->f_flags & O_NONBLOCK) && !in_retry()) {
				ret = -EAGAIN;
				break;
			}
		}
		if (signal_pending(current)) {
			if (!ret)
				ret = -ERESTARTSYS;
			break;
		}
		if (do_wakeup) {
			wake_up_interruptible_sync(&pipe->wait);
			do_wakeup = 0;
		}
		if (pipe_wait(pipe) == -EIOCBRETRY) {
			if (!ret)
				ret = -EIOCBRETRY;
			break;
		}
	}
	mutex_unlock(&pipe->mutex);
	/* Signal writers asynchronously that there is more room. */
	if (do_wakeup)
		wake_up_interruptible(&pipe->wait);
	return ret;
}

static ssize_t pipe_writev(struct file *filp, const char __user *buf, size_t total_len)
{
	struct pipe_inode_info *pipe = (struct pipe_inode_info *)filp->private_data;
	int do_wakeup = 0;
	ssize_t ret = 0;
	size_t free;

	if (unlikely(total_len == 0))
		return 0;

	/* The write is atomic if total_len <= PIPE_BUF. */
	free = (total_len <= PIPE_BUF) ? total_len : 1;

	mutex_lock(&pipe->mutex);
	for (;;) {
		size_t space;

		if (!pipe->readers) {
			if (!ret)
				ret = -EPIPE;
			break;
		}
		space = PIPE_SIZE - pipe->len;
		if (space >= free) {
			unsigned int off = (pipe->start + pipe->len) & (PIPE_SIZE - 1);
			size_t chars = PIPE_SIZE - off;

			if (chars > total_len)
				chars = total_len;
			if (chars > space)
				chars = space;
			if (copy_from_user(pipe->base + off, buf, chars)) {
				if (!ret)
					ret = -EFAULT;
				break;
			}
			ret += chars;
			pipe->len += chars;
			total_len -= chars;
			buf += chars;
			do_wakeup = 1;
			if (!total_len)
				break;
		}
		if (pipe->len < PIPE_SIZE && ret) {
			/* handle cyclic data buffers */
			free = 1;
			continue;
		}
		if ((filp->f_flags & O_NONBLOCK) && !in_retry()) {
			if (!ret)
				ret = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			if (!ret)
				ret = -ERESTARTSYS;
			break;
		}
		if (do_wakeup) {
			wake_up_interruptible_sync(&pipe->wait);
			do_wakeup = 0;
		}
		pipe->waiting_writers++;
		int err = pipe_wait(pipe);
		pipe->waiting_writers--;
		if (err == -EIOCBRETRY) {
			if (!ret)
				ret = -EIOCBRETRY;
			break;
		}
	}
	mutex_unlock(&pipe->mutex);
	if (do_wakeup)
		wake_up_interruptible(&pipe->wait);
	return ret;
}

static ssize_t pipe_read(struct file *filp, char __user *buf, size_t count)
{
	return pipe_readv(filp, buf, count);
}

static ssize_t pipe_write(struct file *filp, const char __user *buf, size_t count)
{
	return pipe_writev(filp, buf, count);
}

/*
 * io_cancel on a pipe request: take ki_wait off the pipe's queue, report
 * what was done, and kick the request so that its next run completes it
 * (cancelled: no event on the ring). Drops the reference io_cancel took.
 */
static int pipe_aio_cancel(struct kiocb *iocb, struct io_event *res)
{
	struct pipe_inode_info *pipe = (struct pipe_inode_info *)iocb->ki_filp->private_data;
	unsigned long flags;
	size_t done;

	spin_lock_irqsave(&pipe->wait.lock, flags);
	if (!list_empty(&iocb->ki_wait.entry))
		list_del_init(&iocb->ki_wait.entry);
	spin_unlock_irqrestore(&pipe->wait.lock, flags);

	done = iocb->ki_nbytes - READ_ONCE(iocb->ki_left);
	res->res = done ? (long long)done : -EINTR;
	res->res2 = 0;
	kick_iocb(iocb);
	aio_put_req(iocb);
	return 0;
}

static void pipe_set_cancel(struct kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;

	if (iocb->ki_cancel)
		return;
	spin_lock_irq(&ctx->ctx_lock);
	iocb->ki_cancel = pipe_aio_cancel;
	spin_unlock_irq(&ctx->ctx_lock);
}

static ssize_t pipe_aio_read(struct kiocb *iocb, char __user *buf, size_t count, loff_t pos)
{
	(void)pos;
	pipe_set_cancel(iocb);
	return pipe_readv(iocb->ki_filp, buf, count);
}

static ssize_t pipe_aio_write(struct kiocb *iocb, const char __user *buf, size_t count, loff_t pos)
{
	(void)pos;
	pipe_set_cancel(iocb);
	return pipe_writev(iocb->ki_filp, buf, count);
}

/* The last reference to one end went: count it out, wake the other side. */
static int pipe_release(struct file *filp)
{
	struct pipe_inode_info *pipe = (struct pipe_inode_info *)filp->private_data;
	bool last;

	mutex_lock(&pipe->mutex);
	if (filp->f_mode & FMODE_READ)
		pipe->readers--;
	if (filp->f_mode & FMODE_WRITE)
		pipe->writers--;
	last = !pipe->readers && !pipe->writers;
	if (!last)
		wake_up_interruptible(&pipe->wait);
	mutex_unlock(&pipe->mutex);
	if (last) {
		kfree(pipe->base);
		kfree(pipe);
		__atomic_fetch_sub(&live_pipes, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

static const struct file_operations read_pipe_fops = {
	.aio_read = pipe_aio_read,
	.aio_write = NULL,
	.aio_fsync = NULL,
	.read = pipe_read,
	.write = NULL,
	.release = pipe_release,
};

static const struct file_operations write_pipe_fops = {
	.aio_read = NULL,
	.aio_write = pipe_aio_write,
	.aio_fsync = NULL,
	.read = NULL,
	.write = pipe_write,
	.release = pipe_release,
};

static struct file *pipe_file(struct pipe_inode_info *pipe, const struct file_operations *fops,
			      unsigned int mode, int flags)
{
	struct file *f = (struct file *)kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return NULL;
	f->f_op = fops;
	f->f_mode = mode;
	f->f_flags = (unsigned)(flags & O_NONBLOCK) | (mode == FMODE_READ ? O_RDONLY : O_WRONLY);
	f->f_fifo = true;
	f->f_fd = -1;
	atomic_long_set(&f->f_count, 1);
	f->private_data = pipe;
	return f;
}

static int reserve_fd(int flags)
{
	int fd = open("/dev/null", O_RDONLY | ((flags & O_CLOEXEC) ? O_CLOEXEC : 0));

	return fd < 0 ? -errno : fd;
}

int do_pipe2(int fds[2], int flags)
{
	struct pipe_inode_info *pipe;
	struct file *rf, *wf;
	int ret, rfd, wfd;

	if (flags & ~(O_NONBLOCK | O_CLOEXEC))
		return -EINVAL;

	pipe = (struct pipe_inode_info *)kzalloc(sizeof(*pipe), GFP_KERNEL);
	if (!pipe)
		return -ENFILE;
	pipe->base = (char *)kmalloc(PIPE_SIZE, GFP_KERNEL);
	if (!pipe->base) {
		kfree(pipe);
		return -ENFILE;
	}
	mutex_init(&pipe->mutex);
	init_waitqueue_head(&pipe->wait);
	pipe->readers = pipe->writers = 1;
	__atomic_fetch_add(&live_pipes, 1, __ATOMIC_RELAXED);

	rf = pipe_file(pipe, &read_pipe_fops, FMODE_READ, flags);
	wf = pipe_file(pipe, &write_pipe_fops, FMODE_WRITE, flags);
	if (!rf || !wf) {
		kfree(rf);
		kfree(wf);
		kfree(pipe->base);
		kfree(pipe);
		__atomic_fetch_sub(&live_pipes, 1, __ATOMIC_RELAXED);
		return -ENFILE;
	}
	rfd = reserve_fd(flags);
	wfd = rfd < 0 ? -1 : reserve_fd(flags);
	ret = rfd < 0 ? rfd : wfd;
	if (ret >= 0)
		ret = fd_install(rfd, rf);
	if (ret >= 0) {
		rf = NULL; /* the table's now */
		ret = fd_install(wfd, wf);
	}
	if (ret < 0) {
		/* fd_close() puts an installed end; the rest goes by hand */
		if (!rf)
			fd_close(rfd);
		else if (rfd >= 0)
			close(rfd);
		if (wfd >= 0)
			close(wfd);
		if (rf)
			fput(rf);
		fput(wf); /* the last end: frees the pipe */
		return ret;
	}
	fds[0] = rfd;
	fds[1] = wfd;
	return 0;
}

ssize_t sys_read(int fd, void *buf, size_t count)
{
	struct file *file;
	ssize_t ret;

	if (!fd_is_ours(fd))
		return -EBADF;
	file = fget((unsigned)fd);
	if (!file)
		return -EBADF;
	ret = file->f_op->read ? file->f_op->read(file, (char __user *)buf, count) : -EBADF;
	fput(file);
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

ssize_t sys_write(int fd, const void *buf, size_t count)
{
	struct file *file;
	ssize_t ret;

	if (!fd_is_ours(fd))
		return -EBADF;
	file = fget((unsigned)fd);
	if (!file)
		return -EBADF;
	ret = file->f_op->write ? file->f_op->write(file, (const char __user *)buf, count) : -EBADF;
	fput(file);
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

int sys_close(int fd)
{
	return fd_close(fd);
}

int get_fl(int fd)
{
	struct file *file;
	int ret;

	if (!fd_is_ours(fd))
		return -EBADF;
	file = fget((unsigned)fd);
	if (!file)
		return -EBADF;
	ret = (int)__atomic_load_n(&file->f_flags, __ATOMIC_RELAXED);
	fput(file);
	return ret;
}

int set_nonblock(int fd, bool on)
{
	struct file *file;

	if (!fd_is_ours(fd))
		return -EBADF;
	file = fget((unsigned)fd);
	if (!file)
		return -EBADF;
	if (on)
		__atomic_fetch_or(&file->f_flags, (unsigned)O_NONBLOCK, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&file->f_flags, ~(unsigned)O_NONBLOCK, __ATOMIC_RELAXED);
	fput(file);
	return 0;
}

} // namespace uk::aio26
