// SPDX-License-Identifier: GPL-2.0-only
//
// Host files (aio/aio_host.cc): O_DIRECT reads and writes on the io_uring
// backend and on the threads backend (aio.host_backend), the queue depth
// each reaches, data, vectors, fsync, errors as the kernel gives them,
// io_cancel, io_destroy and the process's exit with requests in flight, and
// the fall back to threads where io_uring_setup() is refused (seccomp).
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/sched.h>

#include "aio_testlib.h"
#include "testmain.h"

extern char **environ;

namespace
{

using uk::aio::HostBackend;
using uk::testing::WaitFor;
using uk::testing::WaitTaskBlocked;

constexpr size_t kBlock = 4096;
constexpr char kSeccompEnv[] = "UKERN_HOST_TEST_SECCOMP";

const char *Name(HostBackend b)
{
	return b == HostBackend::kUring ? "uring" : "threads";
}

void Prep(struct iocb *cb, int op, int fd, void *buf, size_t len, long long off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = op;
	cb->aio_fildes = fd;
	cb->aio_buf = (unsigned long)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
}

class HostTest : public AioTest
{
      protected:
	void SetUp() override
	{
		AioTest::SetUp();
		char tmpl[] = "/tmp/ukern-host-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}
	void TearDown() override
	{
		if (ctx_) {
			EXPECT_EQ(ukern_io_destroy(ctx_), 0);
		}
		for (int fd : fds_)
			close(fd);
		for (void *p : bufs_)
			free(p);
		if (!dir_.empty()) {
			unlink((dir_ + "/f").c_str());
			rmdir(dir_.c_str());
		}
		uk::aio::aio_host_backend = HostBackend::kUring;
		AioTest::TearDown();
	}

	/* Picks the backend; false if it cannot run here (no io_uring). */
	bool Use(HostBackend b)
	{
		uk::aio::aio_host_backend = b;
		return uk::aio::host_backend_active() == b;
	}
	int Fd(int fd)
	{
		if (fd >= 0)
			fds_.push_back(fd);
		return fd;
	}
	/* An O_DIRECT file of @blocks blocks; -1 if the filesystem refuses. */
	int DirectFile(int flags, size_t blocks)
	{
		std::string path = dir_ + "/f";
		int fd = Fd(open(path.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600));

		if (fd < 0 || ftruncate(fd, blocks * kBlock))
			return -1;
		if ((flags & O_ACCMODE) != O_RDWR)
			fd = Fd(open(path.c_str(), flags | O_DIRECT));
		return fd;
	}
	char *Buf(size_t len, int fill)
	{
		void *p = nullptr;

		EXPECT_EQ(posix_memalign(&p, kBlock, len), 0);
		memset(p, fill, len);
		bufs_.push_back(p);
		return (char *)p;
	}
	/*
	 * A full packet pipe: its write end is O_DIRECT (each read takes one
	 * write's bytes), it has room for one packet, and "fill" is in it.
	 * A write waits in the host until the test reads.
	 */
	void FullPipe(int p[2])
	{
		ASSERT_EQ(pipe2(p, O_DIRECT), 0);
		Fd(p[0]);
		Fd(p[1]);
		ASSERT_EQ(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
		ASSERT_EQ(write(p[1], "fill", 5), 5);
	}
	/* The next packet from the pipe (the test's read end). */
	std::string Packet(int fd)
	{
		char pkt[64] = {};

		EXPECT_GT(read(fd, pkt, sizeof(pkt) - 1), 0);
		return pkt;
	}
	void OpenContext(unsigned nr)
	{
		ASSERT_EQ(ukern_io_setup(nr, &ctx_), 0);
	}
	long Submit(std::vector<struct iocb *> cbs)
	{
		return ukern_io_submit(ctx_, cbs.size(), cbs.data());
	}
	/* Exactly @n events, within ten seconds. */
	std::vector<struct io_event> Reap(long n)
	{
		std::vector<struct io_event> ev(n);
		long got = 0;

		while (got < n) {
			struct timespec ts = { 10, 0 };
			long r = ukern_io_getevents(ctx_, n - got, n - got, ev.data() + got, &ts);

			if (r <= 0) {
				ADD_FAILURE()
					<< "io_getevents: " << r << " after " << got << " of " << n;
				break;
			}
			got += r;
		}
		ev.resize(got);
		return ev;
	}

	aio_context_t ctx_ = 0;
	std::string dir_;
	std::vector<int> fds_;
	std::vector<void *> bufs_;
};

/*
 * 32 writes to a full packet pipe wait in the host all at once (the
 * program's depth, where a pool of a few threads would hold only a few),
 * and each completes once the test reads, every packet arriving once.
 */
TEST_F(HostTest, DepthReachesTheHost)
{
	constexpr int kDepth = 32;

	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b)) {
			ASSERT_EQ(b, HostBackend::kUring);
			continue; /* no io_uring here: the threads half still runs */
		}
		int p[2];
		struct iocb cb[kDepth];
		std::vector<struct iocb *> cbs;
		char *buf = Buf(kDepth * 16, 0);
		std::set<std::string> sent, got;

