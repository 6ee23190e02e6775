// SPDX-License-Identifier: GPL-2.0-only
// The retry-based 2.6 AIO engine (aio/aio_v26.cc): the contract of each
// retry-engine function, the three states of the 2004 context-switch patch,
// the stall and the use-after-free it left, cancel and io_destroy with
// retries in flight.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/pipe_fs_i.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/shim/clock.h>

#include "testmain.h"

namespace
{

namespace a26 = uk::aio26;

struct RingHeader {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

// The engine's switches, restored after each test; leak checks at the end.
class AioV26Test : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		saved_engine_ = a26::aio_engine;
		saved_mode_ = a26::aio_retry_mode;
		saved_stall_ = a26::aio_stall_fix;
		saved_cancel_ = a26::aio_put_cancel;
		a26::aio_engine = a26::Engine::kV26;
		a26::aio_retry_mode = a26::RetryMode::kRunning;
		a26::aio_stall_fix = true;
		a26::aio_put_cancel = true;
	}
	void TearDown() override
	{
		for (unsigned long c : ctxs_)
			ukern_io_destroy(c);
		for (int fd : fds_)
			a26::sys_close(fd);
		a26::flush_aio_wq();
		EXPECT_EQ(a26::nr_live_reqs(), 0);
		EXPECT_EQ(a26::nr_live_ctx(), 0);
		EXPECT_EQ(a26::nr_live_pipes(), 0);
		a26::aio_engine = saved_engine_;
		a26::aio_retry_mode = saved_mode_;
		a26::aio_stall_fix = saved_stall_;
		a26::aio_put_cancel = saved_cancel_;
	}

	unsigned long NewCtx(unsigned nr)
	{
		unsigned long ctx = 0;
		EXPECT_EQ(ukern_io_setup(nr, &ctx), 0);
		ctxs_.push_back(ctx);
		return ctx;
	}
	void Destroy(unsigned long ctx)
	{
		EXPECT_EQ(ukern_io_destroy(ctx), 0);
		for (auto &c : ctxs_)
			if (c == ctx)
				c = 0;
	}
	void Pipe(int fds[2], int flags = 0)
	{
		ASSERT_EQ(a26::do_pipe2(fds, flags), 0);
		fds_.push_back(fds[0]);
		fds_.push_back(fds[1]);
	}
	void Close(int fd)
	{
		EXPECT_EQ(a26::sys_close(fd), 0);
		for (auto &f : fds_)
			if (f == fd)
				f = -1;
	}
	static void PrepRead(struct iocb *cb, int fd, void *buf, size_t n, uint64_t data = 0)
	{
		memset(cb, 0, sizeof(*cb));
		cb->aio_lio_opcode = IOCB_CMD_PREAD;
		cb->aio_fildes = (uint32_t)fd;
		cb->aio_buf = (uint64_t)(uintptr_t)buf;
		cb->aio_nbytes = n;
		cb->aio_data = data;
	}
	static long Submit(unsigned long ctx, struct iocb *cb)
	{
		struct iocb *cbs[1] = { cb };
		return ukern_io_submit(ctx, 1, cbs);
	}
	// io_getevents for one event with a zero timeout: never sleeps, but
	// (after the patch) runs the run list when no event is ready.
	static long Poll(unsigned long ctx, struct io_event *ev)
	{
		struct timespec ts = { 0, 0 };
		return ukern_io_getevents(ctx, 1, 1, ev, &ts);
	}
	static long Wait(unsigned long ctx, struct io_event *ev)
	{
		struct timespec ts = { 10, 0 };
		return ukern_io_getevents(ctx, 1, 1, ev, &ts);
	}

	std::vector<unsigned long> ctxs_;
	std::vector<int> fds_;
	a26::Engine saved_engine_;
	a26::RetryMode saved_mode_;
	bool saved_stall_, saved_cancel_;
};

