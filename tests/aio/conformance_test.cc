// SPDX-License-Identifier: GPL-2.0-only
//
// Differential conformance: every scenario runs once against the host
// kernel's AIO (raw system calls) and once against ukern's fs/aio.c, and
// writes a transcript (return values, errno, event fields, ring header).
// A scenario passes only when ukern's transcript matches the host's line for
// line. A step the host cannot run (no AIO in the kernel, e.g. in some
// sandboxes) skips the host side only.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/shim/cpu.h>

#include "aio_backend_testlib.h"
#include "testmain.h"

using u64 = uint64_t;

namespace
{

constexpr unsigned long kKernelAddr = 0xffff880000000000UL;

struct aio_ring_hdr {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
	struct io_event io_events[];
};

using aiotest::Backend;
using aiotest::host_has_aio;
using aiotest::HostBackend;
using aiotest::UkernBackend;

using Transcript = std::vector<std::string>;
using Scenario = std::function<void(Backend &, Transcript &)>;

void Log(Transcript &t, const std::string &what, long v)
{
	t.push_back(what + "=" + std::to_string(v));
}

std::string TmpFile(const char *tag, size_t size)
{
	char path[] = "/tmp/ukern_aio_confXXXXXX";
	int fd = mkstemp(path);
	std::string buf(size, 'x');

	EXPECT_GE(fd, 0) << tag;
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)('a' + i % 26);
	EXPECT_EQ(write(fd, buf.data(), size), (ssize_t)size);
	close(fd);
	return path;
}

void RunBoth(const Scenario &s)
{
	static const bool host_ok = host_has_aio();
	HostBackend host;
	UkernBackend uk;
	Transcript th, tu;

	s(uk, tu);
	if (!host_ok) {
		GTEST_SKIP() << "host kernel AIO unavailable; ukern side ran";
	}
	s(host, th);
	EXPECT_EQ(th, tu);
	EXPECT_EQ(uk::aio::nr_live_reqs(), 0);
}

/* Reaps exactly n events within a bounded wait and logs their fields. */
void ReapLog(Backend &b, Transcript &t, aio_context_t ctx, int n, struct iocb *const *expect)
{
	struct io_event ev[16];
	struct timespec ts = { 5, 0 };
	long r = b.getevents(ctx, n, n, ev, &ts);

	Log(t, "getevents", r);
	/* events may come in any order: log them in iocb order */
	std::vector<std::pair<int, struct io_event>> got;
	for (long i = 0; i < r; i++) {
		int which = -1;

		for (int k = 0; k < n; k++)
			if (ev[i].obj == (u64)(uintptr_t)expect[k])
				which = k;
		got.push_back({ which, ev[i] });
	}
	std::sort(got.begin(), got.end(),
		  [](const auto &a, const auto &b) { return a.first < b.first; });
	for (auto &[which, e] : got) {
		Log(t, "ev.which", which);
		Log(t, "ev.data", (long)e.data);
		Log(t, "ev.res", (long)e.res);
		Log(t, "ev.res2", (long)e.res2);
	}
}

