/* SPDX-License-Identifier: GPL-2.0-only */
/* Compiles <ukern/libaio.h> as C, using every inline helper. */
#include <sys/uio.h>
#include <ukern/libaio.h>

int ukern_libaio_h_check(io_context_t ctx, int fd);

int ukern_libaio_h_check(io_context_t ctx, int fd)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct iovec iov = { 0, 0 };
	char buf[8];
	struct io_event ev;

	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	io_prep_pwrite(&cb, fd, buf, sizeof(buf), 0);
	io_prep_preadv(&cb, fd, &iov, 1, 0);
	io_prep_pwritev(&cb, fd, &iov, 1, 0);
	io_prep_preadv2(&cb, fd, &iov, 1, 0, 0);
	io_prep_pwritev2(&cb, fd, &iov, 1, 0, 0);
	io_prep_fsync(&cb, fd);
	io_prep_fdsync(&cb, fd);
	io_prep_poll(&cb, fd, 1);
	io_set_eventfd(&cb, 3);
	io_set_callback(&cb, 0);
	ev.res = 0;
	return io_submit(ctx, 1, cbs) + (int)ev.res + cb.u.v.nr + (int)cb.u.c.resfd;
}
