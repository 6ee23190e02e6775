/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ukern/libaio.h: source-compatible with libaio 0.3.113's <libaio.h> (same
 * types, field names, enum values and inline io_prep_*() helpers; the same
 * 64-byte struct iocb and 32-byte struct io_event layouts), for programs
 * linked against libukern_aio.so. Every function returns -errno on failure
 * and leaves errno alone, as libaio's do. C and C++ (extern "C").
 *
 * Only the LP64 little-endian layout (x86-64) is spelled out; the static
 * assertions below catch any other.
 */
#ifndef UKERN_LIBAIO_H
#define UKERN_LIBAIO_H
#ifndef __LIBAIO_H
#define __LIBAIO_H

#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct timespec;
struct sockaddr;
struct iovec;

typedef struct io_context *io_context_t;

typedef enum io_iocb_cmd {
	IO_CMD_PREAD = 0,
	IO_CMD_PWRITE = 1,

	IO_CMD_FSYNC = 2,
	IO_CMD_FDSYNC = 3,

	IO_CMD_POLL = 5,
	IO_CMD_NOOP = 6,
	IO_CMD_PREADV = 7,
	IO_CMD_PWRITEV = 8,
} io_iocb_cmd_t;

/* LP64 little-endian: pointers and longs already fill their 8 bytes. */
#define PADDED(x, y) \
	x;           \
	unsigned y
#define PADDEDptr(x, y) x
#define PADDEDul(x, y) unsigned long x

struct io_iocb_poll {
	PADDED(int events, __pad1);
};

struct io_iocb_sockaddr {
	struct sockaddr *addr;
	int len;
};

struct io_iocb_common {
	PADDEDptr(void *buf, __pad1);
	PADDEDul(nbytes, __pad2);
	long long offset;
	long long __pad3;
	unsigned flags;
	unsigned resfd;
};

struct io_iocb_vector {
	const struct iovec *vec;
	int nr;
	long long offset;
};

struct iocb {
	PADDEDptr(void *data, __pad1); /* Return in the io completion event */
	/* key: for use in identifying io requests; aio_rw_flags: RWF_* */
	PADDED(unsigned key, aio_rw_flags);

	short aio_lio_opcode;
	short aio_reqprio;
	int aio_fildes;

	union {
		struct io_iocb_common c;
		struct io_iocb_vector v;
		struct io_iocb_poll poll;
		struct io_iocb_sockaddr saddr;
	} u;
};

struct io_event {
	PADDEDptr(void *data, __pad1);
	PADDEDptr(struct iocb *obj, __pad2);
	PADDEDul(res, __pad3);
	PADDEDul(res2, __pad4);
};

#undef PADDED
#undef PADDEDptr
#undef PADDEDul

#ifdef __cplusplus
#define UKERN_LIBAIO_ASSERT static_assert
#else
#define UKERN_LIBAIO_ASSERT _Static_assert
#endif
UKERN_LIBAIO_ASSERT(sizeof(struct iocb) == 64, "struct iocb is 64 bytes");
UKERN_LIBAIO_ASSERT(sizeof(struct io_event) == 32, "struct io_event is 32 bytes");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, aio_fildes) == 20, "aio_fildes at 20");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.c.nbytes) == 32, "nbytes at 32");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.v.nr) == 32, "v.nr at 32");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.c.offset) == 40, "offset at 40");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.v.offset) == 40, "v.offset at 40");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.c.flags) == 56, "flags at 56");
UKERN_LIBAIO_ASSERT(offsetof(struct iocb, u.c.resfd) == 60, "resfd at 60");
#undef UKERN_LIBAIO_ASSERT

typedef void (*io_callback_t)(io_context_t ctx, struct iocb *iocb, long res, long res2);

/* library wrappers */
extern int io_queue_init(int maxevents, io_context_t *ctxp);
extern int io_queue_release(io_context_t ctx);
extern int io_queue_run(io_context_t ctx);
extern int io_queue_wait(io_context_t ctx, struct timespec *timeout);

/* "system calls" */
extern int io_setup(int maxevents, io_context_t *ctxp);
extern int io_destroy(io_context_t ctx);
extern int io_submit(io_context_t ctx, long nr, struct iocb *ios[]);
extern int io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt);
extern int io_getevents(io_context_t ctx_id, long min_nr, long nr, struct io_event *events,
			struct timespec *timeout);
