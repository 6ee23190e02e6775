// SPDX-License-Identifier: GPL-2.0-only
//
// Unit tests of ukern's fs/aio.c: ring accounting, the ioctx table, the
// lookup/refcount/slot-accounting modes, io_destroy waiting for in-flight
// I/O, wakeups, timeouts, signals, leaks, and 64k contexts at once.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <dirent.h>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/cred.h>
#include <uk/linux/errno.h>
#include <uk/linux/percpu.h>
#include <uk/shim/cpu.h>

#include "aio_testlib.h"
#include "testmain.h"

namespace
{

using uk::aio::CtxInfo;

struct aio_ring_hdr {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
	struct io_event io_events[];
};

/* A device whose reads complete only when the test says so. */
std::mutex dev_lock;
std::vector<struct kiocb *> dev_pending;

ssize_t deferred_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	std::lock_guard<std::mutex> g(dev_lock);
	dev_pending.push_back(iocb);
	return -EIOCBQUEUED;
}

const struct file_operations deferred_fops = {
	.read_iter = deferred_read_iter,
	.write_iter = nullptr,
	.fsync = nullptr,
	.poll = nullptr,
};

size_t CompleteDeferred(long res)
{
	std::vector<struct kiocb *> v;
	{
		std::lock_guard<std::mutex> g(dev_lock);
		v.swap(dev_pending);
	}
	for (struct kiocb *k : v)
		k->ki_complete(k, res);
	return v.size();
}

size_t NrDeferred()
{
	std::lock_guard<std::mutex> g(dev_lock);
	return dev_pending.size();
}

/* An fd number routed to an ops table (the file itself is /dev/null). */
class RegisteredFd
{
      public:
	RegisteredFd(const struct file_operations *fops)
	{
		fd_ = open("/dev/null", O_RDWR);
		EXPECT_EQ(aio_register_file(fd_, fops, FMODE_READ | FMODE_WRITE, nullptr), 0);
	}
	~RegisteredFd()
	{
		aio_unregister_file(fd_);
		close(fd_);
	}
	int fd() const
	{
		return fd_;
	}

      private:
	int fd_;
};

/* A device whose fsync records the credentials it runs with. */
std::atomic<uid_t> fsync_fsuid{ (uid_t)-1 };

int recording_fsync(struct file *file, int datasync)
{
	fsync_fsuid = __kuid_val(current_fsuid());
	return 0;
}

const struct file_operations recording_fops = {
	.read_iter = nullptr,
	.write_iter = nullptr,
	.fsync = recording_fsync,
	.poll = nullptr,
};

void PrepRead(struct iocb *cb, int fd, void *buf, size_t len)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = IOCB_CMD_PREAD;
	cb->aio_fildes = fd;
	cb->aio_buf = (uint64_t)(uintptr_t)buf;
	cb->aio_nbytes = len;
}

TEST_F(AioTest, ReqsAvailableBatching)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&aio_null_file_operations);
	CtxInfo info;
	char buf[16];
	struct iocb cb, *cbs[1] = { &cb };
	unsigned P = nr_cpu_ids;

	uk::pin_thread_to_cpu(0);
	ASSERT_EQ(ukern_io_setup(32, &ctx), 0);
	ASSERT_EQ(uk::aio::ctx_info(ctx, &info), 0);
	unsigned n2 = std::max(32u, P * 4) * 2;
	unsigned nr = (unsigned)(((32 + 32 * (n2 + 2) + 4095) / 4096) * 128 - 1);
	EXPECT_EQ(info.nr_events, nr);
	EXPECT_EQ(info.req_batch, std::max(1u, (nr - 1) / (P * 4)));
	EXPECT_EQ(info.reqs_available_global, nr - 1);
	EXPECT_EQ(info.max_reqs, 32u);
	EXPECT_EQ(aio_nr, 32UL);

	PrepRead(&cb, dev.fd(), buf, 16);
	ASSERT_EQ(ukern_io_submit(ctx, 1, cbs), 1);
	ASSERT_EQ(uk::aio::ctx_info(ctx, &info), 0);
	/* one batch moved to CPU 0, one slot of it used */
	EXPECT_EQ(info.reqs_available_global, nr - 1 - info.req_batch);
	EXPECT_EQ(info.reqs_available_percpu, info.req_batch - 1);
	EXPECT_EQ(info.completed_events, 1u);
	EXPECT_EQ(info.tail, 1u);

	/* fill the ring: only whole batches can be taken */
	long total = 1, r;
	while ((r = ukern_io_submit(ctx, 1, cbs)) == 1)
		total++;
	EXPECT_EQ(r, -EAGAIN);
	EXPECT_GE(total, 32);
	EXPECT_EQ(total, (long)(((nr - 1) / info.req_batch) * info.req_batch));

	/* a user-space reap gives the slots back on the next submit */
	auto *ring = (aio_ring_hdr *)ctx;
	EXPECT_EQ(ring->tail, (unsigned)total);
	__atomic_store_n(&ring->head, ring->tail, __ATOMIC_RELEASE);
	EXPECT_EQ(ukern_io_submit(ctx, 1, cbs), 1);
	ASSERT_EQ(uk::aio::ctx_info(ctx, &info), 0);
	EXPECT_EQ(info.completed_events, 1u);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	EXPECT_EQ(aio_nr, 0UL);
	uk::pin_thread_to_cpu(-1);
}

