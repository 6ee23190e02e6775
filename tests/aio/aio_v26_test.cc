// SPDX-License-Identifier: GPL-2.0-only
// The retry-based 2.6 AIO engine (aio/aio_v26.cc): the contract of each
// retry-engine function, the three states of the 2004 context-switch patch,
// the stall and the use-after-free it left, cancel and io_destroy with
// retries in flight.
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
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
#include <uk/devices/null_blk.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/pipe_fs_i.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/clock.h>

#include "../../blk/blk-mq.h"
#include "blkdev_testlib.h"
#include "pipe_testlib.h"
#include "testmain.h"

namespace
{

namespace a26 = uk::aio26;

struct RingHeader {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

// The engine's switches, restored after each test; leak checks at the end.
class AioV26Test : public ::testing::Test, protected PipeFds
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
		CloseAll();
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

// ---- the opcodes io_submit knows (2.6.8: PREAD, PWRITE, FSYNC, FDSYNC) ----

TEST_F(AioV26Test, OpcodesAreThoseOfTheEra)
{
	char path[] = "/tmp/ukern-aio-v26-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);
	unsigned long ctx = NewCtx(8);
	char buf[16] = "0123456789abcde";
	struct iovec iov = { buf, sizeof(buf) };
	struct iocb cb;
	struct io_event ev;
	// What 2.6.8's aio_setup_iocb() ran.
	const uint16_t known[] = { IOCB_CMD_PWRITE, IOCB_CMD_PREAD, IOCB_CMD_FSYNC,
				   IOCB_CMD_FDSYNC };
	const long res[] = { sizeof(buf), sizeof(buf), 0, 0 };
	for (int i = 0; i < 4; i++) {
		PrepRead(&cb, fd, buf, sizeof(buf), i);
		cb.aio_lio_opcode = known[i];
		ASSERT_EQ(Submit(ctx, &cb), 1) << "opcode " << known[i];
		ASSERT_EQ(Wait(ctx, &ev), 1);
		EXPECT_EQ(ev.res, res[i]) << "opcode " << known[i];
	}
	// PREADX (4) and POLL (5) were experimental and commented out, NOOP
	// (6) never ran, PREADV/PWRITEV (7, 8) came in 2.6.19: -EINVAL.
	for (uint16_t op : { 4, 5, 6, 7, 8, 9, 0xffff }) {
		PrepRead(&cb, fd, &iov, 1);
		cb.aio_lio_opcode = op;
		EXPECT_EQ(Submit(ctx, &cb), -EINVAL) << "opcode " << op;
	}
	// io_pgetevents (4.18) is not a system call of the era.
	EXPECT_EQ(ukern_io_pgetevents(ctx, 0, 1, &ev, nullptr, nullptr), -ENOSYS);
	EXPECT_EQ(a26::nr_live_reqs(), 0);
	close(fd);
}

// ---- ukern block devices: O_DIRECT as -EIOCBQUEUED ----

using blkdevtest::AlignedBuf;
using blkdevtest::kBs;
using blkdevtest::Prep;
using blkdevtest::Reap;

// A configfs null_blk device "v26blk" (16 MiB, memory backed) opened
// through aio_open_blkdev(), the descriptor libukern_aio.so's open() gives.
class AioV26BlkdevTest : public AioV26Test, public ::testing::WithParamInterface<int>
{
      protected:
	void SetUp() override
	{
		AioV26Test::SetUp();
		null_blk_reset_module_params();
	}
	void TearDown() override
	{
		for (unsigned long &c : ctxs_) {
			if (c) {
				EXPECT_EQ(ukern_io_destroy(c), 0);
			}
		}
		ctxs_.clear();
		for (int fd : blk_fds_)
			EXPECT_EQ(uk::aio_close_blkdev(fd), 0);
		a26::flush_aio_wq();
		if (dev_)
			nullb_group_drop(dev_);
		if (kblockd_workqueue)
			flush_workqueue(kblockd_workqueue);
		null_blk_reset_module_params();
		if (virtual_) {
			uk::softirq_set_threads(true);
			uk::clock_use_host();
		}
		AioV26Test::TearDown();
	}
	// irqmode 0 completes inside submit_bio, 1 in softirq, 2 from a timer
	// after completion_nsec.
	void Make(int irqmode, const char *depth = "64")
	{
		dev_ = nullb_group_make("v26blk");
		ASSERT_FALSE(IS_ERR_OR_NULL(dev_));
		std::string irq = std::to_string(irqmode);
		ASSERT_GT(nullb_attr_store(dev_, "irqmode", irq.c_str()), 0);
		ASSERT_GT(nullb_attr_store(dev_, "size", "16"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "blocksize", "4096"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "memory_backed", "1"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "hw_queue_depth", depth), 0);
		ASSERT_GT(nullb_attr_store(dev_, "completion_nsec", "20000"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "power", "1"), 0);
	}
	int Open(int flags)
	{
		int fd = uk::aio_open_blkdev("/dev/ukern/v26blk", flags);
		EXPECT_GE(fd, 0);
		if (fd >= 0)
			blk_fds_.push_back(fd);
		return fd;
	}
	// Deterministic completions: the timer fires when the test moves the clock.
	void UseVirtualClock()
	{
		uk::clock_use_virtual();
		uk::softirq_set_threads(false);
		virtual_ = true;
	}
	// n blocks from block `first` on, written then read back and compared.
	void RoundTrip(unsigned long ctx, int fd, int n, long long first)
	{
		AlignedBuf w(n * kBs), r(n * kBs);
		for (size_t i = 0; i < n * kBs; i++)
			w.p[i] = (unsigned char)(i * 7 + i / kBs + first);
		memset(r.p, 0xee, n * kBs);
		std::vector<struct iocb> cbs(n);
		std::vector<struct iocb *> ptrs(n);
		for (uint16_t op : { IOCB_CMD_PWRITE, IOCB_CMD_PREAD }) {
			unsigned char *base = op == IOCB_CMD_PWRITE ? w.p : r.p;
			for (int i = 0; i < n; i++) {
				Prep(&cbs[i], fd, op, base + i * kBs, kBs, (first + i) * kBs, i);
				ptrs[i] = &cbs[i];
			}
			ASSERT_EQ(ukern_io_submit(ctx, n, ptrs.data()), n);
			auto ev = Reap(ctx, n);
			ASSERT_EQ((int)ev.size(), n);
			std::vector<bool> seen(n);
			for (auto &e : ev) {
				EXPECT_EQ(e.res, (long)kBs);
				ASSERT_LT(e.data, (uint64_t)n);
				EXPECT_FALSE(seen[e.data]);
				seen[e.data] = true;
				EXPECT_EQ(e.obj, (uint64_t)(uintptr_t)&cbs[e.data]);
			}
		}
		EXPECT_EQ(memcmp(w.p, r.p, n * kBs), 0);
	}
	struct nullb_device *dev_ = nullptr;
	std::vector<int> blk_fds_;
	bool virtual_ = false;
};

// The method returns -EIOCBQUEUED and the bio's end calls aio_complete():
// with the timer's completion held back, io_submit has returned and no event
// is there until the clock moves.
TEST_F(AioV26BlkdevTest, DirectRequestCompletesFromTheBioEnd)
{
	UseVirtualClock();
	ASSERT_NO_FATAL_FAILURE(Make(2));
	int fd = Open(O_RDWR | O_DIRECT);
	unsigned long ctx = NewCtx(8);
	AlignedBuf buf(kBs);
	memset(buf.p, 0x3c, kBs);
	struct iocb cb, *p = &cb;
	struct io_event ev;
	Prep(&cb, fd, IOCB_CMD_PWRITE, buf.p, kBs, 5 * kBs, 11);
	unsigned long retries = a26::stats().retries;
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	EXPECT_EQ(a26::stats().retries - retries, 1u) << "one run of the method, no retry";
	EXPECT_EQ(Poll(ctx, &ev), 0);
	EXPECT_EQ(a26::nr_live_reqs(), 1);
	uk::virtual_clock_advance(20000);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.data, 11u);
	EXPECT_EQ(ev.res, (long)kBs);
	EXPECT_EQ(a26::stats().retries - retries, 1u);
}

TEST_P(AioV26BlkdevTest, DirectRoundTrip)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam()));
	int fd = Open(O_RDWR | O_DIRECT);
	unsigned long ctx = NewCtx(64);
	RoundTrip(ctx, fd, 32, 3);
}