void PrepRw(struct iocb *cb, int op, int fd, void *buf, size_t len, long long off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = op;
	cb->aio_fildes = fd;
	cb->aio_buf = (u64)(uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
	cb->aio_data = 0x1234;
}

TEST(AioConformanceTest, SetupErrors)
{
	RunBoth([](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;

		Log(t, "kaddr nr1", b.setup(1, (aio_context_t *)kKernelAddr));
		Log(t, "kaddr nr0", b.setup(0, (aio_context_t *)kKernelAddr));
		Log(t, "null nr1", b.setup(1, nullptr));
		Log(t, "nr0", b.setup(0, &ctx));
		Log(t, "nr-1", b.setup((unsigned)-1, &ctx));
		Log(t, "nr-1000", b.setup((unsigned)-1000, &ctx));
		Log(t, "nr100000", b.setup(100000, &ctx));
		Log(t, "nr4194304", b.setup(4194304, &ctx));
		Log(t, "nr4194305", b.setup(4194305, &ctx));
		Log(t, "nr0x80000000", b.setup(0x80000000u, &ctx));
		Log(t, "nr0x80000001", b.setup(0x80000001u, &ctx));
		ctx = 12345;
		Log(t, "ctx!=0", b.setup(1, &ctx));
		ctx = 0;
		Log(t, "ok", b.setup(1, &ctx));
		Log(t, "again", b.setup(1, &ctx));
		Log(t, "destroy", b.destroy(ctx));
		Log(t, "destroy2", b.destroy(ctx));
		Log(t, "destroy-bad", b.destroy(~0UL));
		Log(t, "destroy-0", b.destroy(0));
	});
}

TEST(AioConformanceTest, RingGeometry)
{
	if (nr_cpu_ids != (unsigned)sysconf(_SC_NPROCESSORS_CONF))
		GTEST_SKIP() << "nr_cpu_ids differs from the host's possible CPUs";
	RunBoth([](Backend &b, Transcript &t) {
		for (unsigned n : { 1u, 8u, 32u, 64u, 127u, 128u, 1024u, 4096u }) {
			aio_context_t ctx = 0;

			Log(t, "setup", b.setup(n, &ctx));
			auto *r = (aio_ring_hdr *)ctx;
			Log(t, "id", r->id);
			Log(t, "nr", r->nr);
			Log(t, "head", r->head);
			Log(t, "tail", r->tail);
			Log(t, "magic", r->magic);
			Log(t, "compat", r->compat_features);
			Log(t, "incompat", r->incompat_features);
			Log(t, "hlen", r->header_length);
			Log(t, "destroy", b.destroy(ctx));
		}
		/* ids: the first free slot is reused */
		aio_context_t c[3] = {};
		for (auto &x : c)
			b.setup(1, &x);
		Log(t, "id1", ((aio_ring_hdr *)c[1])->id);
		b.destroy(c[0]);
		aio_context_t d = 0;
		b.setup(1, &d);
		Log(t, "reused", ((aio_ring_hdr *)d)->id);
		b.destroy(d);
		b.destroy(c[1]);
		b.destroy(c[2]);
	});
}

TEST(AioConformanceTest, SubmitErrors)
{
	std::string path = TmpFile("submit", 8192);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDWR);
		int rofd = open(path.c_str(), O_RDONLY);
		int wofd = open(path.c_str(), O_WRONLY);
		char buf[4096];
		struct iocb cb, *cbs[2] = { &cb, nullptr };

		Log(t, "setup", b.setup(64, &ctx));
		Log(t, "nr<0 badctx", b.submit(~0UL, -1, cbs));
		Log(t, "badctx", b.submit(~0UL, 1, cbs));
		Log(t, "badctx nr0", b.submit(~0UL, 0, nullptr));
		Log(t, "nr0 null", b.submit(ctx, 0, nullptr));
		Log(t, "null array", b.submit(ctx, 1, nullptr));
		Log(t, "kaddr array", b.submit(ctx, 1, (struct iocb **)kKernelAddr));
		struct iocb *nullcb[1] = { nullptr };
		Log(t, "null iocb", b.submit(ctx, 1, nullcb));
		struct iocb *kcb[1] = { (struct iocb *)kKernelAddr };
		Log(t, "kaddr iocb", b.submit(ctx, 1, kcb));

		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 16, 0);
		cb.aio_reserved2 = 1;
		Log(t, "reserved2", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, (size_t)-1, 0);
		Log(t, "nbytes-1", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, 9999, buf, 16, 0);
		Log(t, "badfd", b.submit(ctx, 1, cbs));
		cb.aio_lio_opcode = 77;
		Log(t, "badfd+badop", b.submit(ctx, 1, cbs));
		for (int op : { (int)IOCB_CMD_NOOP, 4, 77 }) {
			PrepRw(&cb, op, fd, buf, 16, 0);
			Log(t, "op" + std::to_string(op), b.submit(ctx, 1, cbs));
		}
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 16, 0);
		cb.aio_flags = IOCB_FLAG_RESFD;
		cb.aio_resfd = 9998;
		Log(t, "resfd closed", b.submit(ctx, 1, cbs));
		cb.aio_resfd = fd;
		Log(t, "resfd not eventfd", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, wofd, buf, 16, 0);
		Log(t, "read on wronly", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PWRITE, rofd, buf, 16, 0);
		Log(t, "write on rdonly", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 16, -1);
		Log(t, "offset-1", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, (void *)kKernelAddr, 16, 0);
		Log(t, "kernel buf", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 16, 0);
		cb.aio_rw_flags = (int)0x80000000;
		Log(t, "bad rwflag", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 16, 0);
		cb.aio_flags = IOCB_FLAG_IOPRIO;
		cb.aio_reqprio = (short)(7 << 13);
		Log(t, "ioprio invalid", b.submit(ctx, 1, cbs));

		std::vector<struct iovec> iov(1025, { buf, 1 });
		PrepRw(&cb, IOCB_CMD_PREADV, fd, iov.data(), 1025, 0);
		Log(t, "1025 iovecs", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREADV, fd, (void *)1, 2, 0);
		Log(t, "bad iovec array", b.submit(ctx, 1, cbs));

		/* iocb in read-only memory: storing aio_key fails */
		auto *ro = (struct iocb *)mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		PrepRw(ro, IOCB_CMD_PREAD, fd, buf, 16, 0);
		mprotect(ro, 4096, PROT_READ);
		struct iocb *rocbs[1] = { ro };
		Log(t, "ro iocb", b.submit(ctx, 1, rocbs));
		munmap(ro, 4096);

		Log(t, "no events", b.getevents(ctx, 0, 1, nullptr, nullptr));
		Log(t, "destroy", b.destroy(ctx));
		close(fd);
		close(rofd);
		close(wofd);
	});
	unlink(path.c_str());
}