/*
 * A ring of many pages (io_setup(1024): 18 of them, more than the
 * AIO_RING_PAGES inline folios): aio_complete() writes event i into the
 * folio and slot that AIO_EVENTS_OFFSET gives, which the user mapping
 * reads as io_events[i], and io_getevents() copies runs that cross page
 * boundaries and the end of the ring in order.
 */
TEST_F(AioTest, RingSpansPagesAndWraps)
{
	const int batch = 500;
	aio_context_t ctx = 0;
	RegisteredFd dev(&aio_null_file_operations);
	char buf[16];
	std::vector<struct iocb> cbs(batch);
	std::vector<struct iocb *> ptrs(batch);
	std::vector<struct io_event> ev(batch);
	unsigned long long seq = 0;

	ASSERT_EQ(ukern_io_setup(1024, &ctx), 0);
	auto *ring = (aio_ring_hdr *)ctx;
	unsigned nr = ring->nr;
	ASSERT_GT(nr, 8u * 128);
	for (int round = 0; round < 10; round++) {
		unsigned head = ring->head;

		for (int i = 0; i < batch; i++) {
			PrepRead(&cbs[i], dev.fd(), buf, sizeof(buf));
			cbs[i].aio_data = seq + i;
			ptrs[i] = &cbs[i];
		}
		ASSERT_EQ(ukern_io_submit(ctx, batch, ptrs.data()), batch);
		for (int i = 0; i < batch; i++)
			ASSERT_EQ(ring->io_events[(head + i) % nr].data, seq + i);
		ASSERT_EQ(ukern_io_getevents(ctx, batch, batch, ev.data(), nullptr), batch);
		for (int i = 0; i < batch; i++) {
			ASSERT_EQ(ev[i].data, seq + i);
			ASSERT_EQ(ev[i].obj, (uint64_t)(uintptr_t)&cbs[i]);
		}
		seq += batch;
	}
	EXPECT_EQ(ring->head, (unsigned)(seq % nr));
	EXPECT_EQ(ring->tail, ring->head);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

/*
 * ctx_info() is one snapshot while another thread completes: the reaper can
 * hold the last event before aio_complete() has moved completed_events back
 * into reqs_available, so the counters are read under completion_lock. On
 * an idle context they add up to nr_events - 1 every time (and the tsan
 * preset sees no race with the completer's per-CPU update).
 */
TEST_F(AioTest, CtxInfoIsOneSnapshotWhileAnotherThreadCompletes)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&deferred_fops);
	std::atomic<bool> stop{ false };
	char buf[16];
	struct iocb cb, *cbs[1] = { &cb };

	ASSERT_EQ(ukern_io_setup(8, &ctx), 0);
	std::thread completer([&] {
		while (!stop.load())
			if (CompleteDeferred(16) == 0)
				std::this_thread::yield();
	});
	PrepRead(&cb, dev.fd(), buf, 16);
	for (int i = 0; i < 2000; i++) {
		struct io_event ev;
		CtxInfo info;

		if (ukern_io_submit(ctx, 1, cbs) != 1 ||
		    ukern_io_getevents(ctx, 1, 1, &ev, nullptr) != 1 ||
		    uk::aio::ctx_info(ctx, &info) != 0) {
			ADD_FAILURE() << "a call failed after " << i << " reads";
			break;
		}
		unsigned avail = info.reqs_available_global + info.reqs_available_percpu +
				 info.completed_events;
		if (avail != info.nr_events - 1) {
			ADD_FAILURE() << "after " << i << " reads: " << avail
				      << " requests available, not " << info.nr_events - 1;
			break;
		}
	}
	stop = true;
	completer.join();
	CompleteDeferred(0);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