// ---- a file whose aio_read is scripted by the test ----
struct Script {
	std::atomic<int> calls{ 0 };
	std::atomic<bool> kick_self{ false };  // kick_iocb() from inside the retry
	std::atomic<int> retries_left{ 0 };    // return -EIOCBRETRY this many times
	std::atomic<bool> queue_wait{ false }; // ... with ki_wait on `wq`
	wait_queue_head_t wq;
	std::atomic<bool> io_wait_was_ki_wait{ true };
	std::atomic<bool> was_async{ true };
	std::atomic<bool> ran_on_worker{ false };
	std::atomic<struct mm_struct *> mm{ nullptr };
	std::atomic<a26::kiocb *> iocb{ nullptr };
	std::atomic<bool> retried_flag{ false };
};
Script *script;

ssize_t ScriptRead(a26::kiocb *iocb, char *buf, size_t count, loff_t)
{
	Script *s = script;
	s->calls++;
	s->iocb = iocb;
	if (current->io_wait != &iocb->ki_wait)
		s->io_wait_was_ki_wait = false;
	if (a26::is_sync_wait(current->io_wait))
		s->was_async = false;
	if (current_work()) {
		s->ran_on_worker = true;
		s->mm = a26::current_active_mm();
	}
	if (a26::is_retried_kiocb(iocb))
		s->retried_flag = true;
	if (s->retries_left.load() > 0) {
		s->retries_left--;
		if (s->queue_wait)
			add_wait_queue(&s->wq, current->io_wait);
		if (s->kick_self)
			a26::kick_iocb(iocb);
		return -EIOCBRETRY;
	}
	memset(buf, 'x', count);
	return (ssize_t)count;
}

const a26::file_operations script_fops = {
	.aio_read = ScriptRead,
	.aio_write = nullptr,
	.aio_fsync = nullptr,
	.read = nullptr,
	.write = nullptr,
	.release = nullptr,
};

// A descriptor served by the script (a fifo: completes at the first bytes).
int ScriptFd()
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	auto *f = static_cast<a26::file *>(kzalloc(sizeof(a26::file), GFP_KERNEL));
	f->f_op = &script_fops;
	f->f_mode = 1;
	f->f_fifo = true;
	f->f_fd = fd;
	atomic_long_set(&f->f_count, 1);
	EXPECT_EQ(a26::fd_install(fd, f), 0);
	return fd;
}

class AioV26ScriptTest : public AioV26Test
{
      protected:
	void SetUp() override
	{
		AioV26Test::SetUp();
		script = new Script();
		init_waitqueue_head(&script->wq);
		fd_ = ScriptFd();
		fds_.push_back(fd_);
		// No worker starts by itself: only the test moves the clock.
		uk::clock_use_virtual();
	}
	void TearDown() override
	{
		AioV26Test::TearDown();
		uk::clock_use_host();
		delete script;
		script = nullptr;
	}
	// Submits a read whose first run parks ki_wait on script->wq.
	long SubmitParked(unsigned long ctx, struct iocb *cb, char *buf, size_t n)
	{
		script->retries_left = 1;
		script->queue_wait = true;
		PrepRead(cb, fd_, buf, n);
		return Submit(ctx, cb);
	}
	int fd_ = -1;
};

// ---- io_setup / io_destroy ----

TEST_F(AioV26Test, SetupMakesARingWithTheAbiHeader)
{
	unsigned long ctx = NewCtx(32);
	ASSERT_NE(ctx, 0u);
	auto *ring = reinterpret_cast<RingHeader *>(ctx);
	EXPECT_EQ(ring->magic, 0xa10a10a1u);
	EXPECT_GE(ring->nr, 34u);
	EXPECT_EQ(ring->header_length, 32u);
	EXPECT_EQ(ring->head, ring->tail);
	EXPECT_TRUE(a26::owns(ctx));
	Destroy(ctx);
	EXPECT_FALSE(a26::owns(ctx));
	EXPECT_EQ(ukern_io_destroy(ctx), -EINVAL);
}