		FullPipe(p);
		OpenContext(kDepth);
		for (int i = 0; i < kDepth; i++) {
			snprintf(buf + i * 16, 16, "packet %02d", i);
			sent.insert(buf + i * 16);
			Prep(&cb[i], IOCB_CMD_PWRITE, p[1], buf + i * 16, 10, 0);
			cbs.push_back(&cb[i]);
		}
		ASSERT_EQ(Submit(cbs), kDepth);
		ASSERT_TRUE(WaitFor([] { return uk::aio::host_inflight() == kDepth; }))
			<< "in the host: " << uk::aio::host_inflight();
		struct io_event none[1];
		struct timespec zero = { 0, 0 };
		EXPECT_EQ(ukern_io_getevents(ctx_, 0, 1, none, &zero), 0);

		EXPECT_EQ(Packet(p[0]), "fill");
		for (int i = 0; i < kDepth; i++)
			got.insert(Packet(p[0]));
		EXPECT_EQ(got, sent);
		for (const struct io_event &e : Reap(kDepth))
			EXPECT_EQ(e.res, 10);
		EXPECT_EQ(uk::aio::host_inflight(), 0);
		ASSERT_EQ(ukern_io_destroy(ctx_), 0);
		ctx_ = 0;
	}
}

/* Writes then reads back, single buffers and vectors, at offsets. */
TEST_F(HostTest, DataRoundTrip)
{
	constexpr int kBlocks = 16;

	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b))
			continue;
		int fd = DirectFile(O_RDWR, kBlocks);
		if (fd < 0)
			GTEST_SKIP() << "no O_DIRECT in " << dir_;
		OpenContext(64);

		/* Blocks 0..7 one by one, 8..15 as one vector of two halves. */
		std::vector<struct iocb> cb(kBlocks);
		std::vector<struct iocb *> cbs;
		char *out = Buf(kBlocks * kBlock, 0);
		for (int i = 0; i < kBlocks * (int)kBlock; i++)
			out[i] = (char)(i * 7 + i / kBlock + (int)b);
		for (int i = 0; i < 8; i++) {
			Prep(&cb[i], IOCB_CMD_PWRITE, fd, out + i * kBlock, kBlock, i * kBlock);
			cbs.push_back(&cb[i]);
		}
		struct iovec wv[2] = { { out + 8 * kBlock, 3 * kBlock },
				       { out + 11 * kBlock, 5 * kBlock } };
		Prep(&cb[8], IOCB_CMD_PWRITEV, fd, wv, 2, 8 * kBlock);
		cbs.push_back(&cb[8]);
		ASSERT_EQ(Submit(cbs), 9);
		for (const struct io_event &e : Reap(9)) {
			auto *c = (struct iocb *)e.obj;
			EXPECT_EQ(e.res, c->aio_lio_opcode == IOCB_CMD_PWRITEV ? 8 * (long)kBlock
									       : (long)kBlock);
		}

		char *in = Buf(kBlocks * kBlock, 0x5a);
		struct iovec rv[3] = { { in, kBlock },
				       { in + kBlock, 6 * kBlock },
				       { in + 7 * kBlock, kBlock } };
		cbs.clear();
		Prep(&cb[0], IOCB_CMD_PREADV, fd, rv, 3, 0);
		cbs.push_back(&cb[0]);
		for (int i = 8; i < kBlocks; i++) {
			Prep(&cb[i], IOCB_CMD_PREAD, fd, in + i * kBlock, kBlock, i * kBlock);
			cbs.push_back(&cb[i]);
		}
		ASSERT_EQ(Submit(cbs), 9);
		for (const struct io_event &e : Reap(9)) {
			auto *c = (struct iocb *)e.obj;
			EXPECT_EQ(e.res, c->aio_lio_opcode == IOCB_CMD_PREADV ? 8 * (long)kBlock
									      : (long)kBlock);
		}
		EXPECT_EQ(memcmp(in, out, kBlocks * kBlock), 0);

		/* Past the end: a short read, then 0. */
		Prep(&cb[0], IOCB_CMD_PREAD, fd, in, 2 * kBlock, (kBlocks - 1) * kBlock);
		Prep(&cb[1], IOCB_CMD_PREAD, fd, in + 2 * kBlock, kBlock, kBlocks * kBlock);
		ASSERT_EQ(Submit({ &cb[0], &cb[1] }), 2);
		for (const struct io_event &e : Reap(2))
			EXPECT_EQ(e.res, (struct iocb *)e.obj == &cb[0] ? (long)kBlock : 0);

		ASSERT_EQ(ukern_io_destroy(ctx_), 0);
		ctx_ = 0;
		unlink((dir_ + "/f").c_str());
	}
}