TEST_F(AioTest, TableGrowsByFourAndReusesSlots)
{
	std::vector<aio_context_t> c(17, 0);

	uk::aio::reset_mm_for_test();
	EXPECT_EQ(uk::aio::table_nr(), 0u);
	for (int i = 0; i < 17; i++) {
		ASSERT_EQ(ukern_io_setup(1, &c[i]), 0);
		EXPECT_EQ(((aio_ring_hdr *)c[i])->id, (unsigned)i);
		if (i == 0) {
			EXPECT_EQ(uk::aio::table_nr(), 4u);
		}
		if (i == 4) {
			EXPECT_EQ(uk::aio::table_nr(), 16u);
		}
	}
	EXPECT_EQ(uk::aio::table_nr(), 64u);
	EXPECT_EQ(ukern_io_destroy(c[5]), 0);
	EXPECT_EQ(ukern_io_destroy(c[2]), 0);
	aio_context_t d = 0, e = 0;
	ASSERT_EQ(ukern_io_setup(1, &d), 0);
	ASSERT_EQ(ukern_io_setup(1, &e), 0);
	EXPECT_EQ(((aio_ring_hdr *)d)->id, 2u);
	EXPECT_EQ(((aio_ring_hdr *)e)->id, 5u);
	c[2] = d;
	c[5] = e;
	for (auto x : c)
		EXPECT_EQ(ukern_io_destroy(x), 0);
	uk::aio::reset_mm_for_test(); /* exit_aio: drops the table */
	EXPECT_EQ(uk::aio::table_nr(), 0u);
}

TEST_F(AioTest, AllModesWork)
{
	using namespace uk::aio;
	RegisteredFd dev(&aio_null_file_operations);

	for (LookupMode lm : { LookupMode::kTable, LookupMode::kList, LookupMode::kRadix })
		for (ReqsMode rm : { ReqsMode::kPercpu, ReqsMode::kLocked })
			for (RefMode fm : { RefMode::kPercpu, RefMode::kAtomic })
				for (SubmitMode sm :
				     { SubmitMode::kDirect, SubmitMode::kCtxLock }) {
					aio_lookup_mode = lm;
					aio_reqs_mode = rm;
					aio_ref_mode = fm;
					aio_submit_mode = sm;
					aio_context_t c[3] = {};
					char buf[8];
					struct iocb cb[32], *cbs[32];
					struct io_event ev[32];

					for (auto &x : c)
						ASSERT_EQ(ukern_io_setup(16, &x), 0);
					for (int i = 0; i < 32; i++) {
						PrepRead(&cb[i], dev.fd(), buf, 8);
						cbs[i] = &cb[i];
					}
					for (auto x : c) {
						ASSERT_EQ(ukern_io_submit(x, 32, cbs), 32);
						ASSERT_EQ(
							ukern_io_getevents(x, 32, 32, ev, nullptr),
							32);
						for (auto &e : ev)
							EXPECT_EQ(e.res, 8);
					}
					EXPECT_EQ(ukern_io_submit(~0UL, 1, cbs), -EINVAL);
					for (auto x : c)
						EXPECT_EQ(ukern_io_destroy(x), 0);
					for (auto x : c)
						EXPECT_EQ(ukern_io_submit(x, 0, nullptr), -EINVAL);
				}
}

TEST_F(AioTest, DestroyWaitsForInflight)
{
	RegisteredFd dev(&deferred_fops);
	aio_context_t ctx = 0;
	char buf[8];
	struct iocb cb[4], *cbs[4];
	std::atomic<bool> completed{ false };

	ASSERT_EQ(ukern_io_setup(8, &ctx), 0);
	for (int i = 0; i < 4; i++) {
		PrepRead(&cb[i], dev.fd(), buf, 8);
		cbs[i] = &cb[i];
	}
	ASSERT_EQ(ukern_io_submit(ctx, 4, cbs), 4);
	ASSERT_EQ(NrDeferred(), 4u);

	/* Complete only once the context is dead, i.e. io_destroy is running. */
	std::thread completer([&] {
		CtxInfo info;
		uk::testing::WaitFor([&] { return uk::aio::ctx_info(ctx, &info) != 0; });
		completed = true;
		CompleteDeferred(8);
	});
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	EXPECT_TRUE(completed.load());
	completer.join();
	EXPECT_EQ(ukern_io_destroy(ctx), -EINVAL);
}

