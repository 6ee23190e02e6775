// SPDX-License-Identifier: GPL-2.0-only
//
// IOCB_CMD_POLL on a file that waits the kernel's way: its ->poll() hands a
// wait queue head to poll_wait(), and the test, as the file's driver, wakes
// that head with or without the ready events as the key, frees it with
// wake_up_pollfree(), or offers two heads. Each test checks the event the
// request completes with and that nothing is left on the file's queues.
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/errno.h>
#include <uk/linux/poll.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

#include "aio_testlib.h"
#include "testmain.h"

namespace
{

/* A character device with a wait queue, as a driver's ->poll() sees it. */
struct PollDev {
	wait_queue_head_t wqh;
	wait_queue_head_t other; /* offered too when two_heads is set */
	std::atomic<__poll_t> mask{ 0 };
	std::atomic<int> polls{ 0 };
	bool two_heads = false;
};

__poll_t dev_poll(struct file *file, struct poll_table_struct *pt)
{
	struct PollDev *dev = (struct PollDev *)file->private_data;

	dev->polls++;
	poll_wait(file, &dev->wqh, pt);
	if (dev->two_heads)
		poll_wait(file, &dev->other, pt);
	return dev->mask.load();
}

const struct file_operations dev_fops = {
	.read_iter = nullptr,
	.write_iter = nullptr,
	.fsync = nullptr,
	.poll = dev_poll,
};

const struct file_operations nopoll_fops = {
	.read_iter = nullptr,
	.write_iter = nullptr,
	.fsync = nullptr,
	.poll = nullptr,
};

class AioPollTest : public AioTest
{
      protected:
	void SetUp() override
	{
		AioTest::SetUp();
		dev_ = new PollDev;
		init_waitqueue_head(&dev_->wqh);
		init_waitqueue_head(&dev_->other);
		fd_ = open("/dev/null", O_RDWR | O_CLOEXEC);
		ASSERT_GE(fd_, 0);
		ASSERT_EQ(aio_register_file(fd_, &dev_fops, FMODE_READ | FMODE_WRITE, dev_), 0);
		ASSERT_EQ(ukern_io_setup(8, &ctx_), 0);
	}
	void TearDown() override
	{
		EXPECT_EQ(ukern_io_destroy(ctx_), 0);
		EXPECT_EQ(aio_unregister_file(fd_), 0);
		close(fd_);
		uk::aio::quiesce();
		if (dev_) {
			EXPECT_FALSE(waitqueue_active(&dev_->wqh));
			EXPECT_FALSE(waitqueue_active(&dev_->other));
			delete dev_;
		}
		AioTest::TearDown();
	}

	long SubmitPoll(int fd, short events, struct iocb *cb, int resfd = -1)
	{
		struct iocb *cbs[1] = { cb };

		memset(cb, 0, sizeof(*cb));
		cb->aio_lio_opcode = IOCB_CMD_POLL;
		cb->aio_fildes = fd;
		cb->aio_buf = (unsigned short)events;
		cb->aio_data = 0x5eed;
		if (resfd >= 0) {
			cb->aio_flags = IOCB_FLAG_RESFD;
			cb->aio_resfd = resfd;
		}
		return ukern_io_submit(ctx_, 1, cbs);
	}

	/* The events ready now, without waiting. */
	long Peek(struct io_event *ev)
	{
		struct timespec zero = {};

		return ukern_io_getevents(ctx_, 0, 1, ev, &zero);
	}

	/* One event, waited for. */
	struct io_event Reap()
	{
		struct io_event ev = {};
		struct timespec ts = { 10, 0 };

		EXPECT_EQ(ukern_io_getevents(ctx_, 1, 1, &ev, &ts), 1);
		return ev;
	}

	PollDev *dev_ = nullptr;
	int fd_ = -1;
	unsigned long ctx_ = 0;
};

TEST_F(AioPollTest, ReadyAtSubmitCompletesWithoutQueueing)
{
	struct iocb cb;

	dev_->mask = EPOLLIN | EPOLLRDNORM;
	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	struct io_event ev = Reap();
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.data, 0x5eedu);
	/* the requested events and the errors, no more */
	EXPECT_EQ(ev.res, POLLIN);
}