TEST_F(AioV26Test, SetupErrors)
{
	unsigned long ctx = 1;
	EXPECT_EQ(ukern_io_setup(8, &ctx), -EINVAL);
	ctx = 0;
	EXPECT_EQ(ukern_io_setup(0, &ctx), -EINVAL);
	EXPECT_EQ(ukern_io_setup(0x7fffffff, &ctx), -EINVAL);
	EXPECT_EQ(ukern_io_setup(8, reinterpret_cast<unsigned long *>(8)), -EFAULT);
	EXPECT_EQ(ctx, 0u);
}

TEST_F(AioV26Test, EngineIsChosenAtSetup)
{
	unsigned long v26 = NewCtx(4);
	a26::aio_engine = a26::Engine::kCurrent;
	unsigned long cur = 0;
	ASSERT_EQ(ukern_io_setup(4, &cur), 0);
	EXPECT_TRUE(a26::owns(v26));
	EXPECT_FALSE(a26::owns(cur));
	// The same program works on both: a read of /dev/zero on each.
	int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(zfd, 0);
	for (unsigned long c : { v26, cur }) {
		char buf[64];
		struct iocb cb;
		struct io_event ev;
		PrepRead(&cb, zfd, buf, sizeof(buf), 7);
		ASSERT_EQ(Submit(c, &cb), 1);
		ASSERT_EQ(Wait(c, &ev), 1);
		EXPECT_EQ(ev.res, 64);
		EXPECT_EQ(ev.data, 7u);
	}
	close(zfd);
	EXPECT_EQ(ukern_io_destroy(cur), 0);
}

TEST_F(AioV26Test, BadArgumentsGetTheErrno)
{
	unsigned long ctx = NewCtx(4);
	struct io_event ev;
	struct iocb cb;
	char buf[8];
	EXPECT_EQ(ukern_io_submit(ctx, -1, nullptr), -EINVAL);
	EXPECT_EQ(ukern_io_getevents(ctx, 2, 1, &ev, nullptr), -EINVAL);
	PrepRead(&cb, 1 << 20, buf, sizeof(buf));
	EXPECT_EQ(Submit(ctx, &cb), -EBADF);
	int fds[2];
	Pipe(fds);
	PrepRead(&cb, fds[1], buf, sizeof(buf)); // the write end
	EXPECT_EQ(Submit(ctx, &cb), -EBADF);
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	cb.aio_lio_opcode = 99;
	EXPECT_EQ(Submit(ctx, &cb), -EINVAL);
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	cb.aio_reserved2 = 1;
	EXPECT_EQ(Submit(ctx, &cb), -EINVAL);
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	cb.aio_lio_opcode = IOCB_CMD_FSYNC;
	EXPECT_EQ(Submit(ctx, &cb), -EINVAL); // pipes have no aio_fsync
	struct iocb *bad[1] = { reinterpret_cast<struct iocb *>(16) };
	EXPECT_EQ(ukern_io_submit(ctx, 1, bad), -EFAULT);
	EXPECT_EQ(a26::nr_live_reqs(), 0);
}

// ---- retries on host files ----

TEST_F(AioV26Test, HostFileReadRetriesUntilEof)
{
	char path[] = "/tmp/ukern-aio-v26-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);
	std::string data(10000, 'q');
	ASSERT_EQ(write(fd, data.data(), data.size()), (ssize_t)data.size());
	unsigned long ctx = NewCtx(4);
	std::vector<char> buf(20000);
	struct iocb cb;
	struct io_event ev;
	PrepRead(&cb, fd, buf.data(), buf.size());
	unsigned long before = a26::stats().retries;
	ASSERT_EQ(Submit(ctx, &cb), 1);
	// A short transfer retries at once (nothing to wait for) until EOF.
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 10000);
	EXPECT_EQ(ev.obj, (uint64_t)(uintptr_t)&cb);
	EXPECT_GE(a26::stats().retries - before, 2u);
	cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
	ASSERT_EQ(Submit(ctx, &cb), 1);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 0);
	close(fd);
}