TEST_F(AioTest, WaiterWokenWithMinNr)
{
	RegisteredFd dev(&deferred_fops);
	aio_context_t ctx = 0;
	char buf[8];
	struct iocb cb[3], *cbs[3];
	long got = 0;

	ASSERT_EQ(ukern_io_setup(8, &ctx), 0);
	for (int i = 0; i < 3; i++) {
		PrepRead(&cb[i], dev.fd(), buf, 8);
		cbs[i] = &cb[i];
	}
	ASSERT_EQ(ukern_io_submit(ctx, 3, cbs), 3);
	std::thread waiter([&] {
		struct io_event ev[3];
		got = ukern_io_getevents(ctx, 3, 3, ev, nullptr);
	});
	std::vector<struct kiocb *> v;
	{
		std::lock_guard<std::mutex> g(dev_lock);
		v.swap(dev_pending);
	}
	for (struct kiocb *k : v)
		k->ki_complete(k, 8);
	waiter.join();
	EXPECT_EQ(got, 3);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

TEST_F(AioTest, TimeoutsAndOddTimespecs)
{
	aio_context_t ctx = 0;
	struct io_event ev[1];

	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);
	struct timespec t20 = { 0, 20000000 }, t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(ukern_io_getevents(ctx, 1, 1, ev, &t20), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
	EXPECT_GE(ns, 20000000L);
	/* nsec >= 1e9 is added, not rejected */
	struct timespec odd = { 0, 1000000000L + 1000000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(ukern_io_getevents(ctx, 0, 1, ev, &odd), 0); /* min_nr 0: no wait */
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

void NopHandler(int) {}

TEST_F(AioTest, SignalsInterruptWaits)
{
	aio_context_t ctx = 0;
	struct sigaction sa = {}, old;

	sa.sa_handler = NopHandler;
	sigaction(SIGUSR1, &sa, &old);
	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);

	for (int variant = 0; variant < 3; variant++) {
		std::atomic<long> ret{ 1 };
		std::atomic<bool> started{ false };
		std::thread t([&] {
			sigset_t block, unblock;
			struct io_event ev[1];
			struct timespec neg = { -1, 0 };

			sigemptyset(&block);
			sigaddset(&block, SIGUSR1);
			if (variant == 2)
				pthread_sigmask(SIG_BLOCK, &block, nullptr);
			sigemptyset(&unblock);
			struct __aio_sigset s = { &unblock, 8 };
			started = true;
			if (variant == 0)
				ret = ukern_io_getevents(ctx, 1, 1, ev, nullptr);
			else if (variant == 1)
				ret = ukern_io_getevents(ctx, 1, 1, ev, &neg); /* infinite */
			else
				ret = ukern_io_pgetevents(ctx, 1, 1, ev, nullptr, &s);
		});
		while (!started)
			std::this_thread::yield();
		for (int i = 0; i < 1000000 && ret == 1; i++) {
			pthread_kill(t.native_handle(), SIGUSR1);
			std::this_thread::yield();
		}
		t.join();
		EXPECT_EQ(ret.load(), -EINTR) << variant;
	}
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	sigaction(SIGUSR1, &old, nullptr);
}

TEST_F(AioTest, BlockedGeteventsSeesDestroy)
{
	aio_context_t ctx = 0;
	std::atomic<long> ret{ 1 };
	std::atomic<bool> started{ false };

	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);
	std::thread t([&] {
		struct io_event ev[1];
		started = true;
		ret = ukern_io_getevents(ctx, 1, 1, ev, nullptr);
	});
	while (!started)
		std::this_thread::yield();
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	t.join();
	/* woken by kill_ioctx, or never got in: -EINVAL either way */
	EXPECT_EQ(ret.load(), -EINVAL);
}

TEST_F(AioTest, EventfdSignalledAfterRing)
{
	RegisteredFd dev(&aio_null_file_operations);
	aio_context_t ctx = 0;
	int efd = eventfd(0, 0);
	char buf[8];
	struct iocb cb[5], *cbs[5];

	ASSERT_EQ(ukern_io_setup(8, &ctx), 0);
	for (int i = 0; i < 5; i++) {
		PrepRead(&cb[i], dev.fd(), buf, 8);
		cb[i].aio_flags = IOCB_FLAG_RESFD;
		cb[i].aio_resfd = efd;
		cbs[i] = &cb[i];
	}
	ASSERT_EQ(ukern_io_submit(ctx, 5, cbs), 5);
	uint64_t n = 0;
	ASSERT_EQ(read(efd, &n, 8), 8);
	EXPECT_EQ(n, 5u);
	struct io_event ev[5];
	struct timespec zero = { 0, 0 };
	EXPECT_EQ(ukern_io_getevents(ctx, 0, 5, ev, &zero), 5);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	close(efd);
}

TEST_F(AioTest, EfaultNeverCrashes)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&aio_null_file_operations);

	ASSERT_EQ(ukern_io_setup(4, &ctx), 0);
	/* unmapped but user-range pointers */
	void *hole = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_EQ(ukern_io_submit(ctx, 1, (struct iocb **)hole), -EFAULT);
	struct iocb *p[1] = { (struct iocb *)hole };
	EXPECT_EQ(ukern_io_submit(ctx, 1, p), -EFAULT);
	EXPECT_EQ(ukern_io_setup(1, (aio_context_t *)hole), -EFAULT);
	EXPECT_EQ(ukern_io_getevents((aio_context_t)hole, 0, 1, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ukern_io_cancel(ctx, (struct iocb *)hole, nullptr), -EFAULT);
	EXPECT_EQ(ukern_io_getevents(ctx, 0, 1, nullptr, (struct timespec *)hole), -EFAULT);
	munmap(hole, 4096);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

/*
 * The program may hand any address for a user structure: a misaligned or wild
 * one is read and written through like any other, or faults, and trips no
 * sanitizer check: aio.cc and aio_v26.cc, which take &iocb->aio_key and
 * &ring->id as the kernel does, are built without UBSan's alignment, null and
 * pointer-overflow checks (aio/CMakeLists.txt), as the kernel is on x86.
 */
TEST_F(AioTest, MisalignedAndWildUserPointers)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&aio_null_file_operations);
	alignas(8) unsigned char raw[sizeof(struct iocb) + 8];
	struct iocb cb, *misaligned = (struct iocb *)(raw + 1), *p[1] = { misaligned };
	struct io_event ev[1];
	uint32_t key;
	char buf[8];

	ASSERT_EQ(ukern_io_setup(4, &ctx), 0);
	EXPECT_EQ(ukern_io_getevents(~0UL, 0, 1, ev, nullptr), -EINVAL);
	EXPECT_EQ(ukern_io_getevents(ctx + 1, 0, 1, ev, nullptr), -EINVAL);
	EXPECT_EQ(ukern_io_submit(ctx + 3, 1, p), -EINVAL);
	EXPECT_EQ(ukern_io_cancel(ctx, (struct iocb *)~0UL, nullptr), -EFAULT);
	EXPECT_EQ(ukern_io_cancel(ctx, (struct iocb *)1, nullptr), -EFAULT);

	/* A misaligned iocb: read, its aio_key written, its event delivered. */
	PrepRead(&cb, dev.fd(), buf, sizeof(buf));
	cb.aio_key = 0x5a5a5a5a;
	memcpy(misaligned, &cb, sizeof(cb));
	ASSERT_EQ(ukern_io_submit(ctx, 1, p), 1);
	memcpy(&key, raw + 1 + offsetof(struct iocb, aio_key), sizeof(key));
	EXPECT_EQ(key, 0u); /* KIOCB_KEY */
	ASSERT_EQ(ukern_io_getevents(ctx, 1, 1, ev, nullptr), 1);
	EXPECT_EQ(ev[0].obj, (uint64_t)(uintptr_t)misaligned);
	EXPECT_EQ(ev[0].res, (int64_t)sizeof(buf));
	/* not cancellable, and reached through a misaligned pointer */
	EXPECT_EQ(ukern_io_cancel(ctx, misaligned, nullptr), -EINVAL);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