TEST_F(AioPollTest, WakeUpWithTheKeyCompletesInTheWaker)
{
	struct iocb cb;
	struct io_event ev;

	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	EXPECT_EQ(Peek(&ev), 0);
	EXPECT_TRUE(waitqueue_active(&dev_->wqh));

	/* Events nobody asked for: the entry stays, nothing runs. */
	int polls = dev_->polls;
	wake_up_poll(&dev_->wqh, EPOLLOUT | EPOLLWRNORM);
	flush_workqueue(system_wq);
	EXPECT_EQ(Peek(&ev), 0);
	EXPECT_TRUE(waitqueue_active(&dev_->wqh));
	EXPECT_EQ(dev_->polls, polls);

	/* The key is the result, as the waker gave it, without a ->poll(). */
	dev_->mask = EPOLLIN | EPOLLRDNORM;
	wake_up_poll(&dev_->wqh, EPOLLIN | EPOLLRDNORM);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	ASSERT_EQ(Peek(&ev), 1);
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.res, POLLIN | POLLRDNORM);
	EXPECT_EQ(dev_->polls, polls);
}

TEST_F(AioPollTest, WakeUpWithoutAKeyAsksTheFileAgain)
{
	struct iocb cb;
	struct io_event ev;

	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	int polls = dev_->polls;

	/* Not ready when the work asks: the request keeps waiting. */
	wake_up(&dev_->wqh);
	flush_workqueue(system_wq);
	EXPECT_EQ(dev_->polls, polls + 1);
	EXPECT_EQ(Peek(&ev), 0);
	EXPECT_TRUE(waitqueue_active(&dev_->wqh));

	/* Ready: the work completes it with what ->poll() says, masked. */
	dev_->mask = EPOLLIN | EPOLLOUT;
	wake_up(&dev_->wqh);
	flush_workqueue(system_wq);
	EXPECT_EQ(dev_->polls, polls + 2);
	ev = Reap();
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.res, POLLIN);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
}

TEST_F(AioPollTest, HangUpCompletesWhateverWasAskedFor)
{
	struct iocb cb;

	ASSERT_EQ(SubmitPoll(fd_, POLLOUT, &cb), 1);
	dev_->mask = EPOLLHUP;
	wake_up_poll(&dev_->wqh, EPOLLHUP);
	struct io_event ev = Reap();
	EXPECT_EQ(ev.res, POLLHUP);
}

TEST_F(AioPollTest, PollFreeLetsGoOfTheQueue)
{
	struct iocb cb;

	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	ASSERT_TRUE(waitqueue_active(&dev_->wqh));
	/* The driver frees its queue: every waiter must be off it at return. */
	wake_up_pollfree(&dev_->wqh);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	struct io_event ev = Reap();
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.res, POLLHUP);
	/* Its users free it after a grace period; nothing touches it since. */
	synchronize_rcu();
}

TEST_F(AioPollTest, SecondQueueIsRefused)
{
	struct iocb cb;
	struct io_event ev;

	dev_->two_heads = true;
	EXPECT_EQ(SubmitPoll(fd_, POLLIN, &cb), -EINVAL);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	EXPECT_FALSE(waitqueue_active(&dev_->other));
	EXPECT_EQ(Peek(&ev), 0);
}

TEST_F(AioPollTest, CancelTakesItOffTheQueue)
{
	struct iocb cb;
	struct io_event res;

	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	EXPECT_EQ(ukern_io_cancel(ctx_, &cb, &res), -EINPROGRESS);
	struct io_event ev = Reap();
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.res, 0);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	/* Gone from active_reqs: a second cancel finds nothing. */
	EXPECT_EQ(ukern_io_cancel(ctx_, &cb, &res), -EINVAL);
	/* A wake-up after the cancel reaches no one. */
	wake_up_poll(&dev_->wqh, EPOLLIN);
	flush_workqueue(system_wq);
	EXPECT_EQ(Peek(&ev), 0);
}

