// SPDX-License-Identifier: GPL-2.0-only
//
// aio on an emulated block device: io_submit -> def_blk_fops -> bio ->
// blk-mq tags -> null_blk, completed by the device's irqmode (inline,
// softirq, timer) -> aio_complete -> io_getevents.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/clock.h>

#include "../../blk/blk-mq.h"
#include "blkdev_testlib.h"
#include "testmain.h"

namespace
{

using blkdevtest::AlignedBuf;
using blkdevtest::kBs;
using blkdevtest::Prep;
using blkdevtest::Reap;

class AioBlkdevTest : public ::testing::TestWithParam<int>
{
      protected:
	void SetUp() override
	{
		null_blk_reset_module_params();
		ASSERT_EQ(ukern_io_setup(256, &ctx_), 0);
	}
	void TearDown() override
	{
		if (ctx_) {
			EXPECT_EQ(ukern_io_destroy(ctx_), 0);
		}
		if (fd_ >= 0) {
			EXPECT_EQ(uk::aio_close_blkdev(fd_), 0);
		}
		if (dev_)
			nullb_group_drop(dev_);
		if (kblockd_workqueue)
			flush_workqueue(kblockd_workqueue);
		null_blk_reset_module_params();
		uk::aio::quiesce();
		EXPECT_EQ(uk::aio::nr_live_reqs(), 0);
	}
	// A configfs device "aioblk" with the given irqmode: 16 MiB, memory backed.
	void Make(int irqmode, const char *bs = "4096")
	{
		dev_ = nullb_group_make("aioblk");
		ASSERT_FALSE(IS_ERR_OR_NULL(dev_));
		std::string irq = std::to_string(irqmode);
		ASSERT_GT(nullb_attr_store(dev_, "irqmode", irq.c_str()), 0);
		ASSERT_GT(nullb_attr_store(dev_, "size", "16"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "blocksize", bs), 0);
		ASSERT_GT(nullb_attr_store(dev_, "memory_backed", "1"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "completion_nsec", "20000"), 0);
		ASSERT_GT(nullb_attr_store(dev_, "power", "1"), 0);
		fd_ = uk::aio_open_blkdev("/dev/ukern/aioblk", O_RDWR | O_DIRECT);
		ASSERT_GE(fd_, 0);
	}
	unsigned long ctx_ = 0;
	int fd_ = -1;
	struct nullb_device *dev_ = nullptr;
};

TEST_P(AioBlkdevTest, WriteThenReadBackIntegrity)
{
	// 512-byte blocks, so that half-page vector segments are whole blocks.
	ASSERT_NO_FATAL_FAILURE(Make(GetParam(), "512"));
	constexpr int kN = 64;
	AlignedBuf wbuf(kN * kBs), rbuf(kN * kBs);
	for (size_t i = 0; i < kN * kBs; i++)
		wbuf.p[i] = (unsigned char)(i * 7 + i / kBs);
	memset(rbuf.p, 0xee, kN * kBs);

	// Writes at scattered block offsets (block i goes to block 3*i + 1).
	std::vector<struct iocb> cbs(kN);
	std::vector<struct iocb *> ptrs(kN);
	for (int i = 0; i < kN; i++) {
		Prep(&cbs[i], fd_, IOCB_CMD_PWRITE, wbuf.p + i * kBs, kBs, (3LL * i + 1) * kBs, i);
		ptrs[i] = &cbs[i];
	}
	ASSERT_EQ(ukern_io_submit(ctx_, kN, ptrs.data()), kN);
	auto ev = Reap(ctx_, kN);
	ASSERT_EQ((int)ev.size(), kN);
	std::vector<bool> seen(kN);
	for (auto &e : ev) {
		EXPECT_EQ(e.res, (long)kBs);
		ASSERT_LT(e.data, (uint64_t)kN);
		EXPECT_FALSE(seen[e.data]);
		seen[e.data] = true;
		EXPECT_EQ(e.obj, (uint64_t)(uintptr_t)&cbs[e.data]);
	}

	// Read back with single reads (even blocks) and two-vector reads (odd).
	std::vector<struct iovec> iov(2 * kN);
	for (int i = 0; i < kN; i++) {
		if (i % 2 == 0) {
			Prep(&cbs[i], fd_, IOCB_CMD_PREAD, rbuf.p + i * kBs, kBs,
			     (3LL * i + 1) * kBs, i);
		} else {
			iov[2 * i] = { rbuf.p + i * kBs, kBs / 2 };
			iov[2 * i + 1] = { rbuf.p + i * kBs + kBs / 2, kBs / 2 };
			Prep(&cbs[i], fd_, IOCB_CMD_PREADV, &iov[2 * i], 2, (3LL * i + 1) * kBs, i);
		}
	}
	ASSERT_EQ(ukern_io_submit(ctx_, kN, ptrs.data()), kN);
	ev = Reap(ctx_, kN);
	ASSERT_EQ((int)ev.size(), kN);
	for (auto &e : ev)
		EXPECT_EQ(e.res, (long)kBs);
	EXPECT_EQ(memcmp(wbuf.p, rbuf.p, kN * kBs), 0);

	// Never-written blocks read as zeroes.
	memset(rbuf.p, 0xee, kBs);
	Prep(&cbs[0], fd_, IOCB_CMD_PREAD, rbuf.p, kBs, 0, 0);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, ptrs.data()), 1);
	ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)kBs);
	for (size_t i = 0; i < kBs; i++)
		ASSERT_EQ(rbuf.p[i], 0) << i;
}