/*
 * Rings are mapped at fixed places in a reservation. One the program moved
 * leaves its place to the program: a later ring must not be mapped over
 * what the program put there.
 */
TEST_F(AioTest, RingPlaceTheProgramTookIsNotReused)
{
	aio_context_t ctx = 0;

	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);
	const size_t size = 4096;
	void *dst = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(dst, MAP_FAILED);
	void *moved = mremap((void *)ctx, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	ASSERT_EQ(moved, dst);
	/* The program's own page where the ring was. */
	char *mine = (char *)mmap((void *)ctx, size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ((aio_context_t)mine, ctx);
	memset(mine, 0x5a, size);

	/* The moved ring is the context now; its old place is not ours. */
	EXPECT_EQ(ukern_io_destroy((aio_context_t)moved), 0);
	std::vector<aio_context_t> more(8);
	for (auto &c : more) {
		ASSERT_EQ(ukern_io_setup(1, &c), 0);
		EXPECT_NE(c, ctx);
	}
	for (size_t i = 0; i < size; i++)
		ASSERT_EQ(mine[i], 0x5a) << "a ring was mapped over the program's page";
	for (auto c : more)
		EXPECT_EQ(ukern_io_destroy(c), 0);
	munmap(mine, size);
}

/*
 * exit() runs exit_aio(), as the kernel's exit_mm() does: a request still
 * in flight is cancelled and completes (its eventfd is signalled) before the
 * process is gone. _exit() skips it.
 */
TEST_F(AioTest, ExitKillsContextsAndCompletesRequests)
{
#ifdef UKERN_TSAN
	GTEST_SKIP() << "ThreadSanitizer stops a fork child that starts threads";
#endif
	for (bool clean_exit : { true, false }) {
		int efd = eventfd(0, EFD_NONBLOCK);
		int pfd[2];

		ASSERT_GE(efd, 0);
		ASSERT_EQ(pipe(pfd), 0);
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			aio_context_t ctx = 0;
			struct iocb cb = {}, *cbs[1] = { &cb };

			if (ukern_io_setup(4, &ctx))
				_exit(2);
			/* A poll that never fires: the pipe stays empty. */
			cb.aio_lio_opcode = IOCB_CMD_POLL;
			cb.aio_fildes = pfd[0];
			cb.aio_buf = POLLIN;
			cb.aio_flags = IOCB_FLAG_RESFD;
			cb.aio_resfd = efd;
			if (ukern_io_submit(ctx, 1, cbs) != 1)
				_exit(3);
			if (clean_exit)
				exit(0);
			_exit(0);
		}
		int status = 0;
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
#ifdef UKERN_SANITIZER
		/* LeakSanitizer's check at exit() may fail the child (it runs
		 * after exit_aio(), before the RCU frees): only ours count. */
		ASSERT_NE(WEXITSTATUS(status), 2);
		ASSERT_NE(WEXITSTATUS(status), 3);
#else
		ASSERT_EQ(WEXITSTATUS(status), 0);
#endif
		uint64_t v = 0;
		ssize_t n = read(efd, &v, sizeof(v));
		if (clean_exit)
			EXPECT_TRUE(n == sizeof(v) && v == 1) << "exit() left a request in flight";
		else
			EXPECT_EQ(n, -1) << "_exit() is not expected to run exit_aio()";
		close(efd);
		close(pfd[0]);
		close(pfd[1]);
	}
}

