// SPDX-License-Identifier: GPL-2.0-only
// An aio-stress-like load on the retry-based 2.6 engine through the
// libaio front end (libukern_aio.so, linked as a program links libaio):
// each thread keeps a window of O_DIRECT requests in flight on
// /dev/ukern/nullb0, resubmitting as each completes, a write stage and
// then a read stage that checks every record. ctest runs it with
// UKERN_CMDLINE=aio.engine=v26 and null_blk.* (see CMakeLists.txt).
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <ukern/libaio.h>

namespace
{

constexpr size_t kRecord = 16384;	// aio-stress's default record is 64 KiB
constexpr int kDepth = 64;		// requests in flight per thread
constexpr int kRecords = 1024;		// per thread and stage: 16 MiB
constexpr long long kStride = 32 << 20; // each thread's region

unsigned Threads()
{
	unsigned n = std::thread::hardware_concurrency();
	return std::max(2u, std::min(4u, n));
}

uint64_t Word(unsigned thread, int record, size_t i)
{
	return ((uint64_t)thread << 48) ^ ((uint64_t)record << 20) ^ i;
}

// Runs one stage: kRecords requests, kDepth in flight. Returns the failures.
long Stage(int fd, unsigned thread, bool write)
{
	io_context_t ctx = nullptr;
	long bad = 0;
	if (io_setup(kDepth, &ctx) != 0)
		return 1;
	std::vector<struct iocb> cbs(kDepth);
	std::vector<unsigned char *> bufs(kDepth);
	for (auto &b : bufs)
		b = static_cast<unsigned char *>(aligned_alloc(4096, kRecord));
	int next = 0, done = 0;
	auto prep = [&](int slot) {
		uint64_t *w = reinterpret_cast<uint64_t *>(bufs[slot]);
		long long off = thread * kStride + (long long)next * kRecord;
		if (write) {
			for (size_t i = 0; i < kRecord / 8; i++)
				w[i] = Word(thread, next, i);
			io_prep_pwrite(&cbs[slot], fd, bufs[slot], kRecord, off);
		} else {
			memset(bufs[slot], 0, kRecord);
			io_prep_pread(&cbs[slot], fd, bufs[slot], kRecord, off);
		}
		cbs[slot].data = reinterpret_cast<void *>((uintptr_t)next);
		next++;
	};
	std::vector<struct iocb *> batch;
	for (int s = 0; s < kDepth && next < kRecords; s++) {
		prep(s);
		batch.push_back(&cbs[s]);
	}
	if (io_submit(ctx, (long)batch.size(), batch.data()) != (int)batch.size())
		bad++;
	struct io_event ev[kDepth];
	while (!bad && done < kRecords) {
		struct timespec ts = { 10, 0 };
		int n = io_getevents(ctx, 1, kDepth, ev, &ts);
		if (n <= 0) {
			bad++;
			break;
		}
		batch.clear();
		for (int e = 0; e < n; e++) {
			int slot = (int)(ev[e].obj - cbs.data());
			int record = (int)(uintptr_t)ev[e].data;
			done++;
			if (ev[e].res != (long)kRecord || ev[e].res2 != 0)
				bad++;
			if (!write) {
				const uint64_t *w = reinterpret_cast<const uint64_t *>(bufs[slot]);
				for (size_t i = 0; i < kRecord / 8; i++)
					if (w[i] != Word(thread, record, i)) {
						bad++;
						break;
					}
			}
			if (next < kRecords) {
				prep(slot);
				batch.push_back(&cbs[slot]);
			}
		}
		if (!batch.empty() &&
		    io_submit(ctx, (long)batch.size(), batch.data()) != (int)batch.size())
			bad++;
	}
	if (io_destroy(ctx) != 0)
		bad++;
	for (auto b : bufs)
		free(b);
	return bad;
}

TEST(AioV26StressTest, DirectWindowsOnNullb)
{
	// The context is a v26 one: io_pgetevents (4.18) is not a system call there.
	io_context_t ctx = nullptr;
	ASSERT_EQ(io_setup(8, &ctx), 0);
	struct io_event ev;
	EXPECT_EQ(io_pgetevents(ctx, 0, 1, &ev, nullptr, nullptr), -ENOSYS);
	EXPECT_EQ(io_destroy(ctx), 0);

	int fd = open("/dev/ukern/nullb0", O_RDWR | O_DIRECT);
	ASSERT_GE(fd, 0) << strerror(errno);
	const unsigned n = Threads();
	for (bool write : { true, false }) {
		std::vector<long> bad(n);
		std::vector<std::thread> th;
		for (unsigned t = 0; t < n; t++)
			th.emplace_back([&, t] { bad[t] = Stage(fd, t, write); });
		for (auto &t : th)
			t.join();
		for (unsigned t = 0; t < n; t++)
			EXPECT_EQ(bad[t], 0)
				<< (write ? "write" : "read") << " stage, thread " << t;
	}
	EXPECT_EQ(close(fd), 0);
}

// io_destroy with a full window of direct requests in flight returns once
// they ended; the context is gone.
TEST(AioV26StressTest, DestroyWithAWindowInFlight)
{
	int fd = open("/dev/ukern/nullb0", O_RDWR | O_DIRECT);
	ASSERT_GE(fd, 0) << strerror(errno);
	io_context_t ctx = nullptr;
	ASSERT_EQ(io_setup(kDepth, &ctx), 0);
	std::vector<struct iocb> cbs(kDepth);
	std::vector<struct iocb *> ptrs(kDepth);
	unsigned char *buf = static_cast<unsigned char *>(aligned_alloc(4096, kDepth * kRecord));
	for (int i = 0; i < kDepth; i++) {
		io_prep_pread(&cbs[i], fd, buf + i * kRecord, kRecord, (long long)i * kRecord);
		ptrs[i] = &cbs[i];
	}
	ASSERT_EQ(io_submit(ctx, kDepth, ptrs.data()), kDepth);
	EXPECT_EQ(io_destroy(ctx), 0);
	struct io_event ev;
	struct timespec ts = { 0, 1 };
	EXPECT_EQ(io_getevents(ctx, 1, 1, &ev, &ts), -EINVAL);
	free(buf);
	EXPECT_EQ(close(fd), 0);
}

} // namespace
