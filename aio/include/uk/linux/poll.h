/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The poll table a file's ->poll() method is handed (include/linux/poll.h):
 * a file that can wait registers its wait queue heads through poll_wait(),
 * and reports the events ready now. Only the part aio and the files it
 * polls use: no select()/poll() system call tables.
 *
 * Upstream: include/linux/poll.h @ v6.12
 */
#ifndef UK_LINUX_POLL_H
#define UK_LINUX_POLL_H

#include <poll.h>
#include <sys/epoll.h>

#include <uk/linux/aio_fs.h>
#include <uk/linux/barrier.h>
#include <uk/linux/compiler.h>
#include <uk/linux/types.h>
#include <uk/linux/wait.h>

/* glibc's <sys/epoll.h> leaves out the two bits only the kernel reports. */
#ifndef EPOLLNVAL
#define EPOLLNVAL 0x00000020
#endif
/* include/uapi/asm-generic/poll.h: the wait queue head is being freed. */
#ifndef POLLFREE
#define POLLFREE ((__force __poll_t)0x4000)
#endif

/* What a file without ->poll() reports: always readable and writable. */
#define DEFAULT_POLLMASK (EPOLLIN | EPOLLOUT | EPOLLRDNORM | EPOLLWRNORM)

struct poll_table_struct;

typedef void (*poll_queue_proc)(struct file *, wait_queue_head_t *, struct poll_table_struct *);

/* Read through poll_does_not_wait() and poll_requested_events(). */
typedef struct poll_table_struct {
	poll_queue_proc _qproc;
	__poll_t _key;
} poll_table;

static inline void poll_wait(struct file *filp, wait_queue_head_t *wait_address, poll_table *p)
{
	if (p && p->_qproc && wait_address) {
		p->_qproc(filp, wait_address, p);
		/*
		 * Pairs with the barrier of wq_has_sleeper() on the waking
		 * side: the caller's look at the file's state comes after the
		 * entry is on the queue.
		 */
		smp_mb();
	}
}

/* True when this call only asks for the mask and must not queue a waiter. */
static inline bool poll_does_not_wait(const poll_table *p)
{
	return p == NULL || p->_qproc == NULL;
}

/* The events the caller waits for (every event when there is no table). */
static inline __poll_t poll_requested_events(const poll_table *p)
{
	return p ? p->_key : ~(__poll_t)0;
}

static inline void init_poll_funcptr(poll_table *pt, poll_queue_proc qproc)
{
	pt->_qproc = qproc;
	pt->_key = ~(__poll_t)0; /* interested in everything */
}

static inline bool file_can_poll(struct file *file)
{
	return file->f_op->poll;
}

static inline __poll_t vfs_poll(struct file *file, struct poll_table_struct *pt)
{
	if (unlikely(!file->f_op->poll))
		return DEFAULT_POLLMASK;
	return file->f_op->poll(file, pt);
}

/*
 * The EPOLL* bits inside the kernel and the POLL* bits of the ABI are the
 * same on x86 and differ on some other architectures; these convert one bit
 * at a time by scaling it from its place in one set to its place in the
 * other.
 */
#define __MAP(v, from, to) (from < to ? (v & from) * (to / from) : (v & from) / (from / to))

static inline __u16 mangle_poll(__poll_t val)
{
	__u16 v = (__force __u16)val;
#define M(X) __MAP(v, (__force __u16)EPOLL##X, POLL##X)
	return M(IN) | M(OUT) | M(PRI) | M(ERR) | M(NVAL) | M(RDNORM) | M(RDBAND) | M(WRNORM) |
	       M(WRBAND) | M(HUP) | M(RDHUP) | M(MSG);
#undef M
}

static inline __poll_t demangle_poll(u16 val)
{
#define M(X) (__force __poll_t) __MAP(val, POLL##X, (__force __u16)EPOLL##X)
	return M(IN) | M(OUT) | M(PRI) | M(ERR) | M(NVAL) | M(RDNORM) | M(RDBAND) | M(WRNORM) |
	       M(WRBAND) | M(HUP) | M(RDHUP) | M(MSG);
#undef M
}
#undef __MAP

#endif /* UK_LINUX_POLL_H */