/*
 * Vectors and RWF flags as 6.12 checks them: an inaccessible segment
 * anywhere in the vector is -EFAULT, the segment count is an unsigned int
 * (aio_nbytes truncated), RWF_ATOMIC needs FMODE_CAN_ATOMIC_WRITE.
 */
TEST(AioConformanceTest, IovecAndRwFlags)
{
	std::string path = TmpFile("iovec", 8192);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDWR);
		char buf[64];
		struct iocb cb, *cbs[1] = { &cb };
		struct iovec iov[3] = { { buf, 8 }, { buf + 8, 8 }, { (void *)kKernelAddr, 8 } };

		Log(t, "setup", b.setup(8, &ctx));
		PrepRw(&cb, IOCB_CMD_PREADV, fd, iov, 3, 0);
		Log(t, "bad third segment", b.submit(ctx, 1, cbs));
		iov[2].iov_base = buf + 16;
		iov[1].iov_base = (void *)kKernelAddr;
		PrepRw(&cb, IOCB_CMD_PWRITEV, fd, iov, 3, 0);
		Log(t, "bad second segment", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREADV, fd, iov, 0, 0);
		cb.aio_nbytes = 1ULL << 40; /* nr_segs 0 once truncated */
		Log(t, "nr_segs 1<<40", b.submit(ctx, 1, cbs));
		ReapLog(b, t, ctx, 1, cbs);
		PrepRw(&cb, IOCB_CMD_PWRITE, fd, buf, 8, 0);
		cb.aio_rw_flags = 0x40; /* RWF_ATOMIC */
		Log(t, "atomic buffered write", b.submit(ctx, 1, cbs));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 8, 0);
		cb.aio_rw_flags = 0x40;
		Log(t, "atomic read", b.submit(ctx, 1, cbs));
		Log(t, "destroy", b.destroy(ctx));
		close(fd);
	});
	unlink(path.c_str());
}

/* RWF_DONTCACHE (0x80) is not a 6.12 flag: -EOPNOTSUPP. */
TEST(AioConformanceTest, RwfDontcacheIsUnknown)
{
	std::string path = TmpFile("dontcache", 4096);
	aio_context_t ctx = 0;
	int fd = open(path.c_str(), O_RDWR);
	char buf[8];
	struct iocb cb, *cbs[1] = { &cb };

	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);
	PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 8, 0);
	cb.aio_rw_flags = 0x80;
	EXPECT_EQ(ukern_io_submit(ctx, 1, cbs), -EOPNOTSUPP);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	close(fd);
	unlink(path.c_str());
}