// ---- the retry engine's functions ----

TEST_F(AioV26ScriptTest, RetryRunsWithIoWaitSetToKiWait)
{
	unsigned long ctx = NewCtx(4);
	char buf[16];
	struct iocb cb;
	struct io_event ev;
	PrepRead(&cb, fd_, buf, sizeof(buf));
	EXPECT_EQ(current->io_wait, nullptr);
	ASSERT_EQ(Submit(ctx, &cb), 1);
	EXPECT_EQ(current->io_wait, nullptr);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 16);
	EXPECT_TRUE(script->io_wait_was_ki_wait);
	EXPECT_TRUE(script->was_async);
	EXPECT_TRUE(a26::is_sync_wait(nullptr));
}

// A kick that arrives while the retry runs is remembered (KICKED) and
// requeues the request when the retry returns, instead of running it twice
// at once; is_retried_kiocb() is true from the third run.
TEST_F(AioV26ScriptTest, KickDuringRetryRequeuesAfterIt)
{
	unsigned long ctx = NewCtx(4);
	script->kick_self = true;
	script->retries_left = 2;
	char buf[16];
	struct iocb cb;
	struct io_event ev;
	PrepRead(&cb, fd_, buf, sizeof(buf));
	ASSERT_EQ(Submit(ctx, &cb), 1); // after: io_submit drains the run list
	EXPECT_EQ(script->calls, 3);
	EXPECT_TRUE(script->retried_flag);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 16);
}

// Nothing queued on ki_wait and -EIOCBRETRY: the request kicks itself.
TEST_F(AioV26ScriptTest, RetryWithNothingQueuedRunsAgain)
{
	unsigned long ctx = NewCtx(4);
	script->retries_left = 3;
	char buf[8];
	struct iocb cb;
	struct io_event ev;
	PrepRead(&cb, fd_, buf, sizeof(buf));
	ASSERT_EQ(Submit(ctx, &cb), 1);
	EXPECT_EQ(script->calls, 4);
	ASSERT_EQ(Poll(ctx, &ev), 1);
}

// aio_wake_function takes ki_wait off the queue and kicks; a second kick
// before the request runs is absorbed (one queueing).
TEST_F(AioV26ScriptTest, WakeKicksOnceAndQueuesOnce)
{
	unsigned long ctx = NewCtx(4);
	char buf[8];
	struct iocb cb;
	struct io_event ev;
	ASSERT_EQ(SubmitParked(ctx, &cb, buf, sizeof(buf)), 1);
	EXPECT_EQ(Poll(ctx, &ev), 0);
	a26::kiocb *iocb = script->iocb;
	EXPECT_TRUE(waitqueue_active(&script->wq));
	wake_up(&script->wq);
	EXPECT_FALSE(waitqueue_active(&script->wq));
	EXPECT_TRUE(test_bit(KIF_KICKED, &iocb->ki_flags));
	a26::kick_iocb(iocb);
	EXPECT_EQ(iocb->ki_kicked, 2);
	EXPECT_EQ(iocb->ki_queued, 1);
	a26::kioctx *k = a26::lookup_ioctx(ctx);
	ASSERT_NE(k, nullptr);
	EXPECT_TRUE(delayed_work_pending(&k->wq));
	// io_getevents finds no event, runs the list, finds one.
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 8);
	a26::put_ioctx(k);
	Destroy(ctx);
}