/* FSYNC and FDSYNC on buffered and O_DIRECT files; the data is there. */
TEST_F(HostTest, FsyncAndFdatasync)
{
	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b))
			continue;
		std::string path = dir_ + "/f";
		int buffered = Fd(open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600));
		ASSERT_GE(buffered, 0);
		int direct = Fd(open(path.c_str(), O_RDWR | O_DIRECT));
		OpenContext(8);

		char *data = Buf(kBlock, 'f');
		struct iocb w, s1, s2, s3;
		Prep(&w, IOCB_CMD_PWRITE, buffered, data, kBlock, 0);
		ASSERT_EQ(Submit({ &w }), 1);
		ASSERT_EQ(Reap(1).at(0).res, (long)kBlock);
		Prep(&s1, IOCB_CMD_FSYNC, buffered, nullptr, 0, 0);
		Prep(&s2, IOCB_CMD_FDSYNC, buffered, nullptr, 0, 0);
		std::vector<struct iocb *> cbs = { &s1, &s2 };
		if (direct >= 0) {
			Prep(&s3, IOCB_CMD_FSYNC, direct, nullptr, 0, 0);
			cbs.push_back(&s3);
		}
		ASSERT_EQ(Submit(cbs), (long)cbs.size());
		for (const struct io_event &e : Reap(cbs.size()))
			EXPECT_EQ(e.res, 0);
		char back[16] = {};
		ASSERT_EQ(pread(buffered, back, sizeof(back), 0), (ssize_t)sizeof(back));
		EXPECT_EQ(back[0], 'f');
		EXPECT_EQ(back[15], 'f');
		ASSERT_EQ(ukern_io_destroy(ctx_), 0);
		ctx_ = 0;
	}
}

/*
 * The kernel's answers: a closed descriptor and a write-only file read are
 * io_submit() errors (-EBADF), as are a negative offset and FSYNC of a pipe
 * (-EINVAL); a misaligned O_DIRECT buffer and an unmapped one are events
 * (what pread() gives for the first, -EFAULT), as the host's direct I/O
 * answers them.
 */