TEST(AioConformanceTest, ReadWriteEvents)
{
	std::string path = TmpFile("rw", 8192);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDWR);
		char buf[4][64];
		struct iocb cb[4], *cbs[5] = { &cb[0], &cb[1], &cb[2], &cb[3], nullptr };

		b.setup(16, &ctx);
		PrepRw(&cb[0], IOCB_CMD_PREAD, fd, buf[0], 64, 0);
		PrepRw(&cb[1], IOCB_CMD_PWRITE, fd, buf[1], 10, 8190);
		PrepRw(&cb[2], IOCB_CMD_PREAD, fd, buf[2], 64, 100000);
		PrepRw(&cb[3], IOCB_CMD_PREAD, fd, nullptr, 64, 0);
		memset(buf[1], 'Z', 64);
		cb[1].aio_data = 77;
		cb[0].aio_key = 5; /* the kernel overwrites it with 0 */
		Log(t, "submit4", b.submit(ctx, 4, cbs));
		Log(t, "key", cb[0].aio_key);
		ReapLog(b, t, ctx, 4, cbs);
		Log(t, "data", memcmp(buf[0], "abcdefghij", 10));
		/* [good, NULL] */
		PrepRw(&cb[0], IOCB_CMD_PREAD, fd, buf[0], 8, 0);
		struct iocb *partial[2] = { &cb[0], nullptr };
		Log(t, "partial", b.submit(ctx, 2, partial));
		ReapLog(b, t, ctx, 1, partial);
		/* vectored */
		struct iovec iov[2] = { { buf[0], 3 }, { buf[1], 5 } };
		PrepRw(&cb[0], IOCB_CMD_PREADV, fd, iov, 2, 1);
		Log(t, "preadv", b.submit(ctx, 1, cbs));
		ReapLog(b, t, ctx, 1, cbs);
		Log(t, "v0", buf[0][0]);
		Log(t, "v1", buf[1][0]);
		/* a read into a read-only mapping completes with -EFAULT */
		void *rom = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		PrepRw(&cb[0], IOCB_CMD_PREAD, fd, rom, 64, 0);
		Log(t, "ro buf", b.submit(ctx, 1, cbs));
		ReapLog(b, t, ctx, 1, cbs);
		munmap(rom, 4096);
		/* fsync / fdsync */
		PrepRw(&cb[0], IOCB_CMD_FSYNC, fd, nullptr, 0, 0);
		PrepRw(&cb[1], IOCB_CMD_FDSYNC, fd, nullptr, 0, 0);
		Log(t, "fsync", b.submit(ctx, 2, cbs));
		ReapLog(b, t, ctx, 2, cbs);
		PrepRw(&cb[0], IOCB_CMD_FSYNC, fd, nullptr, 1, 0);
		Log(t, "fsync nbytes", b.submit(ctx, 1, cbs));
		int p[2];
		EXPECT_EQ(pipe(p), 0);
		PrepRw(&cb[0], IOCB_CMD_FSYNC, p[0], nullptr, 0, 0);
		Log(t, "fsync pipe", b.submit(ctx, 1, cbs));
		int z = open("/dev/zero", O_RDONLY);
		PrepRw(&cb[0], IOCB_CMD_FSYNC, z, nullptr, 0, 0);
		Log(t, "fsync devzero", b.submit(ctx, 1, cbs));
		close(z);
		/* empty O_NONBLOCK pipe read: -EAGAIN in the event */
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		PrepRw(&cb[0], IOCB_CMD_PREAD, p[0], buf[0], 8, 0);
		Log(t, "pipe read", b.submit(ctx, 1, cbs));
		ReapLog(b, t, ctx, 1, cbs);
		/* directory */
		int dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
		PrepRw(&cb[0], IOCB_CMD_PREAD, dfd, buf[0], 8, 0);
		Log(t, "dir read", b.submit(ctx, 1, cbs));
		close(dfd);
		close(p[0]);
		close(p[1]);
		Log(t, "destroy", b.destroy(ctx));
		close(fd);
	});
	unlink(path.c_str());
}