/*
 * Several submitters and one reaper on one context, in today's mode and in
 * both "before" models of seed 2: every event arrives once, with its result.
 */
TEST_F(AioTest, SharedContextStress)
{
	using namespace uk::aio;
	RegisteredFd dev(&aio_null_file_operations);
	const int nsub = (int)uk::testing::StressThreads();
	const long per = 2000;
	const struct {
		const char *name;
		ReqsMode reqs;
		RefMode ref;
		SubmitMode submit;
	} modes[] = {
		{ "after", ReqsMode::kPercpu, RefMode::kPercpu, SubmitMode::kDirect },
		{ "before", ReqsMode::kLocked, RefMode::kAtomic, SubmitMode::kDirect },
		{ "before_3_9", ReqsMode::kLocked, RefMode::kAtomic, SubmitMode::kCtxLock },
	};

	for (const auto &m : modes) {
		SCOPED_TRACE(m.name);
		aio_reqs_mode = m.reqs;
		aio_ref_mode = m.ref;
		aio_submit_mode = m.submit;

		aio_context_t ctx = 0;
		std::atomic<long> reaped{ 0 };
		std::vector<long> seen(nsub, 0);

		ASSERT_EQ(ukern_io_setup(64, &ctx), 0);
		std::vector<std::thread> subs;
		for (int s = 0; s < nsub; s++)
			subs.emplace_back([&, s] {
				char buf[8];
				struct iocb cb, *cbs[1] = { &cb };

				for (long i = 0; i < per;) {
					PrepRead(&cb, dev.fd(), buf, 8);
					cb.aio_data = s;
					long r = ukern_io_submit(ctx, 1, cbs);
					if (r == 1) {
						i++;
					} else {
						ASSERT_EQ(r, -EAGAIN);
					}
					if (r != 1)
						std::this_thread::yield();
				}
			});
		std::thread reaper([&] {
			struct io_event ev[32];
			struct timespec ts = { 1, 0 };
			while (reaped < nsub * per) {
				long r = ukern_io_getevents(ctx, 1, 32, ev, &ts);
				ASSERT_GE(r, 0);
				for (long i = 0; i < r; i++) {
					ASSERT_EQ(ev[i].res, 8);
					ASSERT_LT(ev[i].data, (u64)nsub);
					seen[ev[i].data]++;
				}
				reaped += r;
			}
		});
		for (auto &t : subs)
			t.join();
		reaper.join();
		EXPECT_EQ(reaped.load(), nsub * per);
		for (int s = 0; s < nsub; s++)
			EXPECT_EQ(seen[s], per);
		EXPECT_EQ(ukern_io_destroy(ctx), 0);
	}
}

