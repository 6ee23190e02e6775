// SPDX-License-Identifier: GPL-2.0-only
/*
 * eventfd contexts (fs/eventfd.c) over host eventfds. The program creates
 * the eventfd with eventfd(2) and passes its number in (as to the aio or
 * io_uring syscalls); the context holds its own dup so the counter lives as
 * long as the context does. Signalling writes 1 to the host descriptor.
 */
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <uk/linux/eventfd.h>
#include <uk/linux/printk.h>
#include <uk/linux/slab.h>

struct eventfd_ctx {
	std::atomic<unsigned int> kref;
	int fd; /* our dup of the program's eventfd */
};

namespace
{

thread_local bool in_eventfd __attribute__((tls_model("initial-exec"))) = false;

/*
 * fdget() and the f_op check of eventfd_ctx_fdget() in one system call:
 * /proc/self/fd/N of an eventfd reads "anon_inode:[eventfd]", and a number
 * that is no open descriptor has no link (ENOENT). 0, -EBADF or -EINVAL.
 */
int fd_check_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	if (fd < 0)
		return -EBADF;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return errno == ENOENT ? -EBADF : -EINVAL;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0 ? 0 : -EINVAL;
}

} // namespace

struct eventfd_ctx *eventfd_ctx_fdget(int fd)
{
	struct eventfd_ctx *ctx;
	int dup_fd, err;

	err = fd_check_eventfd(fd);
	if (err)
		return (struct eventfd_ctx *)ERR_PTR(err);
	ctx = (struct eventfd_ctx *)kmalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return (struct eventfd_ctx *)ERR_PTR(-ENOMEM);
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0) {
		err = errno;
		kfree(ctx);
		return (struct eventfd_ctx *)ERR_PTR(err == EMFILE ? -EMFILE : -EBADF);
	}
	new (&ctx->kref) std::atomic<unsigned int>(1);
	ctx->fd = dup_fd;
	return ctx;
}

void eventfd_ctx_put(struct eventfd_ctx *ctx)
{
	/* Release our accesses before the last reference frees the context. */
	if (ctx->kref.fetch_sub(1, std::memory_order_acq_rel) == 1) {
		close(ctx->fd);
		kfree(ctx);
	}
}

void eventfd_signal_mask(struct eventfd_ctx *ctx, __poll_t mask)
{
	u64 one = 1;
	ssize_t n;

	/* The kernel refuses recursive signalling (deadlock on ctx->wqh.lock). */
	if (WARN_ON_ONCE(in_eventfd))
		return;
	in_eventfd = true;
	/*
	 * The host counter saturates as the kernel's does only if the program
	 * made the eventfd O_NONBLOCK (the write then fails with EAGAIN);
	 * reaching 2^64 - 1 signals is not a practical concern.
	 */
	do {
		n = write(ctx->fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	in_eventfd = false;
}

bool eventfd_signal_allowed(void)
{
	return !in_eventfd;
}

namespace uk
{

int eventfd_ctx_host_fd(struct eventfd_ctx *ctx)
{
	return ctx->fd;
}

} // namespace uk
