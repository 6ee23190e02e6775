// SPDX-License-Identifier: GPL-2.0-only
// The two AIO backends that the differential checks run a scenario on: the
// host kernel through raw system calls, and ukern's fs/aio.c through its
// ukern_io_*() entry points. Every call returns the result or -errno.
// tests/aio/conformance_test.cc and tools/diffcheck use them.
#ifndef UKERN_TESTS_AIO_AIO_BACKEND_TESTLIB_H_
#define UKERN_TESTS_AIO_AIO_BACKEND_TESTLIB_H_

#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>

namespace aiotest
{

class Backend
{
      public:
	virtual ~Backend() = default;
	virtual const char *name() = 0;
	virtual long setup(unsigned nr, aio_context_t *ctxp) = 0;
	virtual long destroy(aio_context_t ctx) = 0;
	virtual long submit(aio_context_t ctx, long nr, struct iocb **iocbpp) = 0;
	virtual long cancel(aio_context_t ctx, struct iocb *iocb, struct io_event *res) = 0;
	virtual long getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			       struct timespec *ts) = 0;
	virtual long pgetevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
				struct timespec *ts, const struct __aio_sigset *sig) = 0;
};

// A system call's return value as the result or -errno.
inline long sys_ret(long r)
{
	return r < 0 ? -errno : r;
}

class HostBackend : public Backend
{
      public:
	const char *name() override
	{
		return "host";
	}
	long setup(unsigned nr, aio_context_t *ctxp) override
	{
		return sys_ret(syscall(SYS_io_setup, nr, ctxp));
	}
	long destroy(aio_context_t ctx) override
	{
		return sys_ret(syscall(SYS_io_destroy, ctx));
	}
	long submit(aio_context_t ctx, long nr, struct iocb **p) override
	{
		return sys_ret(syscall(SYS_io_submit, ctx, nr, p));
	}
	long cancel(aio_context_t ctx, struct iocb *iocb, struct io_event *res) override
	{
		return sys_ret(syscall(SYS_io_cancel, ctx, iocb, res));
	}
	long getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
		       struct timespec *ts) override
	{
		return sys_ret(syscall(SYS_io_getevents, ctx, min_nr, nr, ev, ts));
	}
	long pgetevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			struct timespec *ts, const struct __aio_sigset *sig) override
	{
		return sys_ret(syscall(SYS_io_pgetevents, ctx, min_nr, nr, ev, ts, sig));
	}
};

class UkernBackend : public Backend
{
      public:
	const char *name() override
	{
		return "ukern";
	}
	long setup(unsigned nr, aio_context_t *ctxp) override
	{
		return ukern_io_setup(nr, ctxp);
	}
	long destroy(aio_context_t ctx) override
	{
		return ukern_io_destroy(ctx);
	}
	long submit(aio_context_t ctx, long nr, struct iocb **p) override
	{
		return ukern_io_submit(ctx, nr, p);
	}
	long cancel(aio_context_t ctx, struct iocb *iocb, struct io_event *res) override
	{
		return ukern_io_cancel(ctx, iocb, res);
	}
	long getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
		       struct timespec *ts) override
	{
		return ukern_io_getevents(ctx, min_nr, nr, ev, ts);
	}
	long pgetevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			struct timespec *ts, const struct __aio_sigset *sig) override
	{
		return ukern_io_pgetevents(ctx, min_nr, nr, ev, ts, sig);
	}
};

// Whether the host kernel has AIO (some sandboxes build it out).
inline bool host_has_aio()
{
	aio_context_t ctx = 0;

	if (syscall(SYS_io_setup, 1, &ctx) < 0)
		return false;
	syscall(SYS_io_destroy, ctx);
	return true;
}

} // namespace aiotest

#endif // UKERN_TESTS_AIO_AIO_BACKEND_TESTLIB_H_
