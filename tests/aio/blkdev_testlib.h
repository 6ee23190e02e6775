// SPDX-License-Identifier: GPL-2.0-only
// What the tests of aio on ukern's block devices share (blkdev_test.cc for
// fs/aio.c, aio_v26_test.cc for the 2.6 one): block-aligned buffers, an
// iocb filled for one request, and reaping a known number of events.
#ifndef UKERN_TESTS_AIO_BLKDEV_TESTLIB_H_
#define UKERN_TESTS_AIO_BLKDEV_TESTLIB_H_

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>

namespace blkdevtest
{

constexpr size_t kBs = 4096;

// n bytes aligned to kBs, for O_DIRECT.
struct AlignedBuf {
	unsigned char *p;
	explicit AlignedBuf(size_t n) : p(static_cast<unsigned char *>(aligned_alloc(kBs, n))) {}
	~AlignedBuf()
	{
		free(p);
	}
	AlignedBuf(const AlignedBuf &) = delete;
	AlignedBuf &operator=(const AlignedBuf &) = delete;
};

inline void Prep(struct iocb *cb, int fd, uint16_t op, void *buf, size_t len, long long off,
		 uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = (uint32_t)fd;
	cb->aio_lio_opcode = op;
	cb->aio_buf = (uint64_t)(uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
	cb->aio_data = data;
}

// Reaps exactly n events through ukern_io_getevents() (bounded: 10 s each
// call); fewer come back, with a failed expectation, when a call returns
// none.
inline std::vector<struct io_event> Reap(unsigned long ctx, long n)
{
	std::vector<struct io_event> ev(n);
	long got = 0;

	while (got < n) {
		struct timespec ts = { 10, 0 };
		long r = ukern_io_getevents(ctx, n - got, n - got, ev.data() + got, &ts);
		EXPECT_GT(r, 0) << "io_getevents " << r;
		if (r <= 0)
			break;
		got += r;
	}
	ev.resize(got);
	return ev;
}

} // namespace blkdevtest

#endif // UKERN_TESTS_AIO_BLKDEV_TESTLIB_H_
