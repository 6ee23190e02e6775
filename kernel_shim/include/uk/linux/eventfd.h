/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * eventfd contexts (include/linux/eventfd.h) over the host's eventfd(2): a
 * context holds a dup of the program's eventfd, and eventfd_signal() adds 1
 * to the host counter, so the program sees it with poll()/read().
 */
#ifndef UK_LINUX_EVENTFD_H
#define UK_LINUX_EVENTFD_H

#include <fcntl.h>
#include <sys/eventfd.h>

#include <uk/linux/err.h>
#include <uk/linux/types.h>

#ifndef EFD_SEMAPHORE
#define EFD_SEMAPHORE (1 << 0)
#endif
#define EFD_SHARED_FCNTL_FLAGS (O_CLOEXEC | O_NONBLOCK)
#define EFD_FLAGS_SET (EFD_SHARED_FCNTL_FLAGS | EFD_SEMAPHORE)

typedef unsigned int __poll_t;

struct eventfd_ctx;

/* A reference on the eventfd behind @fd; ERR_PTR(-EBADF) or ERR_PTR(-EINVAL). */
struct eventfd_ctx *eventfd_ctx_fdget(int fd);
void eventfd_ctx_put(struct eventfd_ctx *ctx);
void eventfd_signal_mask(struct eventfd_ctx *ctx, __poll_t mask);

static inline void eventfd_signal(struct eventfd_ctx *ctx)
{
	eventfd_signal_mask(ctx, 0);
}

/* false while this thread is inside eventfd_signal() (recursion guard). */
bool eventfd_signal_allowed(void);

namespace uk
{
// The host descriptor a context writes to (tests).
int eventfd_ctx_host_fd(struct eventfd_ctx *ctx);
} // namespace uk

#endif /* UK_LINUX_EVENTFD_H */
