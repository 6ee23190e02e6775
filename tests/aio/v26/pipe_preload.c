/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An unmodified libaio program on ukern pipes: run under LD_PRELOAD of
 * libukern_aio.so with UKERN_CMDLINE=aio.engine=v26. pipe() gives a ukern
 * pipe, so an AIO read of the empty pipe is queued (the request waits,
 * io_submit returns) and the write() that follows completes it. Exits 0
 * when every step gives what the 2.6 engine gives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                                  \
		}                                                                  \
	} while (0)

int main(void)
{
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { 5, 0 };
	char buf[16] = { 0 };
	int p[2];

	CHECK(io_setup(8, &ctx) == 0);
	CHECK(pipe2(p, O_NONBLOCK) == 0);
	CHECK(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	CHECK(read(p[0], buf, sizeof(buf)) == -1 && errno == EAGAIN);
	io_prep_pread(&cb, p[0], buf, sizeof(buf), 0);
	cb.data = &cb;
	CHECK(io_submit(ctx, 1, cbs) == 1);
	CHECK(write(p[1], "token", 5) == 5);
	CHECK(io_getevents(ctx, 1, 1, &ev, &ts) == 1);
	CHECK(ev.res == 5 && ev.obj == &cb && memcmp(buf, "token", 5) == 0);
	/* cancel: a pending read gives its event through io_cancel */
	CHECK(io_submit(ctx, 1, cbs) == 1);
	CHECK(io_cancel(ctx, &cb, &ev) == 0);
	CHECK((long)ev.res == -EINTR);
	CHECK(close(p[1]) == 0);
	CHECK(read(p[0], buf, sizeof(buf)) == 0);
	CHECK(close(p[0]) == 0);
	CHECK(close(p[0]) == -1 && errno == EBADF);
	CHECK(io_destroy(ctx) == 0);
	puts("ok");
	return 0;
}
