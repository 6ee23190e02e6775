// SPDX-License-Identifier: GPL-2.0-only
// The user copies under the sanitizers (<uk/linux/instrumented.h>): the asm
// of copy_to_user()/copy_from_user()/get_user()/put_user() is checked as if
// the compiler had instrumented it. Under TSan, an io_event written after
// the ring's tail is published races with a reaper's copy_to_user(), and
// TSan reports it on every run; under ASan, a copy into a freed buffer is a
// heap-use-after-free report. Each report comes from a death-test child.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/aio_abi.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <uk/linux/barrier.h>
#include <uk/linux/compiler.h>

#include "../../aio/usercopy.h"

namespace
{

#ifdef UK_ASAN
// Frees p and returns a copy of it that went through an empty asm, so that
// g++'s -Wuse-after-free cannot tie the use the test makes of it on purpose
// to the free.
template <class T> T *Freed(T *p)
{
	T *q = p;

	asm volatile("" : "+r"(q));
	free(p);
	return q;
}
#endif

#ifdef UK_TSAN
// A one-slot completion ring: the completer fills the event and publishes
// the tail; the reaper waits for the tail and copies the event out.
struct MiniRing {
	unsigned tail;
	struct io_event ev;
};

MiniRing ring;

// The reaper: once it sees the tail, it copies the event to "user" memory
// the way aio_read_events_ring() does.
void Reap(struct io_event *out)
{
	while (!smp_load_acquire(&ring.tail)) {
	}
	ASSERT_EQ(copy_to_user(out, &ring.ev, sizeof(*out)), 0UL);
}

// aio_complete()'s order (event, then release of the tail), or the ordering
// bug: the tail published first, the event written after it.
void CompleteAndReap(bool event_after_tail)
{
	struct io_event out {
	};
	std::thread reaper(Reap, &out);
	struct io_event ev {
	};
	ev.data = 1;
	ev.res = 4096;
	if (event_after_tail) {
		smp_store_release(&ring.tail, 1U);
		ring.ev = ev;
	} else {
		ring.ev = ev;
		smp_store_release(&ring.tail, 1U);
	}
	reaper.join();
	fflush(stderr);
	_exit(0);
}
#endif

class InstrumentedTest : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		GTEST_FLAG_SET(death_test_style, "threadsafe");
		uk::aio::usercopy_init();
	}
};

TEST_F(InstrumentedTest, EventAfterTailRacesWithReaper)
{
#ifndef UK_TSAN
	GTEST_SKIP() << "TSan build only";
#else
	// TSan turns the child's exit status into its exitcode (66) after a report.
	EXPECT_EXIT(
		CompleteAndReap(true), [](int status) { return WIFEXITED(status); },
		"ThreadSanitizer: data race");
#endif
}

TEST_F(InstrumentedTest, EventBeforeTailIsNoRace)
{
#ifndef UK_TSAN
	GTEST_SKIP() << "TSan build only";
#else
	EXPECT_EXIT(CompleteAndReap(false), ::testing::ExitedWithCode(0),
		    ::testing::Not(::testing::HasSubstr("ThreadSanitizer")));
#endif
}

TEST_F(InstrumentedTest, CopyToFreedUserBufferIsReported)
{
#ifndef UK_ASAN
	GTEST_SKIP() << "ASan build only";
#else
	EXPECT_DEATH(
		{
			auto *buf = static_cast<struct io_event *>(malloc(sizeof(struct io_event)));
			struct io_event ev {
			};
			buf = Freed(buf);
			(void)copy_to_user(buf, &ev, sizeof(ev));
		},
		"heap-use-after-free");
#endif
}

TEST_F(InstrumentedTest, CopyFromFreedUserBufferIsReported)
{
#ifndef UK_ASAN
	GTEST_SKIP() << "ASan build only";
#else
	EXPECT_DEATH(
		{
			auto *buf = static_cast<struct iocb *>(malloc(sizeof(struct iocb)));
			struct iocb cb;
			buf = Freed(buf);
			(void)copy_from_user(&cb, buf, sizeof(cb));
		},
		"heap-use-after-free");
#endif
}