TEST_F(HostTest, Errors)
{
	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b))
			continue;
		int fd = DirectFile(O_RDWR, 4);
		if (fd < 0)
			GTEST_SKIP() << "no O_DIRECT in " << dir_;
		int wronly = DirectFile(O_WRONLY, 4);
		ASSERT_GE(wronly, 0);
		int p[2];
		FullPipe(p);
		OpenContext(8);
		char *buf = Buf(2 * kBlock, 0);
		struct iocb cb;

		int closed = dup(fd);
		ASSERT_GE(closed, 0);
		close(closed);
		Prep(&cb, IOCB_CMD_PREAD, closed, buf, kBlock, 0);
		EXPECT_EQ(Submit({ &cb }), -EBADF);
		Prep(&cb, IOCB_CMD_PREAD, wronly, buf, kBlock, 0);
		EXPECT_EQ(Submit({ &cb }), -EBADF);
		Prep(&cb, IOCB_CMD_PWRITE, fd, buf, kBlock, -kBlock);
		EXPECT_EQ(Submit({ &cb }), -EINVAL);
		Prep(&cb, IOCB_CMD_FSYNC, p[1], nullptr, 0, 0);
		EXPECT_EQ(Submit({ &cb }), -EINVAL);

		/* What the host's direct I/O says of a misaligned buffer. */
		ssize_t host = pread(fd, buf + 1, kBlock, 0);
		Prep(&cb, IOCB_CMD_PREAD, fd, buf + 1, kBlock, 0);
		ASSERT_EQ(Submit({ &cb }), 1);
		EXPECT_EQ(Reap(1).at(0).res, host < 0 ? -errno : host);

		void *hole = mmap(nullptr, kBlock, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(hole, MAP_FAILED);
		Prep(&cb, IOCB_CMD_PREAD, fd, hole, kBlock, 0);
		ASSERT_EQ(Submit({ &cb }), 1);
		EXPECT_EQ(Reap(1).at(0).res, -EFAULT);
		munmap(hole, kBlock);

		ASSERT_EQ(ukern_io_destroy(ctx_), 0);
		ctx_ = 0;
		EXPECT_EQ(uk::aio::host_inflight(), 0);
	}
}

/* A host request is not cancellable: io_cancel() says -EINVAL, as aio.c. */
TEST_F(HostTest, CancelIsRefused)
{
	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b))
			continue;
		int p[2];
		FullPipe(p);
		OpenContext(4);
		struct iocb cb;
		struct io_event res;

		Prep(&cb, IOCB_CMD_PWRITE, p[1], (void *)"late", 5, 0);
		ASSERT_EQ(Submit({ &cb }), 1);
		ASSERT_TRUE(WaitFor([] { return uk::aio::host_inflight() == 1; }));
		EXPECT_EQ(ukern_io_cancel(ctx_, &cb, &res), -EINVAL);
		EXPECT_EQ(Packet(p[0]), "fill");
		EXPECT_EQ(Packet(p[0]), "late");
		EXPECT_EQ(Reap(1).at(0).res, 5);
		ASSERT_EQ(ukern_io_destroy(ctx_), 0);
		ctx_ = 0;
	}
}

/*
 * io_destroy() with writes in flight sleeps until they complete, then
 * returns; every packet arrives and no request is left.
 */