TEST_F(AioPollTest, EventfdIsSignalledOutsideTheWaker)
{
	struct iocb cb;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t n = 0;

	ASSERT_GE(efd, 0);
	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb, efd), 1);
	dev_->mask = EPOLLIN;
	wake_up_poll(&dev_->wqh, EPOLLIN);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	/* The put, and the signal in it, is a work item's. */
	flush_workqueue(system_wq);
	ASSERT_EQ(read(efd, &n, sizeof(n)), (ssize_t)sizeof(n));
	EXPECT_EQ(n, 1u);
	struct io_event ev = Reap();
	EXPECT_EQ(ev.res, POLLIN);
	close(efd);
}

TEST_F(AioPollTest, DestroyCancelsAWaitingPoll)
{
	struct iocb cb;

	ASSERT_EQ(SubmitPoll(fd_, POLLIN, &cb), 1);
	ASSERT_EQ(ukern_io_destroy(ctx_), 0);
	EXPECT_FALSE(waitqueue_active(&dev_->wqh));
	ctx_ = 0;
	ASSERT_EQ(ukern_io_setup(8, &ctx_), 0);
}

TEST_F(AioPollTest, FileWithoutPollIsAlwaysReady)
{
	struct iocb cb;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(aio_register_file(fd, &nopoll_fops, FMODE_READ | FMODE_WRITE, nullptr), 0);
	ASSERT_EQ(SubmitPoll(fd, POLLIN | POLLOUT, &cb), 1);
	struct io_event ev = Reap();
	EXPECT_EQ(ev.res, POLLIN | POLLOUT);
	/* Nothing it could wait for: the kernel's -EINVAL. */
	EXPECT_EQ(SubmitPoll(fd, POLLPRI, &cb), -EINVAL);
	EXPECT_EQ(aio_unregister_file(fd), 0);
	close(fd);
}

/* A host pipe: the poll thread turns its readiness into wake-ups. */
TEST_F(AioPollTest, HostPipeWaitsOnItsQueueAfterTheProgramClosesIt)
{
	struct iocb cb;
	struct io_event ev;
	int p[2];

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	ASSERT_EQ(SubmitPoll(p[0], POLLIN, &cb), 1);
	/* The request holds the file: the program's descriptor may go. */
	close(p[0]);
	EXPECT_EQ(Peek(&ev), 0);
	ASSERT_EQ(write(p[1], "x", 1), 1);
	ev = Reap();
	EXPECT_EQ(ev.obj, (u64)(uintptr_t)&cb);
	EXPECT_EQ(ev.res, POLLIN | POLLRDNORM);
	close(p[1]);
}

/* An eventfd's signal wakes with EPOLLIN alone, though it is writable too. */
TEST_F(AioPollTest, HostEventfdCompletesWithTheSignalsKey)
{
	struct iocb cb;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t one = 1;

	ASSERT_GE(efd, 0);
	ASSERT_EQ(SubmitPoll(efd, POLLIN, &cb), 1);
	ASSERT_EQ(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	struct io_event ev = Reap();
	EXPECT_EQ(ev.res, POLLIN);
	close(efd);
}

/* Asked for POLLRDNORM alone, the pipe's key still carries POLLIN with it. */
TEST_F(AioPollTest, HostPipeKeyHoldsEveryFormOfTheReadiness)
{
	struct iocb cb;
	int p[2];

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	ASSERT_EQ(SubmitPoll(p[0], POLLRDNORM, &cb), 1);
	ASSERT_EQ(write(p[1], "x", 1), 1);
	struct io_event ev = Reap();
	EXPECT_EQ(ev.res, POLLIN | POLLRDNORM);
	close(p[0]);
	close(p[1]);
}

TEST_F(AioPollTest, HostPipeHangUp)
{
	struct iocb cb[2];
	int p[2];

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	ASSERT_EQ(SubmitPoll(p[0], POLLIN, &cb[0]), 1);
	ASSERT_EQ(SubmitPoll(p[0], POLLPRI, &cb[1]), 1);
	close(p[1]);
	struct io_event ev[2] = { Reap(), Reap() };
	EXPECT_EQ(ev[0].res & POLLHUP, POLLHUP);
	EXPECT_EQ(ev[1].res & POLLHUP, POLLHUP);
	close(p[0]);
}

} // namespace