extern int io_pgetevents(io_context_t ctx_id, long min_nr, long nr, struct io_event *events,
			 struct timespec *timeout, sigset_t *sigmask);

static inline void io_set_callback(struct iocb *iocb, io_callback_t cb)
{
	iocb->data = (void *)cb;
}

static inline void io_prep_pread(struct iocb *iocb, int fd, void *buf, size_t count,
				 long long offset)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PREAD;
	iocb->aio_reqprio = 0;
	iocb->u.c.buf = buf;
	iocb->u.c.nbytes = count;
	iocb->u.c.offset = offset;
}

static inline void io_prep_pwrite(struct iocb *iocb, int fd, void *buf, size_t count,
				  long long offset)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PWRITE;
	iocb->aio_reqprio = 0;
	iocb->u.c.buf = buf;
	iocb->u.c.nbytes = count;
	iocb->u.c.offset = offset;
}

static inline void io_prep_preadv(struct iocb *iocb, int fd, const struct iovec *iov, int iovcnt,
				  long long offset)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PREADV;
	iocb->aio_reqprio = 0;
	iocb->u.c.buf = (void *)iov;
	iocb->u.c.nbytes = iovcnt;
	iocb->u.c.offset = offset;
}

static inline void io_prep_pwritev(struct iocb *iocb, int fd, const struct iovec *iov, int iovcnt,
				   long long offset)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PWRITEV;
	iocb->aio_reqprio = 0;
	iocb->u.c.buf = (void *)iov;
	iocb->u.c.nbytes = iovcnt;
	iocb->u.c.offset = offset;
}

static inline void io_prep_preadv2(struct iocb *iocb, int fd, const struct iovec *iov, int iovcnt,
				   long long offset, int flags)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PREADV;
	iocb->aio_reqprio = 0;
	iocb->aio_rw_flags = flags;
	iocb->u.c.buf = (void *)iov;
	iocb->u.c.nbytes = iovcnt;
	iocb->u.c.offset = offset;
}

static inline void io_prep_pwritev2(struct iocb *iocb, int fd, const struct iovec *iov, int iovcnt,
				    long long offset, int flags)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_PWRITEV;
	iocb->aio_reqprio = 0;
	iocb->aio_rw_flags = flags;
	iocb->u.c.buf = (void *)iov;
	iocb->u.c.nbytes = iovcnt;
	iocb->u.c.offset = offset;
}

static inline void io_prep_poll(struct iocb *iocb, int fd, int events)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_POLL;
	iocb->aio_reqprio = 0;
	iocb->u.poll.events = events;
}

static inline int io_poll(io_context_t ctx, struct iocb *iocb, io_callback_t cb, int fd, int events)
{
	io_prep_poll(iocb, fd, events);
	io_set_callback(iocb, cb);
	return io_submit(ctx, 1, &iocb);
}

static inline void io_prep_fsync(struct iocb *iocb, int fd)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_FSYNC;
	iocb->aio_reqprio = 0;
}

static inline int io_fsync(io_context_t ctx, struct iocb *iocb, io_callback_t cb, int fd)
{
	io_prep_fsync(iocb, fd);
	io_set_callback(iocb, cb);
	return io_submit(ctx, 1, &iocb);
}

static inline void io_prep_fdsync(struct iocb *iocb, int fd)
{
	memset(iocb, 0, sizeof(*iocb));
	iocb->aio_fildes = fd;
	iocb->aio_lio_opcode = IO_CMD_FDSYNC;
	iocb->aio_reqprio = 0;
}

static inline int io_fdsync(io_context_t ctx, struct iocb *iocb, io_callback_t cb, int fd)
{
	io_prep_fdsync(iocb, fd);
	io_set_callback(iocb, cb);
	return io_submit(ctx, 1, &iocb);
}

static inline void io_set_eventfd(struct iocb *iocb, int eventfd)
{
	iocb->u.c.flags |= (1 << 0) /* IOCB_FLAG_RESFD */;
	iocb->u.c.resfd = eventfd;
}

#ifdef __cplusplus
}
#endif

#endif /* __LIBAIO_H */
#endif /* UKERN_LIBAIO_H */
