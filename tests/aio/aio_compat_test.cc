// SPDX-License-Identifier: GPL-2.0-only
//
// fs/aio.c's entry points for 32-bit tasks (compat_sys_io_*) and for 32-bit
// time (sys_io_*_time32), called as a 32-bit task's system calls would be:
// every pointer they are given, and every pointer inside what they read,
// lies below 4 GiB.
#include <fcntl.h>
#include <linux/time_types.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/compat.h>
#include <uk/linux/errno.h>

#include "aio_testlib.h"
#include "testmain.h"

namespace
{

constexpr uint32_t kRingMagic = 0xa10a10a1;

/* The layout of fs/aio.c's struct __compat_aio_sigset. */
struct CompatAioSigset {
	compat_uptr_t sigmask;
	compat_size_t sigsetsize;
};

/* What a 32-bit task hands over: all of it in one low mapping. */
struct LowMem {
	struct iocb iocbs[4];
	compat_uptr_t iocbp[4];
	struct compat_iovec vec[2];
	char buf[3][64];
	struct io_event events[4];
	struct old_timespec32 ts32;
	uint64_t sigmask;
	CompatAioSigset csig;
	u32 ctx32;
};

compat_uptr_t Low(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	EXPECT_LT(v, 1ULL << 32);
	return (compat_uptr_t)v;
}

class AioCompatTest : public AioTest
{
      protected:
	void SetUp() override
	{
		AioTest::SetUp();
		uk::aio::boot();
		void *p = mmap(nullptr, sizeof(LowMem), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		ASSERT_NE(p, MAP_FAILED);
		m_ = new (p) LowMem();
		char path[] = "/tmp/ukern-compat-XXXXXX";
		fd_ = mkstemp(path);
		ASSERT_GE(fd_, 0);
		unlink(path);
		for (int i = 0; i < 64; i++)
			data_[i] = (char)('a' + i % 26);
		ASSERT_EQ(pwrite(fd_, data_, sizeof(data_), 0), (ssize_t)sizeof(data_));
	}
	void TearDown() override
	{
		if (m_ && m_->ctx32) {
			EXPECT_EQ(ukern_io_destroy(m_->ctx32), 0);
		}
		close(fd_);
		munmap(m_, sizeof(LowMem));
		AioTest::TearDown();
	}

	void Prep(int i, unsigned opcode, void *buf, size_t len, long long off)
	{
		struct iocb *cb = &m_->iocbs[i];

		memset(cb, 0, sizeof(*cb));
		cb->aio_lio_opcode = opcode;
		cb->aio_fildes = fd_;
		cb->aio_buf = Low(buf);
		cb->aio_nbytes = len;
		cb->aio_offset = off;
		cb->aio_data = 10 + i;
		m_->iocbp[i] = Low(cb);
	}

	LowMem *m_ = nullptr;
	int fd_ = -1;
	char data_[64];
};

TEST_F(AioCompatTest, SetupMapsTheRingWhereA32BitAddressReachesIt)
{
	ASSERT_EQ(compat_sys_io_setup(8, &m_->ctx32), 0);
	ASSERT_NE(m_->ctx32, 0u);
	/* The id is the ring's address; the ring header is there. */
	const uint32_t *ring = (const uint32_t *)(uintptr_t)m_->ctx32;
	EXPECT_EQ(ring[4], kRingMagic);
	EXPECT_GE(ring[1], 8u);

	/* The 64-bit entry point still maps where it always did. */
	unsigned long ctx = 0;
	ASSERT_EQ(ukern_io_setup(8, &ctx), 0);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}

TEST_F(AioCompatTest, SetupRefusesWhatTheNativeOneRefuses)
{
	u32 ctx32 = 5;

	EXPECT_EQ(compat_sys_io_setup(8, &ctx32), -EINVAL);
	ctx32 = 0;
	EXPECT_EQ(compat_sys_io_setup(0, &ctx32), -EINVAL);
	EXPECT_EQ(compat_sys_io_setup(8, (u32 *)8), -EFAULT);
	EXPECT_EQ(ctx32, 0u);
}

TEST_F(AioCompatTest, SubmitReadsAnArrayOf32BitPointers)
{
	ASSERT_EQ(compat_sys_io_setup(8, &m_->ctx32), 0);
	Prep(0, IOCB_CMD_PREAD, m_->buf[0], 16, 0);
	Prep(1, IOCB_CMD_PREAD, m_->buf[1], 16, 16);
	ASSERT_EQ(compat_sys_io_submit(m_->ctx32, 2, m_->iocbp), 2);

	m_->ts32 = { 5, 0 };
	ASSERT_EQ(sys_io_getevents_time32(m_->ctx32, 2, 4, m_->events, &m_->ts32), 2);
	for (int i = 0; i < 2; i++) {
		struct io_event *ev = &m_->events[i];
		int slot = (int)ev->data - 10;

		ASSERT_TRUE(slot == 0 || slot == 1);
		EXPECT_EQ(ev->obj, (u64)(uintptr_t)&m_->iocbs[slot]);
		EXPECT_EQ(ev->res, 16);
		EXPECT_EQ(memcmp(m_->buf[slot], data_ + 16 * slot, 16), 0);
	}

	EXPECT_EQ(compat_sys_io_submit(m_->ctx32, -1, m_->iocbp), -EINVAL);
	EXPECT_EQ(compat_sys_io_submit(m_->ctx32, 1, (compat_uptr_t *)8), -EFAULT);
	EXPECT_EQ(compat_sys_io_submit(0x1000, 1, m_->iocbp), -EINVAL);
	/* A pointer in the array that leads nowhere. */
	m_->iocbp[0] = 8;
	EXPECT_EQ(compat_sys_io_submit(m_->ctx32, 1, m_->iocbp), -EFAULT);
}

TEST_F(AioCompatTest, VectoredReadTakesCompatIovecs)
{
	ASSERT_EQ(compat_sys_io_setup(8, &m_->ctx32), 0);
	m_->vec[0] = { Low(m_->buf[0]), 5 };
	m_->vec[1] = { Low(m_->buf[1]), 7 };
	Prep(0, IOCB_CMD_PREADV, m_->vec, 2, 3);
	ASSERT_EQ(compat_sys_io_submit(m_->ctx32, 1, m_->iocbp), 1);
	m_->ts32 = { 5, 0 };
	ASSERT_EQ(sys_io_getevents_time32(m_->ctx32, 1, 1, m_->events, &m_->ts32), 1);
	EXPECT_EQ(m_->events[0].res, 12);
	EXPECT_EQ(memcmp(m_->buf[0], data_ + 3, 5), 0);
	EXPECT_EQ(memcmp(m_->buf[1], data_ + 8, 7), 0);

	/* A length past 2 GiB is negative to a 32-bit task: -EINVAL. */
	m_->vec[1].iov_len = 0x80000000u;
	EXPECT_EQ(compat_sys_io_submit(m_->ctx32, 1, m_->iocbp), -EINVAL);
}

TEST_F(AioCompatTest, GeteventsWith32BitTimeAndCompatSigsets)
{
	ASSERT_EQ(compat_sys_io_setup(8, &m_->ctx32), 0);
	const struct __compat_aio_sigset *csig = (const struct __compat_aio_sigset *)&m_->csig;

	/* Nothing in flight: each call times out empty. */
	m_->ts32 = { 0, 1000 };
	EXPECT_EQ(sys_io_getevents_time32(m_->ctx32, 1, 4, m_->events, &m_->ts32), 0);
	EXPECT_EQ(compat_sys_io_pgetevents(m_->ctx32, 1, 4, m_->events, &m_->ts32, nullptr), 0);

	sigset_t blocked;
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR2);
	memcpy(&m_->sigmask, &blocked, sizeof(m_->sigmask));
	m_->csig = { Low(&m_->sigmask), 8 };
	EXPECT_EQ(compat_sys_io_pgetevents(m_->ctx32, 1, 4, m_->events, &m_->ts32, csig), 0);
	struct __kernel_timespec ts64 = { 0, 1000 };
	EXPECT_EQ(compat_sys_io_pgetevents_time64(m_->ctx32, 1, 4, m_->events, &ts64, csig), 0);