// block/fops.c's answers, delivered as events (io_submit itself succeeds).
TEST_P(AioBlkdevTest, EdgeCasesAsEvents)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam()));
	const long long size = 16LL << 20;
	AlignedBuf buf(2 * kBs);
	struct iocb cb[6];
	struct iocb *p[6] = { &cb[0], &cb[1], &cb[2], &cb[3], &cb[4], &cb[5] };
	Prep(&cb[0], fd_, IOCB_CMD_PREAD, buf.p, kBs, 100, 0);	 // misaligned offset
	Prep(&cb[1], fd_, IOCB_CMD_PREAD, buf.p + 8, kBs, 0, 1); // misaligned buffer
	Prep(&cb[2], fd_, IOCB_CMD_PREAD, buf.p, kBs, size, 2);	 // at the end: 0
	Prep(&cb[3], fd_, IOCB_CMD_PWRITE, buf.p, kBs, size,
	     3); // at the end: ENOSPC
	Prep(&cb[4], fd_, IOCB_CMD_PREAD, buf.p, 2 * kBs, size - kBs,
	     4);					     // truncated
	Prep(&cb[5], fd_, IOCB_CMD_FSYNC, nullptr, 0, 0, 5); // flush
	ASSERT_EQ(ukern_io_submit(ctx_, 6, p), 6);
	auto ev = Reap(ctx_, 6);
	ASSERT_EQ(ev.size(), 6u);
	long res[6] = {};
	for (auto &e : ev)
		res[e.data] = (long)e.res;
	EXPECT_EQ(res[0], -EINVAL);
	EXPECT_EQ(res[1], -EINVAL);
	EXPECT_EQ(res[2], 0);
	EXPECT_EQ(res[3], -ENOSPC);
	EXPECT_EQ(res[4], (long)kBs);
	EXPECT_EQ(res[5], 0);
	// Each vector segment must be whole logical blocks (bdev_iter_is_aligned).
	struct iovec half[2] = { { buf.p, kBs / 2 }, { buf.p + kBs / 2, kBs / 2 } };
	Prep(&cb[0], fd_, IOCB_CMD_PREADV, half, 2, 0, 0);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, p), 1);
	ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, -EINVAL);
	// The placeholder descriptor reports the device's size.
	struct stat st;
	ASSERT_EQ(fstat(fd_, &st), 0);
	EXPECT_EQ(st.st_size, size);
}

// Without O_DIRECT an unaligned buffer is bounced (the kernel would use the
// page cache); with O_DIRECT it is -EINVAL (EdgeCasesAsEvents).
TEST_P(AioBlkdevTest, BufferedOpenBouncesUnalignedBuffers)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam(), "512"));
	int fd = uk::aio_open_blkdev("aioblk", O_RDWR);
	ASSERT_GE(fd, 0);
	std::vector<unsigned char> w(3 * kBs), r(3 * kBs, 0xee);
	for (size_t i = 0; i < w.size(); i++)
		w[i] = (unsigned char)(i * 13 + 5);
	struct iovec wv[2] = { { w.data() + 3, 1000 }, { w.data() + 1100, 2 * kBs - 1000 } };
	struct iovec rv[2] = { { r.data() + 5, 1500 }, { r.data() + 1600, 2 * kBs - 1500 } };
	struct iocb cb, *p = &cb;
	Prep(&cb, fd, IOCB_CMD_PWRITEV, wv, 2, 8 * kBs, 1);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, &p), 1);
	auto ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)(2 * kBs));
	Prep(&cb, fd, IOCB_CMD_PREADV, rv, 2, 8 * kBs, 2);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, &p), 1);
	ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)(2 * kBs));
	EXPECT_EQ(memcmp(w.data() + 3, r.data() + 5, 1000), 0);
	EXPECT_EQ(memcmp(w.data() + 1100, r.data() + 1005, 500), 0);
	EXPECT_EQ(memcmp(w.data() + 1600, r.data() + 1600, 2 * kBs - 1500), 0);
	EXPECT_EQ(r[4], 0xee);
	EXPECT_EQ(r[1600 + 2 * kBs - 1500], 0xee);
	// Lengths must still be whole blocks.
	Prep(&cb, fd, IOCB_CMD_PREAD, r.data() + 1, 100, 0, 3);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, &p), 1);
	ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, -EINVAL);
	EXPECT_EQ(uk::aio_close_blkdev(fd), 0);
}

