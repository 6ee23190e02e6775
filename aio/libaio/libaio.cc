// SPDX-License-Identifier: GPL-2.0-only
//
// libukern_aio.so: libaio 0.3.113's exported functions over the user-mode
// fs/aio.c. Same names, same -errno return convention (errno untouched),
// same user-space fast path in io_getevents/io_pgetevents. Exported
// without version tags so that, under LD_PRELOAD, they satisfy both a
// program's io_x@LIBAIO_0.y references and libaio.so.1's own PLT calls.
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <mutex>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/pipe_fs_i.h>
#include <uk/linux/printk.h>
#include <uk/shim/cmdline.h>

#include <ukern/libaio.h>
#include <uk/linux/aio.h>

#include "../usercopy.h"

#define UK_EXPORT extern "C" __attribute__((visibility("default")))
#define AIO_RING_MAGIC 0xa10a10a1

namespace
{

struct aio_ring_hdr {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

/* libaio's aio_ring_is_empty(): a peek at the ring before any "syscall". */
bool ring_is_empty(io_context_t ctx, struct timespec *timeout)
{
	struct aio_ring_hdr h;
	struct timespec ts;

	if (!ctx || !timeout)
		return false;
	if (copy_from_user(&ts, timeout, sizeof(ts)) || ts.tv_sec != 0 || ts.tv_nsec != 0)
		return false;
	if (copy_from_user(&h, ctx, sizeof(h)) || h.magic != AIO_RING_MAGIC || ((uintptr_t)ctx & 3))
		return false;
	return __atomic_load_n(&((struct aio_ring_hdr *)ctx)->head, __ATOMIC_RELAXED) ==
	       __atomic_load_n(&((struct aio_ring_hdr *)ctx)->tail, __ATOMIC_ACQUIRE);
}

/*
 * The emulated devices behind /dev/ukern/<name>: null_blk is built in, and
 * makes its null_blk.nr_devices devices (default 1: nullb0) with the
 * parameters of UKERN_CMDLINE on the first open of a /dev/ukern/ path, e.g.
 * UKERN_CMDLINE="null_blk.irqmode=1 null_blk.memory_backed=1 null_blk.gb=1".
 */
std::once_flag devices_once;
int devices_err;

void make_devices()
{
	devices_err = null_init();
	if (devices_err)
		pr_err("libukern_aio: null_blk did not load (%d)\n", devices_err);
}

/*
 * UKERN_CMDLINE is the library's kernel command line, parsed once at load
 * time, before the program's main(); a bad parameter ends the program with
 * status 1 there (the message names it).
 */
__attribute__((constructor)) void ukern_preload_cmdline()
{
	if (uk::parse_cmdline_env())
		_exit(1);
}

} // namespace

/* Hooks for interpose.c (hidden by the version script). */
extern "C" int ukern_preload_open(const char *path, int flags)
{
	std::call_once(devices_once, make_devices);
	return uk::aio_open_blkdev(path, flags & (O_ACCMODE | O_CLOEXEC | O_DIRECT));
}

extern "C" int ukern_preload_is_blkdev(int fd)
{
	return uk::aio_is_blkdev(fd);
}

extern "C" int ukern_preload_close(int fd)
{
	return uk::aio_close_blkdev(fd);
}

/*
 * ukern pipes for interpose.c: pipe()/pipe2() make them while the engine
 * is aio.engine=v26 (-ENOSYS otherwise: the host's pipe). The look-up on
 * every read()/write()/close() is skipped while no ukern pipe exists.
 */
extern "C" int ukern_preload_pipe2(int fds[2], int flags)
{
	if (uk::aio26::aio_engine != uk::aio26::Engine::kV26)
		return -ENOSYS;
	return uk::aio26::do_pipe2(fds, flags);
}

extern "C" int ukern_preload_is_pipe(int fd)
{
	return uk::aio26::nr_live_pipes() && uk::aio26::fd_is_ours(fd);
}

extern "C" long ukern_preload_read(int fd, void *buf, size_t count)
{
	return uk::aio26::sys_read(fd, buf, count);
}

extern "C" long ukern_preload_write(int fd, const void *buf, size_t count)
{
	return uk::aio26::sys_write(fd, buf, count);
}

extern "C" int ukern_preload_close_pipe(int fd)
{
	return uk::aio26::sys_close(fd);
}

extern "C" int ukern_preload_pipe_flags(int fd, int set, int flags)
{
	if (set)
		return uk::aio26::set_nonblock(fd, flags & O_NONBLOCK);
	return uk::aio26::get_fl(fd);
}

UK_EXPORT int io_setup(int maxevents, io_context_t *ctxp)
{
	return (int)ukern_io_setup((unsigned)maxevents, (unsigned long *)ctxp);
}

UK_EXPORT int io_destroy(io_context_t ctx)
{
	return (int)ukern_io_destroy((unsigned long)ctx);
}

UK_EXPORT int io_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	return (int)ukern_io_submit((unsigned long)ctx, nr, ios);
}

UK_EXPORT int io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	return (int)ukern_io_cancel((unsigned long)ctx, iocb, evt);
}

UK_EXPORT int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			   struct timespec *timeout)
{
	if (ring_is_empty(ctx, timeout))
		return 0;
	return (int)ukern_io_getevents((unsigned long)ctx, min_nr, nr, events, timeout);
}

UK_EXPORT int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			    struct timespec *timeout, sigset_t *sigmask)
{
	struct __aio_sigset sig = { sigmask, 8 /* _NSIG / 8 */ };

	if (ring_is_empty(ctx, timeout))
		return 0;
	return (int)ukern_io_pgetevents((unsigned long)ctx, min_nr, nr, events, timeout, &sig);
}

UK_EXPORT int io_queue_init(int maxevents, io_context_t *ctxp)
{
	if (maxevents > 0) {
		*ctxp = NULL;
		return io_setup(maxevents, ctxp);
	}
	return -EINVAL;
}

UK_EXPORT int io_queue_release(io_context_t ctx)
{
	return io_destroy(ctx);
}

UK_EXPORT int io_queue_run(io_context_t ctx)
{
	static struct timespec timeout = { 0, 0 };
	struct io_event event;
	int ret;

	while (1 == (ret = io_getevents(ctx, 0, 1, &event, &timeout))) {
		io_callback_t cb = (io_callback_t)event.data;
		struct iocb *iocb = event.obj;

		cb(ctx, iocb, event.res, event.res2);
	}

	return ret;
}

UK_EXPORT int io_queue_wait(io_context_t ctx, struct timespec *timeout)
{
	return io_getevents(ctx, 0, 0, NULL, timeout);
}