	struct __aio_sigset nsig = { (const sigset_t *)&m_->sigmask, 8 };
	EXPECT_EQ(sys_io_pgetevents_time32(m_->ctx32, 1, 4, m_->events, &m_->ts32,
					   (const struct __aio_sigset *)&nsig),
		  0);

	/* The kernel's errors: a sigset of the wrong size, unreadable memory. */
	m_->csig.sigsetsize = 4;
	EXPECT_EQ(compat_sys_io_pgetevents(m_->ctx32, 1, 4, m_->events, &m_->ts32, csig), -EINVAL);
	EXPECT_EQ(compat_sys_io_pgetevents_time64(m_->ctx32, 1, 4, m_->events, &ts64, csig),
		  -EINVAL);
	m_->csig = { 8, 8 };
	EXPECT_EQ(compat_sys_io_pgetevents(m_->ctx32, 1, 4, m_->events, &m_->ts32, csig), -EFAULT);
	EXPECT_EQ(sys_io_getevents_time32(m_->ctx32, 1, 4, m_->events, (struct old_timespec32 *)8),
		  -EFAULT);
	EXPECT_EQ(compat_sys_io_pgetevents_time64(m_->ctx32, 1, 4, m_->events,
						  (struct __kernel_timespec *)8, nullptr),
		  -EFAULT);
	EXPECT_EQ(sys_io_getevents_time32(m_->ctx32, 2, 1, m_->events, &m_->ts32), -EINVAL);
}

} // namespace