// Many more requests than the queue has tags, in flight at once, in each
// retry state: the submitter waits for tags, the data comes back whole.
TEST_P(AioV26BlkdevTest, ManyInFlightAtQueueDepth)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam(), "32"));
	int fd = Open(O_RDWR | O_DIRECT);
	for (auto mode :
	     { a26::RetryMode::kBefore, a26::RetryMode::kAfter, a26::RetryMode::kRunning }) {
		a26::aio_retry_mode = mode;
		unsigned long ctx = NewCtx(512);
		RoundTrip(ctx, fd, 256, 100 * (int)mode);
		Destroy(ctx);
	}
}

// Without O_DIRECT the transfer completes in the method (no -EIOCBQUEUED),
// through a bounce buffer when the caller's is not aligned.
TEST_P(AioV26BlkdevTest, BufferedCompletesInTheMethod)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam()));
	int fd = Open(O_RDWR);
	unsigned long ctx = NewCtx(8);
	std::vector<unsigned char> w(2 * kBs + 1), r(2 * kBs + 1, 0);
	for (size_t i = 0; i < w.size(); i++)
		w[i] = (unsigned char)(i * 13 + 1);
	struct iocb cb, *p = &cb;
	Prep(&cb, fd, IOCB_CMD_PWRITE, w.data() + 1, 2 * kBs, 4 * kBs, 1);
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	auto ev = Reap(ctx, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)(2 * kBs));
	Prep(&cb, fd, IOCB_CMD_PREAD, r.data() + 1, 2 * kBs, 4 * kBs, 2);
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	ev = Reap(ctx, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)(2 * kBs));
	EXPECT_EQ(memcmp(w.data() + 1, r.data() + 1, 2 * kBs), 0);
	Prep(&cb, fd, IOCB_CMD_PREAD, r.data(), 100, 0, 3);
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	ev = Reap(ctx, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, -EINVAL);
}