TEST_F(HostTest, DestroyWaitsForInFlight)
{
	constexpr int kWrites = 8;

	for (HostBackend b : { HostBackend::kUring, HostBackend::kThreads }) {
		SCOPED_TRACE(Name(b));
		if (!Use(b))
			continue;
		int p[2];
		FullPipe(p);
		OpenContext(kWrites);
		struct iocb cb[kWrites];
		std::vector<struct iocb *> cbs;

		for (int i = 0; i < kWrites; i++) {
			Prep(&cb[i], IOCB_CMD_PWRITE, p[1], (void *)"data", 5, 0);
			cbs.push_back(&cb[i]);
		}
		ASSERT_EQ(Submit(cbs), kWrites);
		ASSERT_TRUE(WaitFor([] { return uk::aio::host_inflight() == kWrites; }));

		std::atomic<struct task_struct *> task{ nullptr };
		std::atomic<bool> destroyed{ false }, seen{ false };
		aio_context_t ctx = ctx_;
		std::thread t([&] {
			task = current;
			EXPECT_EQ(ukern_io_destroy(ctx), 0);
			destroyed = true;
			/*
			 * The test is done with our task before it reads the
			 * pipe; that ordering runs through the host kernel,
			 * which ThreadSanitizer does not see: make it seen.
			 */
			while (!seen.load(std::memory_order_acquire))
				std::this_thread::yield();
		});
		ctx_ = 0;
		ASSERT_TRUE(WaitTaskBlocked(task));
		seen.store(true, std::memory_order_release);
		EXPECT_FALSE(destroyed.load());
		EXPECT_EQ(Packet(p[0]), "fill");
		for (int i = 0; i < kWrites; i++)
			EXPECT_EQ(Packet(p[0]), "data");
		t.join();
		EXPECT_TRUE(destroyed.load());
		EXPECT_EQ(uk::aio::host_inflight(), 0);
	}
}

/*
 * The process exits (exit_mm() -> exit_aio()) with a pipe write waiting in
 * the ring: io_uring cancels it, the write completes with -EINTR (its
 * eventfd is signalled) and the context is torn down.
 */