// References to the device other than the driver's own.
int DiskOpeners(const char *name)
{
	struct block_device *b = uk::blkdev_lookup(name);
	int n = atomic_read(&b->bd_disk->uk_refs) - 2; /* the driver's, ours */
	uk::blkdev_put(b);
	return n;
}

// Closing the device with a request in flight: as in the kernel, the request
// holds the file (f_count), so the device goes at its completion, not at
// the close (TSan caught the completion's fput() on a freed file).
// A buffer the device cannot reach (unmapped, or read-only for a read)
// ends the request with -EFAULT, where the kernel fails to pin its pages;
// the device is left as it was and the rest of the batch runs.
TEST_P(AioBlkdevTest, UnreachableBufferIsEfault)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam()));
	// Page 0 readable and writable, page 1 read-only, page 2 unmapped.
	void *m =
		mmap(nullptr, 3 * kBs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(m, MAP_FAILED);
	unsigned char *pg = static_cast<unsigned char *>(m);
	memset(pg, 0x5a, 2 * kBs);
	ASSERT_EQ(mprotect(pg + kBs, kBs, PROT_READ), 0);
	ASSERT_EQ(munmap(pg + 2 * kBs, kBs), 0);

	struct iocb cb[4];
	struct iocb *p[4] = { &cb[0], &cb[1], &cb[2], &cb[3] };
	Prep(&cb[0], fd_, IOCB_CMD_PWRITE, pg + kBs, 2 * kBs, 0, 0); // runs into the hole
	Prep(&cb[1], fd_, IOCB_CMD_PREAD, pg, 2 * kBs, 0, 1);	     // into read-only memory
	Prep(&cb[2], fd_, IOCB_CMD_PWRITE, pg + kBs, kBs, kBs,
	     2); // read-only is fine to write from
	Prep(&cb[3], fd_, IOCB_CMD_PREAD, pg + 2 * kBs, kBs, 0, 3); // wholly unmapped
	ASSERT_EQ(ukern_io_submit(ctx_, 4, p), 4);
	auto ev = Reap(ctx_, 4);
	ASSERT_EQ(ev.size(), 4u);
	long res[4] = {};
	for (auto &e : ev)
		res[e.data] = (long)e.res;
	EXPECT_EQ(res[0], -EFAULT);
	EXPECT_EQ(res[1], -EFAULT);
	EXPECT_EQ(res[2], (long)kBs);
	EXPECT_EQ(res[3], -EFAULT);

	// Block 0 was never written; block 1 holds the read-only page's bytes.
	AlignedBuf r(2 * kBs);
	memset(r.p, 0xee, 2 * kBs);
	Prep(&cb[0], fd_, IOCB_CMD_PREAD, r.p, 2 * kBs, 0, 0);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, p), 1);
	ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)(2 * kBs));
	for (size_t i = 0; i < kBs; i++)
		ASSERT_EQ(r.p[i], 0) << i;
	for (size_t i = kBs; i < 2 * kBs; i++)
		ASSERT_EQ(r.p[i], 0x5a) << i;
	// The read-only page is untouched by the refused read.
	for (size_t i = 0; i < kBs; i++)
		ASSERT_EQ(pg[kBs + i], 0x5a) << i;
	munmap(pg, 2 * kBs);
}