// blockdev_direct_IO's checks and the device's answers, as events: io_submit
// itself succeeds, as 2.6's did once the request ran.
TEST_P(AioV26BlkdevTest, DirectErrorsAndShortTransfersAsEvents)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam()));
	// sectors 64..71: the block at 32 KiB is bad
	ASSERT_GT(nullb_attr_store(dev_, "badblocks", "+64-71"), 0);
	int fd = Open(O_RDWR | O_DIRECT);
	unsigned long ctx = NewCtx(16);
	const long long size = 16LL << 20;
	AlignedBuf buf(2 * kBs);
	memset(buf.p, 0, 2 * kBs);
	constexpr int kN = 9;
	struct iocb cb[kN];
	struct iocb *p[kN];
	for (int i = 0; i < kN; i++)
		p[i] = &cb[i];
	Prep(&cb[0], fd, IOCB_CMD_PREAD, buf.p, kBs, 100, 0);		 // offset
	Prep(&cb[1], fd, IOCB_CMD_PREAD, buf.p + 8, kBs, 0, 1);		 // buffer
	Prep(&cb[2], fd, IOCB_CMD_PWRITE, buf.p, kBs - 512, 0, 2);	 // length
	Prep(&cb[3], fd, IOCB_CMD_PREAD, buf.p, kBs, size, 3);		 // at the end
	Prep(&cb[4], fd, IOCB_CMD_PWRITE, buf.p, kBs, size, 4);		 // at the end
	Prep(&cb[5], fd, IOCB_CMD_PREAD, buf.p, 2 * kBs, size - kBs, 5); // short
	Prep(&cb[6], fd, IOCB_CMD_PREAD, buf.p, kBs, 8 * kBs, 6);	 // bad block
	Prep(&cb[7], fd, IOCB_CMD_PWRITE, buf.p, 2 * kBs, 7 * kBs, 7);	 // across it
	Prep(&cb[8], fd, IOCB_CMD_FSYNC, nullptr, 0, 0, 8);		 // flush
	ASSERT_EQ(ukern_io_submit(ctx, kN, p), kN);
	auto ev = Reap(ctx, kN);
	ASSERT_EQ((int)ev.size(), kN);
	long res[kN];
	for (auto &e : ev)
		res[e.data] = (long)e.res;
	EXPECT_EQ(res[0], -EINVAL);
	EXPECT_EQ(res[1], -EINVAL);
	EXPECT_EQ(res[2], -EINVAL);
	EXPECT_EQ(res[3], 0);
	EXPECT_EQ(res[4], -ENOSPC);
	EXPECT_EQ(res[5], (long)kBs);
	EXPECT_EQ(res[6], -EIO);
	EXPECT_EQ(res[7], -EIO);
	EXPECT_EQ(res[8], 0);
	// A read-only descriptor refuses writes at io_submit, as 2.6's FMODE_WRITE check.
	int ro = Open(O_RDONLY | O_DIRECT);
	Prep(&cb[0], ro, IOCB_CMD_PWRITE, buf.p, kBs, 0, 0);
	EXPECT_EQ(ukern_io_submit(ctx, 1, p), -EBADF);
}