// __queue_kicked_iocb queues once; null links (a retry in flight) never.
TEST_F(AioV26Test, QueueKickedIocbQueuesOnce)
{
	unsigned long ctx = NewCtx(4);
	a26::kioctx *k = a26::lookup_ioctx(ctx);
	ASSERT_NE(k, nullptr);
	a26::kiocb iocb = {};
	iocb.ki_ctx = k;
	INIT_LIST_HEAD(&iocb.ki_run_list);
	spin_lock_irq(&k->ctx_lock);
	EXPECT_EQ(a26::__queue_kicked_iocb(&iocb), 1);
	EXPECT_EQ(a26::__queue_kicked_iocb(&iocb), 0);
	EXPECT_EQ(k->run_list.next, &iocb.ki_run_list);
	list_del(&iocb.ki_run_list);
	iocb.ki_run_list.next = iocb.ki_run_list.prev = nullptr;
	EXPECT_EQ(a26::__queue_kicked_iocb(&iocb), 0);
	EXPECT_TRUE(list_empty(&k->run_list));
	spin_unlock_irq(&k->ctx_lock);
	a26::put_ioctx(k);
}

// With the ctx->running guard, a second runner leaves the list alone.
TEST_F(AioV26ScriptTest, RunningGuardSkipsASecondRunner)
{
	unsigned long ctx = NewCtx(4);
	char buf[8];
	struct iocb cb;
	struct io_event ev;
	ASSERT_EQ(SubmitParked(ctx, &cb, buf, sizeof(buf)), 1);
	wake_up(&script->wq);
	a26::kioctx *k = a26::lookup_ioctx(ctx);
	unsigned long skips = a26::stats().running_skips;
	spin_lock_irq(&k->ctx_lock);
	k->running = 1;
	EXPECT_EQ(a26::__aio_run_iocbs(k), 0);
	EXPECT_FALSE(list_empty(&k->run_list));
	k->running = 0;
	spin_unlock_irq(&k->ctx_lock);
	EXPECT_EQ(a26::stats().running_skips, skips + 1);
	EXPECT_EQ(script->calls, 1);
	a26::aio_run_all_iocbs(k);
	EXPECT_EQ(script->calls, 2);
	EXPECT_TRUE(list_empty(&k->run_list));
	ASSERT_EQ(Poll(ctx, &ev), 1);
	a26::put_ioctx(k);
	Destroy(ctx);
}

// Before the patch, a kicked retry runs on aio_wq's worker, which borrows
// the context's mm; io_getevents never runs it.
TEST_F(AioV26ScriptTest, BeforeRetriesRunOnTheWorkerWithTheMm)
{
	a26::aio_retry_mode = a26::RetryMode::kBefore;
	unsigned long ctx = NewCtx(4);
	char buf[8];
	struct iocb cb;
	struct io_event ev;
	ASSERT_EQ(SubmitParked(ctx, &cb, buf, sizeof(buf)), 1);
	EXPECT_EQ(script->calls, 1);
	EXPECT_FALSE(script->ran_on_worker);
	unsigned long runs = a26::stats().kick_handler_runs;
	wake_up(&script->wq);
	ASSERT_EQ(Wait(ctx, &ev), 1);
	EXPECT_TRUE(script->ran_on_worker);
	EXPECT_EQ(script->mm.load(), aio_current_mm());
	EXPECT_GE(a26::stats().kick_handler_runs, runs + 1);
}

// ---- pipes through the engine ----

TEST_F(AioV26Test, PipeReadWaitsForTheWriterInEveryState)
{
	for (auto mode :
	     { a26::RetryMode::kBefore, a26::RetryMode::kAfter, a26::RetryMode::kRunning }) {
		a26::aio_retry_mode = mode;
		unsigned long ctx = NewCtx(8);
		int fds[2];
		Pipe(fds);
		char buf[32];
		struct iocb cb;
		struct io_event ev;
		PrepRead(&cb, fds[0], buf, sizeof(buf), 42);
		ASSERT_EQ(Submit(ctx, &cb), 1);
		EXPECT_EQ(Poll(ctx, &ev), 0);
		ASSERT_EQ(a26::sys_write(fds[1], "hello", 5), 5);
		ASSERT_EQ(Wait(ctx, &ev), 1);
		EXPECT_EQ(ev.res, 5);
		EXPECT_EQ(ev.data, 42u);
		EXPECT_EQ(memcmp(buf, "hello", 5), 0);
		Destroy(ctx);
		Close(fds[0]);
		Close(fds[1]);
	}
}