TEST(AioConformanceTest, EventfdAndPoll)
{
	std::string path = TmpFile("poll", 4096);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDWR);
		int efd = eventfd(0, EFD_NONBLOCK);
		char buf[64];
		struct iocb cb[2], *cbs[2] = { &cb[0], &cb[1] };
		u64 cnt = 0;
		int p[2];

		b.setup(8, &ctx);
		PrepRw(&cb[0], IOCB_CMD_PREAD, fd, buf, 8, 0);
		cb[0].aio_flags = IOCB_FLAG_RESFD;
		cb[0].aio_resfd = efd;
		Log(t, "resfd", b.submit(ctx, 1, cbs));
		struct pollfd pf = { efd, POLLIN, 0 };
		Log(t, "efd poll", poll(&pf, 1, 5000));
		Log(t, "efd read", read(efd, &cnt, 8));
		Log(t, "efd count", (long)cnt);
		struct timespec zero = { 0, 0 };
		struct io_event ev[2];
		Log(t, "ev after efd", b.getevents(ctx, 0, 2, ev, &zero));

		/* poll on a regular file */
		memset(&cb[0], 0, sizeof(cb[0]));
		cb[0].aio_lio_opcode = IOCB_CMD_POLL;
		cb[0].aio_fildes = fd;
		cb[0].aio_buf = POLLIN;
		Log(t, "poll reg", b.submit(ctx, 1, cbs));
		ReapLog(b, t, ctx, 1, cbs);
		cb[0].aio_buf = POLLPRI;
		Log(t, "pollpri reg", b.submit(ctx, 1, cbs));
		cb[0].aio_buf = 0x10000;
		Log(t, "poll mask>16b", b.submit(ctx, 1, cbs));
		cb[0].aio_buf = POLLIN;
		cb[0].aio_offset = 1;
		Log(t, "poll offset", b.submit(ctx, 1, cbs));

		/* pending poll on a pipe, completed by a write */
		EXPECT_EQ(pipe(p), 0);
		memset(&cb[0], 0, sizeof(cb[0]));
		cb[0].aio_lio_opcode = IOCB_CMD_POLL;
		cb[0].aio_fildes = p[0];
		cb[0].aio_buf = POLLIN;
		cb[0].aio_data = 9;
		Log(t, "poll pipe", b.submit(ctx, 1, cbs));
		Log(t, "none yet", b.getevents(ctx, 0, 2, ev, &zero));
		Log(t, "write", write(p[1], "x", 1));
		ReapLog(b, t, ctx, 1, cbs);
		char c;
		Log(t, "drain", read(p[0], &c, 1));

		/* pending poll cancelled */
		Log(t, "poll pipe2", b.submit(ctx, 1, cbs));
		Log(t, "cancel", b.cancel(ctx, &cb[0], ev));
		ReapLog(b, t, ctx, 1, cbs);
		Log(t, "cancel again", b.cancel(ctx, &cb[0], ev));
		/* cancel of a completed read, key != 0, unreadable iocb */
		PrepRw(&cb[1], IOCB_CMD_PREAD, fd, buf, 8, 0);
		Log(t, "read", b.submit(ctx, 1, &cbs[1]));
		Log(t, "cancel read", b.cancel(ctx, &cb[1], ev));
		ReapLog(b, t, ctx, 1, &cbs[1]);
		cb[1].aio_key = 1;
		Log(t, "cancel key1", b.cancel(ctx, &cb[1], ev));
		Log(t, "cancel null", b.cancel(ctx, nullptr, ev));
		cb[1].aio_key = 0;
		Log(t, "cancel badctx", b.cancel(~0UL, &cb[1], ev));

		/* destroy cancels a pending poll and still returns */
		Log(t, "poll pipe3", b.submit(ctx, 1, cbs));
		Log(t, "destroy", b.destroy(ctx));
		close(p[0]);
		close(p[1]);
		close(efd);
		close(fd);
	});
	unlink(path.c_str());
}

TEST(AioConformanceTest, GeteventsSemantics)
{
	std::string path = TmpFile("getev", 4096);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDONLY);
		char buf[8];
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev[4];
		struct timespec zero = { 0, 0 }, ms10 = { 0, 10000000 };

		b.setup(4, &ctx);
		Log(t, "badctx", b.getevents(~0UL, 0, 1, ev, &zero));
		Log(t, "min>nr", b.getevents(ctx, 2, 1, ev, &zero));
		Log(t, "min-1", b.getevents(ctx, -1, 1, ev, &zero));
		Log(t, "nr-1", b.getevents(ctx, 0, -1, ev, &zero));
		Log(t, "bad timeout", b.getevents(ctx, 0, 1, ev, (struct timespec *)kKernelAddr));
		Log(t, "zero", b.getevents(ctx, 1, 1, ev, &zero));
		Log(t, "zero min2", b.getevents(ctx, 2, 2, ev, &zero));
		Log(t, "10ms", b.getevents(ctx, 1, 1, ev, &ms10));
		Log(t, "min0 null ts", b.getevents(ctx, 0, 1, ev, nullptr));
		Log(t, "nr0", b.getevents(ctx, 0, 0, ev, nullptr));
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 8, 0);
		Log(t, "submit", b.submit(ctx, 1, cbs));
		Log(t, "bad events", b.getevents(ctx, 1, 1, (struct io_event *)kKernelAddr, &zero));
		Log(t, "null events", b.getevents(ctx, 1, 1, nullptr, &zero));
		Log(t, "retry", b.getevents(ctx, 1, 1, ev, &zero));
		struct __aio_sigset sig;
		sigset_t mask;
		sigemptyset(&mask);
		sig.sigmask = &mask;
		sig.sigsetsize = 7;
		Log(t, "pget size7", b.pgetevents(ctx, 0, 1, ev, &zero, &sig));
		sig.sigsetsize = 8;
		Log(t, "pget ok", b.pgetevents(ctx, 0, 1, ev, &zero, &sig));
		Log(t, "pget badsig",
		    b.pgetevents(ctx, 0, 1, ev, &zero, (struct __aio_sigset *)kKernelAddr));
		Log(t, "pget nullsig", b.pgetevents(ctx, 0, 1, ev, &zero, nullptr));
		Log(t, "destroy", b.destroy(ctx));
		Log(t, "after destroy", b.getevents(ctx, 0, 1, ev, &zero));
		Log(t, "submit after", b.submit(ctx, 0, nullptr));
		close(fd);
	});
	unlink(path.c_str());
}