// io_destroy with direct requests in flight: they have no cancel method, so
// io_destroy waits for their bios to end; nothing leaks.
TEST_F(AioV26BlkdevTest, DestroyWaitsForDirectRequestsInFlight)
{
	UseVirtualClock();
	ASSERT_NO_FATAL_FAILURE(Make(2));
	int fd = Open(O_RDWR | O_DIRECT);
	unsigned long ctx = NewCtx(16);
	constexpr int kN = 8;
	AlignedBuf w(kN * kBs), r(kN * kBs);
	memset(w.p, 0x7b, kN * kBs);
	struct iocb cb[kN];
	struct iocb *p[kN];
	for (int i = 0; i < kN; i++) {
		Prep(&cb[i], fd, IOCB_CMD_PWRITE, w.p + i * kBs, kBs, i * kBs, i);
		p[i] = &cb[i];
	}
	ASSERT_EQ(ukern_io_submit(ctx, kN, p), kN);
	EXPECT_EQ(a26::nr_live_reqs(), kN);
	std::atomic<bool> advanced{ false };
	std::thread clock([&] {
		// io_destroy takes the context off the list before it waits
		EXPECT_TRUE(uk::testing::WaitFor([&] { return !a26::owns(ctx); }));
		advanced = true;
		uk::virtual_clock_advance(20000);
	});
	Destroy(ctx);
	EXPECT_TRUE(advanced.load()) << "io_destroy returned before the bios ended";
	clock.join();
	EXPECT_EQ(a26::nr_live_reqs(), 0);
	// The writes landed.
	unsigned long ctx2 = NewCtx(16);
	for (int i = 0; i < kN; i++)
		Prep(&cb[i], fd, IOCB_CMD_PREAD, r.p + i * kBs, kBs, i * kBs, i);
	ASSERT_EQ(ukern_io_submit(ctx2, kN, p), kN);
	uk::virtual_clock_advance(20000);
	auto ev = Reap(ctx2, kN);
	ASSERT_EQ((int)ev.size(), kN);
	for (auto &e : ev)
		EXPECT_EQ(e.res, (long)kBs);
	EXPECT_EQ(memcmp(w.p, r.p, kN * kBs), 0);
}

// A queued direct request has no ki_cancel: io_cancel gives -EINVAL and the
// request completes with its event.
TEST_F(AioV26BlkdevTest, CancelOfAQueuedDirectRequestIsRefused)
{
	UseVirtualClock();
	ASSERT_NO_FATAL_FAILURE(Make(2));
	int fd = Open(O_RDWR | O_DIRECT);
	unsigned long ctx = NewCtx(8);
	AlignedBuf buf(kBs);
	struct iocb cb, *p = &cb;
	struct io_event ev, res;
	Prep(&cb, fd, IOCB_CMD_PREAD, buf.p, kBs, 0, 21);
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	memset(&res, 0, sizeof(res));
	EXPECT_EQ(ukern_io_cancel(ctx, &cb, &res), -EINVAL);
	EXPECT_EQ(Poll(ctx, &ev), 0);
	uk::virtual_clock_advance(20000);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.data, 21u);
	EXPECT_EQ(ev.res, (long)kBs);
}

// Closing the device with a direct request in flight: the request's file
// keeps the device until the bio ends.
TEST_F(AioV26BlkdevTest, CloseWithADirectRequestInFlight)
{
	UseVirtualClock();
	ASSERT_NO_FATAL_FAILURE(Make(2));
	int fd = uk::aio_open_blkdev("/dev/ukern/v26blk", O_RDWR | O_DIRECT);
	ASSERT_GE(fd, 0);
	unsigned long ctx = NewCtx(8);
	AlignedBuf buf(kBs);
	memset(buf.p, 0x11, kBs);
	struct iocb cb, *p = &cb;
	struct io_event ev;
	Prep(&cb, fd, IOCB_CMD_PWRITE, buf.p, kBs, 0, 3);
	ASSERT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	EXPECT_EQ(uk::aio_close_blkdev(fd), 0);
	uk::virtual_clock_advance(20000);
	ASSERT_EQ(Poll(ctx, &ev), 1);
	EXPECT_EQ(ev.res, (long)kBs);
}

std::string IrqmodeName(const ::testing::TestParamInfo<int> &info)
{
	static const char *const names[] = { "None", "Softirq", "Timer" };
	return names[info.param];
}

INSTANTIATE_TEST_SUITE_P(Irqmode, AioV26BlkdevTest, ::testing::Values(0, 1, 2), IrqmodeName);

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