TEST_F(InstrumentedTest, PutUserIntoFreedBufferIsReported)
{
#ifndef UK_ASAN
	GTEST_SKIP() << "ASan build only";
#else
	EXPECT_DEATH(
		{
			auto *key = static_cast<__u32 *>(malloc(sizeof(__u32)));
			key = Freed(key);
			(void)put_user(0U, key);
		},
		"heap-use-after-free");
#endif
}

// Every build: the checks cover only the bytes a copy moved, so a copy that
// faults partway returns the bytes left, and get_user()/put_user() of a bad
// address give -EFAULT, with no report.
TEST_F(InstrumentedTest, FaultingCopiesStillReturnWhatIsLeft)
{
	long page = sysconf(_SC_PAGESIZE);
	void *map =
		mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(map, MAP_FAILED);
	char *p = static_cast<char *>(map);
	ASSERT_EQ(mprotect(p + page, page, PROT_NONE), 0);
	char src[64];
	memset(src, 'x', sizeof(src));
	EXPECT_EQ(copy_to_user(p + page - 16, src, sizeof(src)), sizeof(src) - 16);
	EXPECT_EQ(memcmp(p + page - 16, src, 16), 0);
	EXPECT_EQ(copy_from_user(src, p + page - 8, sizeof(src)), sizeof(src) - 8);
	unsigned v = 7;
	EXPECT_EQ(get_user(v, reinterpret_cast<unsigned *>(p + page)), -EFAULT);
	EXPECT_EQ(v, 0U);
	EXPECT_EQ(put_user(1U, reinterpret_cast<unsigned *>(p + page)), -EFAULT);
	EXPECT_EQ(put_user(5U, reinterpret_cast<unsigned *>(p)), 0);
	EXPECT_EQ(get_user(v, reinterpret_cast<unsigned *>(p)), 0);
	EXPECT_EQ(v, 5U);
	munmap(map, 2 * page);
}

// Copies of every length class (blocks of 32 bytes, words, 4 bytes, the
// rest, rep movsb past 2 KiB) that run into an unmapped page after `ok`
// bytes, for each 4-byte step of `ok` within a few blocks: each returns
// exactly the bytes left past the last whole word or 4-byte piece it could
// move, and the bytes it returns as copied are there.
TEST_F(InstrumentedTest, FaultingCopiesAreExactAtEveryStep)
{
	long page = sysconf(_SC_PAGESIZE);
	void *map =
		mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(map, MAP_FAILED);
	char *p = static_cast<char *>(map);
	ASSERT_EQ(mprotect(p + page, page, PROT_NONE), 0);
	static char src[4096], dst[4096];
	memset(src, 'y', sizeof(src));
	for (unsigned long len : { 36UL, 100UL, 136UL, 2000UL, 3000UL }) {
		for (unsigned long ok = 0; ok < len && ok <= 136; ok += 4) {
			memset(p + page - ok, 0, ok);
			unsigned long left = copy_to_user(p + page - ok, src, len);
			unsigned long done = len - left;
			EXPECT_LE(done, ok) << len << " " << ok;
			if (len <= 2048) {
				EXPECT_EQ(done, ok & ~7UL) << len << " " << ok;
			}
			EXPECT_EQ(memcmp(p + page - ok, src, done), 0) << len << " " << ok;
			memcpy(p + page - ok, src, ok);
			left = copy_from_user(dst, p + page - ok, len);
			done = len - left;
			EXPECT_LE(done, ok) << len << " " << ok;
			if (len <= 2048) {
				EXPECT_EQ(done, ok & ~7UL) << len << " " << ok;
			}
			EXPECT_EQ(memcmp(dst, src, done), 0) << len << " " << ok;
		}
	}
	munmap(map, 2 * page);
}

} // namespace
