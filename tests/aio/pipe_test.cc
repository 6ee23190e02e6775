// SPDX-License-Identifier: GPL-2.0-only
// ukern pipes of the 2.6 era (aio/pipe.cc): read/write/close semantics,
// O_NONBLOCK, EOF and EPIPE, PIPE_BUF atomicity, blocking and wake-ups.
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio_v26.h>
#include <uk/linux/pipe_fs_i.h>

#include "pipe_testlib.h"
#include "testmain.h"

namespace
{

namespace a26 = uk::aio26;

class PipeTest : public ::testing::Test, protected PipeFds
{
      protected:
	void TearDown() override
	{
		CloseAll();
		a26::flush_aio_wq();
		EXPECT_EQ(a26::nr_live_pipes(), 0);
	}
};

TEST_F(PipeTest, WriteThenRead)
{
	int p[2];
	Pipe(p);
	EXPECT_TRUE(a26::fd_is_ours(p[0]));
	EXPECT_TRUE(a26::fd_is_ours(p[1]));
	EXPECT_EQ(a26::sys_write(p[1], "hello", 5), 5);
	char buf[16];
	EXPECT_EQ(a26::sys_read(p[0], buf, 3), 3);
	EXPECT_EQ(memcmp(buf, "hel", 3), 0);
	EXPECT_EQ(a26::sys_read(p[0], buf, sizeof(buf)), 2);
	EXPECT_EQ(memcmp(buf, "lo", 2), 0);
	EXPECT_EQ(a26::sys_read(p[0], buf, 0), 0);
}

TEST_F(PipeTest, WrongEndAndBadDescriptors)
{
	int p[2];
	Pipe(p);
	char c = 0;
	EXPECT_EQ(a26::sys_read(p[1], &c, 1), -EBADF);
	EXPECT_EQ(a26::sys_write(p[0], &c, 1), -EBADF);
	EXPECT_EQ(a26::sys_read(0x7fff, &c, 1), -EBADF);
	EXPECT_EQ(a26::sys_close(-1), -EBADF);
	int q[2];
	EXPECT_EQ(a26::do_pipe2(q, O_APPEND), -EINVAL);
}

TEST_F(PipeTest, NonblockingEmptyAndFull)
{
	int p[2];
	Pipe(p, O_NONBLOCK);
	char c;
	EXPECT_EQ(a26::sys_read(p[0], &c, 1), -EAGAIN);
	std::vector<char> fill(PIPE_SIZE, 'f');
	EXPECT_EQ(a26::sys_write(p[1], fill.data(), fill.size()), (ssize_t)PIPE_SIZE);
	EXPECT_EQ(a26::sys_write(p[1], "x", 1), -EAGAIN);
	EXPECT_EQ(a26::set_nonblock(p[0], false), 0);
	EXPECT_EQ(a26::sys_read(p[0], fill.data(), 10), 10);
}

// A write of at most PIPE_BUF bytes goes in whole or not at all.
TEST_F(PipeTest, SmallWritesAreAtomic)
{
	int p[2];
	Pipe(p, O_NONBLOCK);
	std::vector<char> part(PIPE_SIZE - 10, 'a');
	ASSERT_EQ(a26::sys_write(p[1], part.data(), part.size()), (ssize_t)part.size());
	char twenty[20] = {};
	EXPECT_EQ(a26::sys_write(p[1], twenty, sizeof(twenty)), -EAGAIN);
	// A larger write than PIPE_BUF is not atomic: it takes what fits.
	std::vector<char> big(PIPE_BUF + 1, 'b');
	char drain[4096];
	ASSERT_EQ(a26::sys_read(p[0], drain, sizeof(drain)), (ssize_t)part.size());
	ASSERT_EQ(a26::sys_write(p[1], "z", 1), 1);
	EXPECT_EQ(a26::sys_write(p[1], big.data(), big.size()), (ssize_t)PIPE_SIZE - 1);
}

TEST_F(PipeTest, EofAndEpipe)
{
	int p[2];
	Pipe(p);
	ASSERT_EQ(a26::sys_write(p[1], "ab", 2), 2);
	Close(p[1]);
	char buf[4];
	EXPECT_EQ(a26::sys_read(p[0], buf, sizeof(buf)), 2); // data before EOF
	EXPECT_EQ(a26::sys_read(p[0], buf, sizeof(buf)), 0);
	int q[2];
	Pipe(q);
	Close(q[0]);
	EXPECT_EQ(a26::sys_write(q[1], "x", 1), -EPIPE);
}

TEST_F(PipeTest, BlockingReadWokenByWriter)
{
	int p[2];
	Pipe(p);
	std::atomic<struct task_struct *> task{ nullptr };
	std::atomic<ssize_t> got{ -1 };
	char buf[8];
	std::thread reader([&] {
		task = current;
		got = a26::sys_read(p[0], buf, sizeof(buf));
	});
	ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
	EXPECT_EQ(got.load(), -1);
	ASSERT_EQ(a26::sys_write(p[1], "wake", 4), 4);
	reader.join();
	EXPECT_EQ(got.load(), 4);
	EXPECT_EQ(memcmp(buf, "wake", 4), 0);
}

TEST_F(PipeTest, BlockingReadSeesEofWhenWriterCloses)
{
	int p[2];
	Pipe(p);
	std::atomic<struct task_struct *> task{ nullptr };
	std::atomic<ssize_t> got{ -1 };
	std::thread reader([&] {
		task = current;
		char buf[8];
		got = a26::sys_read(p[0], buf, sizeof(buf));
	});
	ASSERT_TRUE(uk::testing::WaitTaskBlocked(task));
	Close(p[1]);
	reader.join();
	EXPECT_EQ(got.load(), 0);
}

// A write larger than the buffer blocks until the reader drains it; the
// bytes arrive whole and in order.
TEST_F(PipeTest, LargeWriteStreamsInOrder)
{
	int p[2];
	Pipe(p);
	std::string data;
	for (int i = 0; i < 5 * (int)PIPE_SIZE; i++)
		data.push_back((char)('a' + i % 26));
	std::atomic<ssize_t> wrote{ -1 };
	std::thread writer([&] { wrote = a26::sys_write(p[1], data.data(), data.size()); });
	std::string out;
	char buf[1000];
	while (out.size() < data.size()) {
		ssize_t n = a26::sys_read(p[0], buf, sizeof(buf));
		ASSERT_GT(n, 0);
		out.append(buf, (size_t)n);
	}
	writer.join();
	EXPECT_EQ(wrote.load(), (ssize_t)data.size());
	EXPECT_EQ(out, data);
}

TEST_F(PipeTest, ManyWritersOneReader)
{
	int p[2];
	Pipe(p);
	const unsigned n = uk::testing::StressThreads();
	const int per = 500;
	std::vector<std::thread> writers;
	for (unsigned i = 0; i < n; i++)
		writers.emplace_back([&, i] {
			char rec[8];
			memset(rec, 'A' + (int)i, sizeof(rec));
			for (int k = 0; k < per; k++)
				ASSERT_EQ(a26::sys_write(p[1], rec, sizeof(rec)), 8);
		});
	// Records of 8 bytes (<= PIPE_BUF) never interleave.
	std::vector<int> count(n, 0);
	std::string pending;
	char buf[512];
	long records = 0;
	while (records < (long)n * per) {
		ssize_t r = a26::sys_read(p[0], buf, sizeof(buf));
		ASSERT_GT(r, 0);
		pending.append(buf, (size_t)r);
		while (pending.size() >= 8) {
			for (int j = 1; j < 8; j++)
				ASSERT_EQ(pending[j], pending[0]);
			count[pending[0] - 'A']++;
			pending.erase(0, 8);
			records++;
		}
	}
	for (auto &t : writers)
		t.join();
	for (unsigned i = 0; i < n; i++)
		EXPECT_EQ(count[i], per);
}

} // namespace