TEST_F(AioV26Test, PipeWriteRetriesWhenFull)
{
	unsigned long ctx = NewCtx(8);
	int fds[2];
	Pipe(fds);
	std::vector<char> big(3 * PIPE_SIZE, 'w');
	struct iocb cb;
	struct io_event ev;
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (uint32_t)fds[1];
	cb.aio_buf = (uint64_t)(uintptr_t)big.data();
	cb.aio_nbytes = big.size();
	ASSERT_EQ(Submit(ctx, &cb), 1);
	EXPECT_EQ(Poll(ctx, &ev), 0);
	std::vector<char> out(big.size());
	size_t got = 0;
	while (got < out.size()) {
		ssize_t n = a26::sys_read(fds[0], out.data() + got, out.size() - got);
		ASSERT_GT(n, 0);
		got += (size_t)n;
	}
	ASSERT_EQ(Wait(ctx, &ev), 1);
	EXPECT_EQ(ev.res, (long long)big.size());
	EXPECT_EQ(out, big);
}

TEST_F(AioV26Test, PipeReadSeesEofWhenTheWriterCloses)
{
	unsigned long ctx = NewCtx(8);
	int fds[2];
	Pipe(fds);
	char buf[8];
	struct iocb cb;
	struct io_event ev;
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	ASSERT_EQ(Submit(ctx, &cb), 1);
	Close(fds[1]);
	ASSERT_EQ(Wait(ctx, &ev), 1);
	EXPECT_EQ(ev.res, 0);
}

TEST_F(AioV26Test, CancelAPendingPipeRead)
{
	unsigned long ctx = NewCtx(8);
	int fds[2];
	Pipe(fds);
	char buf[8];
	struct iocb cb, other;
	struct io_event ev, res;
	PrepRead(&cb, fds[0], buf, sizeof(buf), 9);
	ASSERT_EQ(Submit(ctx, &cb), 1);
	memset(&res, 0, sizeof(res));
	ASSERT_EQ(ukern_io_cancel(ctx, &cb, &res), 0);
	EXPECT_EQ(res.res, -EINTR);
	EXPECT_EQ(res.data, 9u);
	EXPECT_EQ(res.obj, (uint64_t)(uintptr_t)&cb);
	// no event on the ring: io_cancel gave it
	EXPECT_EQ(Poll(ctx, &ev), 0);
	a26::flush_aio_wq();
	EXPECT_EQ(a26::nr_live_reqs(), 0);
	EXPECT_EQ(ukern_io_cancel(ctx, &cb, &res), -EINVAL);
	PrepRead(&other, fds[0], buf, sizeof(buf));
	EXPECT_EQ(ukern_io_cancel(ctx, &other, &res), -EINVAL);
	EXPECT_EQ(ukern_io_cancel(ctx, reinterpret_cast<struct iocb *>(8), &res), -EFAULT);
	// The pipe still works.
	ASSERT_EQ(a26::sys_write(fds[1], "ab", 2), 2);
	EXPECT_EQ(a26::sys_read(fds[0], buf, sizeof(buf)), 2);
}

TEST_F(AioV26Test, DestroyWithRetriesInFlight)
{
	for (auto mode : { a26::RetryMode::kBefore, a26::RetryMode::kRunning }) {
		a26::aio_retry_mode = mode;
		unsigned long ctx = NewCtx(16);
		int fds[4][2];
		char buf[4][8];
		struct iocb cb[4];
		for (int i = 0; i < 4; i++) {
			Pipe(fds[i]);
			PrepRead(&cb[i], fds[i][0], buf[i], sizeof(buf[i]));
			ASSERT_EQ(Submit(ctx, &cb[i]), 1);
		}
		// one of them is kicked and waits for a runner
		ASSERT_EQ(a26::sys_write(fds[0][1], "k", 1), 1);
		Destroy(ctx);
		EXPECT_EQ(a26::nr_live_reqs(), 0);
		EXPECT_EQ(a26::nr_live_ctx(), 0);
		EXPECT_EQ(Submit(ctx, &cb[0]), -EINVAL);
		for (auto &p : fds) {
			Close(p[0]);
			Close(p[1]);
		}
	}
}