TEST_F(AioBlkdevTest, CloseWithARequestInFlightKeepsTheFileUntilItEnds)
{
	uk::clock_use_virtual();
	uk::softirq_set_threads(false);
	ASSERT_NO_FATAL_FAILURE(Make(2));
	EXPECT_EQ(DiskOpeners("aioblk"), 1);
	AlignedBuf buf(kBs);
	memset(buf.p, 0x5a, kBs);
	struct iocb cb, *p = &cb;
	Prep(&cb, fd_, IOCB_CMD_PWRITE, buf.p, kBs, 0, 7);
	ASSERT_EQ(ukern_io_submit(ctx_, 1, &p), 1);
	EXPECT_EQ(uk::aio_close_blkdev(fd_), 0);
	fd_ = -1;
	EXPECT_EQ(DiskOpeners("aioblk"), 1) << "the in-flight request's file";
	uk::virtual_clock_advance(20000); /* completion_nsec */
	auto ev = Reap(ctx_, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].data, 7u);
	EXPECT_EQ(ev[0].res, (long)kBs);
	uk::aio::quiesce();
	EXPECT_EQ(DiskOpeners("aioblk"), 0);
	uk::clock_use_host();
}

// Several submitters on one context; each waits for its own completions.
TEST_P(AioBlkdevTest, ConcurrentSubmitters)
{
	ASSERT_NO_FATAL_FAILURE(Make(GetParam(), "512"));
	const unsigned nthreads = std::max(2u, std::min(4u, uk::testing::StressThreads()));
	constexpr int kPerThread = 200, kDepth = 8;
	std::vector<std::thread> th;
	std::atomic<long> bad{ 0 };
	for (unsigned t = 0; t < nthreads; t++) {
		th.emplace_back([&, t] {
			unsigned long ctx = 0;
			if (ukern_io_setup(kDepth, &ctx)) {
				bad++;
				return;
			}
			AlignedBuf b(kDepth * 512);
			struct iocb cb[kDepth];
			struct iocb *p[kDepth];
			for (int done = 0; done < kPerThread; done += kDepth) {
				for (int i = 0; i < kDepth; i++) {
					long long blk = t * 4096 + (done + i) % 4096;
					memset(b.p + i * 512, (int)(blk & 0xff), 512);
					Prep(&cb[i], fd_,
					     (i & 1) ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE,
					     b.p + i * 512, 512, blk * 512, i);
					p[i] = &cb[i];
				}
				if (ukern_io_submit(ctx, kDepth, p) != kDepth) {
					bad++;
					break;
				}
				auto ev = Reap(ctx, kDepth);
				for (auto &e : ev)
					if (e.res != 512)
						bad++;
				if ((int)ev.size() != kDepth)
					bad++;
			}
			if (ukern_io_destroy(ctx))
				bad++;
		});
	}
	for (auto &x : th)
		x.join();
	EXPECT_EQ(bad.load(), 0);
}

std::string IrqmodeName(const ::testing::TestParamInfo<int> &i)
{
	static const char *const kNames[] = { "None", "Softirq", "Timer" };
	return kNames[i.param];
}

INSTANTIATE_TEST_SUITE_P(Irqmode, AioBlkdevTest, ::testing::Values(0, 1, 2), IrqmodeName);

TEST(AioBlkdevOpenTest, Errors)
{
	EXPECT_EQ(uk::aio_open_blkdev("nosuchdev", O_RDWR), -ENOENT);
	EXPECT_EQ(uk::aio_close_blkdev(-1), -EBADF);
	EXPECT_EQ(uk::aio_close_blkdev(0), -EBADF);
	EXPECT_FALSE(uk::aio_is_blkdev(0));
}

// A read-only open refuses writes at io_submit (-EBADF), as the kernel does.
TEST(AioBlkdevOpenTest, ReadOnlyRefusesWrites)
{
	null_blk_reset_module_params();
	ASSERT_EQ(null_blk_module_params("gb=1 irqmode=0"), 0);
	ASSERT_EQ(null_init(), 0);
	int fd = uk::aio_open_blkdev("nullb0", O_RDONLY);
	ASSERT_GE(fd, 0);
	EXPECT_TRUE(uk::aio_is_blkdev(fd));
	unsigned long ctx = 0;
	ASSERT_EQ(ukern_io_setup(4, &ctx), 0);
	AlignedBuf buf(kBs);
	struct iocb cb, *p = &cb;
	Prep(&cb, fd, IOCB_CMD_PWRITE, buf.p, kBs, 0, 0);
	EXPECT_EQ(ukern_io_submit(ctx, 1, &p), -EBADF);
	Prep(&cb, fd, IOCB_CMD_PREAD, buf.p, kBs, 0, 0);
	EXPECT_EQ(ukern_io_submit(ctx, 1, &p), 1);
	auto ev = Reap(ctx, 1);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].res, (long)kBs);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
	EXPECT_EQ(uk::aio_close_blkdev(fd), 0);
	EXPECT_FALSE(uk::aio_is_blkdev(fd));
	null_exit();
	null_blk_reset_module_params();
}

} // namespace