TEST_F(HostTest, ExitCompletesWaitingRequests)
{
	if (!Use(HostBackend::kUring))
		GTEST_SKIP() << "no io_uring here";
	int p[2];
	FullPipe(p);
	int efd = Fd(eventfd(0, EFD_NONBLOCK));
	ASSERT_GE(efd, 0);
	long live = uk::aio::nr_live_ctx();
	OpenContext(4);
	struct iocb cb;

	Prep(&cb, IOCB_CMD_PWRITE, p[1], (void *)"never", 6, 0);
	cb.aio_flags = IOCB_FLAG_RESFD;
	cb.aio_resfd = efd;
	ASSERT_EQ(Submit({ &cb }), 1);
	ASSERT_TRUE(WaitFor([] { return uk::aio::host_inflight() == 1; }));
	uk::aio::reset_mm_for_test();
	ctx_ = 0;
	uint64_t v = 0;
	EXPECT_EQ(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
	EXPECT_EQ(v, 1u);
	EXPECT_EQ(uk::aio::host_inflight(), 0);
	EXPECT_EQ(uk::aio::nr_live_ctx(), live);
	EXPECT_EQ(Packet(p[0]), "fill");
}

/*
 * With io_uring_setup() refused (a seccomp filter, as a container may
 * have), the threads backend serves the same requests. Runs in a fresh
 * process: this test binary again, with only SeccompChild, under the filter.
 */
/* The descriptors whose /proc/self/fd link starts with @prefix. */
std::vector<int> FdsLinkedTo(const char *prefix)
{
	std::vector<int> fds;
	for (int fd = 0; fd < 4096; fd++) {
		char path[64], target[256] = {};
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (readlink(path, target, sizeof(target) - 1) > 0 &&
		    strncmp(target, prefix, strlen(prefix)) == 0)
			fds.push_back(fd);
	}
	return fds;
}

/*
 * The descriptors ukern opens for itself are the kernel's files, which the
 * program's table does not hold: an iocb that names the memfd of the ring
 * pages, or the poller's epoll, gets -EBADF, and nothing reaches the ring
 * through them. Were the write of zeros below accepted, it would clear the
 * ring's header and the event of the read before it, and the reaper would
 * return an event of all zeros.
 */
TEST_F(HostTest, KernelDescriptorsAreNotTheProgramsOwn)
{
	static char zeros[4096];
	char buf[8];
	int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(nfd, 0);
	OpenContext(2);
	std::vector<int> fds = FdsLinkedTo("/memfd:[aio]");
	ASSERT_FALSE(fds.empty());

	/* An event on the ring, not yet reaped. */
	struct iocb rd;
	Prep(&rd, IOCB_CMD_PREAD, nfd, buf, sizeof(buf), 0);
	rd.aio_data = 0x1234;
	ASSERT_EQ(Submit({ &rd }), 1);

	/* A poll that waits starts the poller (its epoll is the kernel's too). */
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	struct iocb pl = {};
	pl.aio_lio_opcode = IOCB_CMD_POLL;
	pl.aio_fildes = p[0];
	pl.aio_buf = POLLIN;
	ASSERT_EQ(Submit({ &pl }), 1);
	for (int fd : FdsLinkedTo("anon_inode:[eventpoll]"))
		fds.push_back(fd);

	for (int fd : fds) {
		SCOPED_TRACE(fd);
		struct iocb wr, rd2, fs;
		Prep(&wr, IOCB_CMD_PWRITE, fd, zeros, sizeof(zeros), 0);
		Prep(&rd2, IOCB_CMD_PREAD, fd, zeros, sizeof(zeros), 0);
		Prep(&fs, IOCB_CMD_FSYNC, fd, nullptr, 0, 0);
		EXPECT_EQ(Submit({ &wr }), -EBADF);
		EXPECT_EQ(Submit({ &rd2 }), -EBADF);
		EXPECT_EQ(Submit({ &fs }), -EBADF);
	}

	std::vector<struct io_event> ev = Reap(1);
	EXPECT_EQ(ev.at(0).obj, (unsigned long)&rd);
	EXPECT_EQ(ev.at(0).data, 0x1234u);
	EXPECT_EQ(ev.at(0).res, 0);

	/* The poll completes once the pipe is readable. */
	ASSERT_EQ(write(p[1], "x", 1), 1);
	ev = Reap(1);
	EXPECT_EQ(ev.at(0).obj, (unsigned long)&pl);
	EXPECT_EQ(ev.at(0).res & POLLIN, POLLIN);
	close(p[0]);
	close(p[1]);
	close(nfd);
}

TEST_F(HostTest, FallsBackWhereIoUringIsRefused)
{
	std::string filter = "--gtest_filter=HostTest.SeccompChild";
	char self[] = "/proc/self/exe";
	char *argv[] = { self, filter.data(), nullptr };
	std::vector<char *> env;
	std::string flag = std::string(kSeccompEnv) + "=1";
	pid_t pid;
	int status = 0;

	for (char **e = environ; *e; e++)
		env.push_back(*e);
	env.push_back(flag.data());
	env.push_back(nullptr);
	ASSERT_EQ(posix_spawn(&pid, self, nullptr, nullptr, argv, env.data()), 0);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(HostTest, SeccompChild)
{
	if (!getenv(kSeccompEnv))
		GTEST_SKIP() << "runs under FallsBackWhereIoUringIsRefused";
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(insns) / sizeof(insns[0])), insns };
	ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ASSERT_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);

	ASSERT_EQ(uk::aio::aio_host_backend, HostBackend::kUring);
	EXPECT_EQ(uk::aio::host_backend_active(), HostBackend::kThreads);
	int p[2];
	FullPipe(p);
	OpenContext(4);
	struct iocb cb;
	Prep(&cb, IOCB_CMD_PWRITE, p[1], (void *)"threads", 8, 0);
	ASSERT_EQ(Submit({ &cb }), 1);
	ASSERT_TRUE(WaitFor([] { return uk::aio::host_inflight() == 1; }));
	EXPECT_EQ(Packet(p[0]), "fill");
	EXPECT_EQ(Packet(p[0]), "threads");
	EXPECT_EQ(Reap(1).at(0).res, 8);
}

} // namespace