TEST_F(AioV26Test, RingFullGivesEagain)
{
	unsigned long ctx = NewCtx(1);
	auto *ring = reinterpret_cast<RingHeader *>(ctx);
	int fds[2];
	Pipe(fds);
	std::vector<struct iocb> cbs(ring->nr);
	char buf[4];
	unsigned ok = 0;
	long ret = 0;
	for (auto &cb : cbs) {
		PrepRead(&cb, fds[0], buf, sizeof(buf));
		ret = Submit(ctx, &cb);
		if (ret != 1)
			break;
		ok++;
	}
	EXPECT_EQ(ret, -EAGAIN);
	EXPECT_EQ(ok, ring->nr - 1); // head == tail means empty: one slot stays free
	Destroy(ctx);
}

TEST_F(AioV26Test, ConcurrentWritersAndGetevents)
{
	unsigned long ctx = NewCtx(64);
	const unsigned n = uk::testing::StressThreads();
	const int per = 200;
	std::vector<std::array<int, 2>> p(n);
	for (auto &fd : p)
		Pipe(fd.data());
	std::vector<char> buf(n);
	std::vector<struct iocb> cbs(n);
	for (unsigned i = 0; i < n; i++) {
		PrepRead(&cbs[i], p[i][0], &buf[i], 1, i);
		ASSERT_EQ(Submit(ctx, &cbs[i]), 1);
	}
	std::vector<std::thread> writers;
	for (unsigned i = 0; i < n; i++)
		writers.emplace_back([&, i] {
			for (int k = 0; k < per; k++)
				ASSERT_EQ(a26::sys_write(p[i][1], "t", 1), 1);
		});
	std::vector<int> got(n, 0);
	long total = 0;
	while (total < (long)n * per) {
		struct io_event ev;
		ASSERT_EQ(Wait(ctx, &ev), 1);
		EXPECT_EQ(ev.res, 1);
		total++;
		unsigned i = (unsigned)ev.data;
		if (++got[i] < per) {
			ASSERT_EQ(Submit(ctx, &cbs[i]), 1);
		}
	}
	for (auto &t : writers)
		t.join();
	Destroy(ctx);
}

// ---- the stall and the use-after-free, on the virtual clock ----

class AioV26ClockTest : public AioV26Test
{
      protected:
	void SetUp() override
	{
		AioV26Test::SetUp();
		uk::clock_use_virtual();
	}
	void TearDown() override
	{
		AioV26Test::TearDown();
		uk::clock_use_host();
	}

	// A waiter sleeps in io_getevents; a write kicks its pipe read. Returns
	// the jiffies from the kick until the waiter has its event.
	unsigned long KickedRetryLatency()
	{
		unsigned long ctx = NewCtx(8);
		int fds[2];
		Pipe(fds);
		char buf[8];
		struct iocb cb;
		PrepRead(&cb, fds[0], buf, sizeof(buf));
		EXPECT_EQ(Submit(ctx, &cb), 1);
		std::atomic<struct task_struct *> task{ nullptr };
		std::atomic<long> got{ -1 };
		std::thread waiter([&] {
			task = current;
			struct io_event ev;
			got = ukern_io_getevents(ctx, 1, 1, &ev, nullptr);
		});
		EXPECT_TRUE(uk::testing::WaitTaskBlocked(task));
		get_task_struct(task.load()); // looked at below, maybe after it exits
		unsigned long start = jiffies;
		EXPECT_EQ(a26::sys_write(fds[1], "x", 1), 1);
		unsigned long waited = 0;
		while (got.load() < 0 && waited < HZ) {
			uk::virtual_clock_advance(TICK_NSEC);
			a26::flush_aio_wq();
			waited = jiffies - start;
			// the worker has run, so a woken waiter is on its way out
			uk::testing::WaitFor([&] {
				return got.load() >= 0 || uk::task_is_blocked(task.load());
			});
		}
		waiter.join();
		put_task_struct(task.load());
		EXPECT_EQ(got.load(), 1);
		Destroy(ctx);
		return waited;
	}
};