/* Ring slots: per-CPU batching on one CPU, and user-space reaping. */
TEST(AioConformanceTest, RingSlotsAndUserReap)
{
	if (nr_cpu_ids != (unsigned)sysconf(_SC_NPROCESSORS_CONF))
		GTEST_SKIP() << "nr_cpu_ids differs from the host's possible CPUs";
	std::string path = TmpFile("slots", 4096);
	cpu_set_t old, one;

	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDONLY);
		char buf[8];
		std::vector<struct iocb> cb(1000);
		std::vector<struct iocb *> cbs(1000);

		b.setup(32, &ctx);
		for (int i = 0; i < 1000; i++) {
			PrepRw(&cb[i], IOCB_CMD_PREAD, fd, buf, 8, 0);
			cbs[i] = &cb[i];
		}
		long got = b.submit(ctx, 1000, cbs.data());
		Log(t, "submit1000", got);
		Log(t, "more", b.submit(ctx, 1, cbs.data()));
		auto *r = (aio_ring_hdr *)ctx;
		Log(t, "tail", r->tail);
		/* reap from user space, the fio userspace_reap way */
		unsigned head = r->head, n = 0;
		while (head != __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE)) {
			n += r->io_events[head].res == 8;
			head = (head + 1) % r->nr;
			__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
		}
		Log(t, "reaped", n);
		Log(t, "submit again", b.submit(ctx, 1000, cbs.data()));
		struct io_event ev[200];
		struct timespec zero = { 0, 0 };
		Log(t, "getevents", b.getevents(ctx, 0, 200, ev, &zero));
		Log(t, "destroy", b.destroy(ctx));
		close(fd);
	});
	sched_setaffinity(0, sizeof(old), &old);
	unlink(path.c_str());
}

TEST(AioConformanceTest, MremapMovesTheHandle)
{
	std::string path = TmpFile("mremap", 4096);

	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int fd = open(path.c_str(), O_RDONLY);
		char buf[8];
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev[1];
		struct timespec ts = { 5, 0 };

		b.setup(1, &ctx);
		size_t size = (((aio_ring_hdr *)ctx)->nr + 1) * 32UL;
		void *dst = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *moved = mremap((void *)ctx, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		Log(t, "moved", moved == dst);
		aio_context_t nctx = (aio_context_t)moved;
		PrepRw(&cb, IOCB_CMD_PREAD, fd, buf, 8, 0);
		Log(t, "old submit", b.submit(ctx, 1, cbs));
		Log(t, "new submit", b.submit(nctx, 1, cbs));
		Log(t, "new reap", b.getevents(nctx, 1, 1, ev, &ts));
		Log(t, "old destroy", b.destroy(ctx));
		Log(t, "new destroy", b.destroy(nctx));
		close(fd);
	});
	unlink(path.c_str());
}

TEST(AioConformanceTest, ForkChildHasNoContexts)
{
	RunBoth([&](Backend &b, Transcript &t) {
		aio_context_t ctx = 0;
		int status = 0;

		Log(t, "setup", b.setup(1, &ctx));
		Log(t, "before fork", b.submit(ctx, 0, nullptr));
		pid_t pid = fork();
		if (pid == 0)
			_exit(b.submit(ctx, 0, nullptr) == -EINVAL ? 0 : 1);
		waitpid(pid, &status, 0);
		Log(t, "child", WEXITSTATUS(status));
		Log(t, "parent", b.submit(ctx, 0, nullptr));
		Log(t, "destroy", b.destroy(ctx));
	});
}

} // namespace