/* A device whose write_iter records the mode of the file's inode. */
std::atomic<int> write_inode_mode{ -1 };

ssize_t inode_recording_write(struct kiocb *iocb, struct iov_iter *from)
{
	write_inode_mode = file_inode(iocb->ki_filp)->i_mode;
	return (ssize_t)iov_iter_count(from);
}

const struct file_operations inode_recording_fops = {
	.read_iter = nullptr,
	.write_iter = inode_recording_write,
	.fsync = nullptr,
	.poll = nullptr,
};

/*
 * No file here is a regular file of a superblock: a write sees the
 * anonymous inode, so aio_write() takes no freeze protection and
 * aio_complete_rw() ends none, and the write completes as any other.
 */
TEST_F(AioTest, WritesSeeAnAnonymousInode)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&inode_recording_fops);
	char buf[512] = {};
	struct iocb cb = {}, *cbs[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { 10, 0 };

	ASSERT_EQ(ukern_io_setup(4, &ctx), 0);
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = dev.fd();
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = sizeof(buf);
	ASSERT_EQ(ukern_io_submit(ctx, 1, cbs), 1);
	ASSERT_EQ(ukern_io_getevents(ctx, 1, 1, &ev, &ts), 1);
	EXPECT_EQ(ev.res, (long)sizeof(buf));
	EXPECT_EQ(write_inode_mode.load(), (int)(S_IRUSR | S_IWUSR));
	EXPECT_FALSE(S_ISREG((umode_t)write_inode_mode.load()));
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

/*
 * FSYNC runs in a work item on the submitter's behalf: with the credentials
 * the submitter had at io_submit(), whatever the worker's own are.
 */
TEST_F(AioTest, FsyncRunsWithTheSubmittersCredentials)
{
	aio_context_t ctx = 0;
	RegisteredFd dev(&recording_fops);
	struct iocb cb = {}, *cbs[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { 10, 0 };
	long live = uk::nr_creds();

	ASSERT_EQ(ukern_io_setup(4, &ctx), 0);
	struct cred *c = prepare_creds();
	ASSERT_NE(c, nullptr);
	c->fsuid.val = 4242;
	const struct cred *old = override_creds(c);
	cb.aio_lio_opcode = IOCB_CMD_FSYNC;
	cb.aio_fildes = dev.fd();
	ASSERT_EQ(ukern_io_submit(ctx, 1, cbs), 1);
	revert_creds(old);
	put_cred(c);
	ASSERT_EQ(ukern_io_getevents(ctx, 1, 1, &ev, &ts), 1);
	EXPECT_EQ(ev.res, 0);
	EXPECT_EQ(fsync_fsuid.load(), 4242u);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	/* The work dropped the request's reference before completing it. */
	EXPECT_EQ(uk::nr_creds(), live);
}

} // namespace