TEST_F(AioV26ClockTest, StallFixOffWaiterWaitsATenthOfASecond)
{
	a26::aio_stall_fix = false;
	EXPECT_EQ(KickedRetryLatency(), (unsigned long)HZ / 10);
}

TEST_F(AioV26ClockTest, StallFixOnWaiterWaitsOneJiffy)
{
	a26::aio_stall_fix = true;
	EXPECT_LE(KickedRetryLatency(), 1ul);
}

TEST_F(AioV26ClockTest, KickWithNoWaiterDelaysTheWorkerHz10)
{
	unsigned long ctx = NewCtx(8);
	int fds[2];
	Pipe(fds);
	char buf[8];
	struct iocb cb;
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	ASSERT_EQ(Submit(ctx, &cb), 1);
	unsigned long runs = a26::stats().kick_handler_runs;
	ASSERT_EQ(a26::sys_write(fds[1], "x", 1), 1);
	uk::virtual_clock_advance((HZ / 10 - 1) * TICK_NSEC);
	a26::flush_aio_wq();
	EXPECT_EQ(a26::stats().kick_handler_runs, runs);
	uk::virtual_clock_advance(TICK_NSEC);
	a26::flush_aio_wq();
	EXPECT_EQ(a26::stats().kick_handler_runs, runs + 1);
	struct io_event ev;
	EXPECT_EQ(Poll(ctx, &ev), 1);
}

// io_destroy while the worker's start is still a pending timer: with
// cancel_delayed_work in __put_ioctx the timer goes with the context.
TEST_F(AioV26ClockTest, DestroyCancelsThePendingDelayedWork)
{
	a26::aio_put_cancel = true;
	unsigned long ctx = NewCtx(8);
	int fds[2];
	Pipe(fds);
	char buf[8];
	struct iocb cb;
	PrepRead(&cb, fds[0], buf, sizeof(buf));
	ASSERT_EQ(Submit(ctx, &cb), 1);
	ASSERT_EQ(a26::sys_write(fds[1], "x", 1), 1);
	unsigned long runs = a26::stats().kick_handler_runs;
	Destroy(ctx);
	uk::virtual_clock_advance(HZ * TICK_NSEC);
	a26::flush_aio_wq();
	EXPECT_EQ(a26::stats().kick_handler_runs, runs);
}

#if defined(__SANITIZE_ADDRESS__)
#define UKERN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UKERN_TEST_ASAN 1
#endif
#endif

#ifdef UKERN_TEST_ASAN
// Without cancel_delayed_work the pending timer fires on the freed
// context: AddressSanitizer reports the use after free.
TEST_F(AioV26ClockTest, DestroyWithoutCancelIsAUseAfterFree)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			a26::aio_put_cancel = false;
			unsigned long ctx = 0;
			ukern_io_setup(8, &ctx);
			int fds[2];
			a26::do_pipe2(fds, 0);
			char buf[8];
			struct iocb cb;
			PrepRead(&cb, fds[0], buf, sizeof(buf));
			Submit(ctx, &cb);
			a26::sys_write(fds[1], "x", 1);
			ukern_io_destroy(ctx);
			uk::virtual_clock_advance(HZ * TICK_NSEC);
			a26::flush_aio_wq();
		},
		"heap-use-after-free");
}
#endif

} // namespace
