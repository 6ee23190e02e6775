// SPDX-License-Identifier: GPL-2.0-only
// Clocks, jiffies, ktime helpers and delays.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <uk/linux/delay.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/ktime.h>
#include <uk/linux/timekeeping.h>
#include <uk/shim/clock.h>

#include "testmain.h"
#include "time_testlib.h"

namespace {

using uk::testing::VirtualClockTest;
using uk::testing::WaitFor;

class ClockTest : public VirtualClockTest {};

TEST(HostClockTest, MonotonicAndNearHost) {
  ASSERT_FALSE(uk::clock_is_virtual());
  u64 prev = ktime_get_ns();
  for (int i = 0; i < 10000; i++) {
    u64 now = ktime_get_ns();
    ASSERT_GE(now, prev);
    prev = now;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s64 host = ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
  EXPECT_LE(ktime_get(), host + NSEC_PER_SEC);
  EXPECT_GE(ktime_get(), host);
  s64 real = ktime_get_real_seconds();
  EXPECT_NEAR(static_cast<double>(real), static_cast<double>(time(nullptr)),
              2.0);
}

TEST_F(ClockTest, VirtualClockMovesOnlyWhenAdvanced) {
  EXPECT_TRUE(uk::clock_is_virtual());
  EXPECT_EQ(uk::clock_now_ns(), kStart);
  EXPECT_EQ(ktime_get(), static_cast<ktime_t>(kStart));
  EXPECT_EQ(ktime_get_ns(), kStart);
  uk::virtual_clock_advance(123);
  EXPECT_EQ(ktime_get_ns(), kStart + 123);
  uk::virtual_clock_set(kStart + 1000);
  EXPECT_EQ(ktime_get_ns(), kStart + 1000);
  uk::virtual_clock_set(kStart);  // backwards: allowed, fires nothing
  EXPECT_EQ(ktime_get_ns(), kStart);
  struct timespec64 ts;
  ktime_get_ts64(&ts);
  EXPECT_EQ(ts.tv_sec, 1);
  EXPECT_EQ(ts.tv_nsec, 0);
}

TEST_F(ClockTest, JiffiesFollowTheClock) {
  uk::virtual_clock_set(0);
  EXPECT_EQ(jiffies, INITIAL_JIFFIES);
  uk::virtual_clock_advance(TICK_NSEC - 1);
  EXPECT_EQ(jiffies, INITIAL_JIFFIES);
  uk::virtual_clock_advance(1);
  EXPECT_EQ(jiffies, INITIAL_JIFFIES + 1);
  uk::virtual_clock_advance(NSEC_PER_SEC);
  EXPECT_EQ(jiffies, INITIAL_JIFFIES + 1 + HZ);
  EXPECT_EQ(get_jiffies_64(), static_cast<u64>(jiffies));
}

TEST_F(ClockTest, JiffiesWrapAt32BitsAfterFiveMinutes) {
  // INITIAL_JIFFIES puts the 32-bit wrap 300 s after boot, as in the kernel.
  uk::virtual_clock_set(0);
  unsigned long before = jiffies;
  uk::virtual_clock_advance(300ULL * NSEC_PER_SEC);
  unsigned long after = jiffies;
  EXPECT_EQ(static_cast<unsigned int>(after), 0u);
  EXPECT_TRUE(time_after(after, before));
  EXPECT_TRUE(time_after(static_cast<unsigned long>(0), ULONG_MAX - 1));
}

// On the host clock jiffies is a word the tick thread advances: it moves
// with nobody calling into the clock, never runs ahead of the clock, and
// never goes back.
u64 HostJiffiesNow() {
  return INITIAL_JIFFIES + uk::host_clock_ns() / TICK_NSEC;
}

TEST(HostJiffiesTest, TheTickAdvancesItAndItNeverRunsAhead) {
  ASSERT_FALSE(uk::clock_is_virtual());
  unsigned long j0 = jiffies;
  EXPECT_FALSE(time_after(j0, static_cast<unsigned long>(HostJiffiesNow())));
  ASSERT_TRUE(WaitFor([&] { return jiffies != j0; }));
  unsigned long j1 = jiffies;
  EXPECT_TRUE(time_after(j1, j0));
  EXPECT_FALSE(time_after(j1, static_cast<unsigned long>(HostJiffiesNow())));
}

TEST(HostJiffiesTest, UpdatesNeverMoveItBack) {
  ASSERT_FALSE(uk::clock_is_virtual());
  u64 now = uk::host_clock_ns();
  unsigned long j = uk::jiffies_update(now);
  // The tick may have stored a later clock reading already: never less.
  EXPECT_FALSE(time_before(
      j, static_cast<unsigned long>(INITIAL_JIFFIES + now / TICK_NSEC)));
  // An update from an earlier clock reading (a slow timer thread) loses.
  unsigned long r = uk::jiffies_update(now - 5 * TICK_NSEC);
  EXPECT_FALSE(time_before(r, j));
  EXPECT_FALSE(time_before(jiffies, j));
}

TEST(HostJiffiesTest, AForkChildHasItsOwnTick) {
  ASSERT_FALSE(uk::clock_is_virtual());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    unsigned long j0 = jiffies;
    _exit(WaitFor([&] { return jiffies != j0; }) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(JiffiesTest, Conversions) {
  EXPECT_EQ(HZ, 250);
  EXPECT_EQ(TICK_NSEC, 4000000);
  EXPECT_EQ(msecs_to_jiffies(0), 0ul);
  EXPECT_EQ(msecs_to_jiffies(1), 1ul);
  EXPECT_EQ(msecs_to_jiffies(4), 1ul);
  EXPECT_EQ(msecs_to_jiffies(5), 2ul);
  EXPECT_EQ(msecs_to_jiffies(1000), 250ul);
  EXPECT_EQ(msecs_to_jiffies(static_cast<unsigned int>(-1)),
            static_cast<unsigned long>(MAX_JIFFY_OFFSET));
  EXPECT_EQ(usecs_to_jiffies(1), 1ul);
  EXPECT_EQ(usecs_to_jiffies(4000), 1ul);
  EXPECT_EQ(usecs_to_jiffies(4001), 2ul);
  EXPECT_EQ(nsecs_to_jiffies(7999999), 1ul);
  EXPECT_EQ(jiffies_to_msecs(250), 1000u);
  EXPECT_EQ(jiffies_to_usecs(3), 12000u);
  EXPECT_EQ(jiffies_to_nsecs(2), 8000000ull);
  EXPECT_EQ(secs_to_jiffies(2), 500ul);
  struct timespec64 ts = {1, 1};
  EXPECT_EQ(timespec64_to_jiffies(&ts), 251ul);
  EXPECT_TRUE(time_before(1UL, 2UL));
  EXPECT_TRUE(time_after_eq(2UL, 2UL));
  EXPECT_TRUE(time_in_range(5UL, 4UL, 6UL));
  EXPECT_FALSE(time_in_range_open(6UL, 4UL, 6UL));
}

TEST(KtimeTest, Helpers) {
  EXPECT_EQ(ktime_set(1, 5), 1000000005);
  EXPECT_EQ(ktime_set(KTIME_SEC_MAX, 0), KTIME_MAX);
  EXPECT_EQ(ms_to_ktime(3), 3000000);
  EXPECT_EQ(us_to_ktime(3), 3000);
  EXPECT_EQ(ktime_to_us(5999), 5);
  EXPECT_EQ(ktime_to_ms(5999999), 5);
  EXPECT_EQ(ktime_add_us(10, 1), 1010);
  EXPECT_EQ(ktime_add_safe(KTIME_MAX - 1, 5), KTIME_MAX);
  EXPECT_EQ(ktime_add_safe(1, 2), 3);
  EXPECT_EQ(ktime_compare(1, 2), -1);
  EXPECT_TRUE(ktime_before(1, 2));
  EXPECT_TRUE(ktime_after(3, 2));
  struct timespec64 ts = ns_to_timespec64(-1);
  EXPECT_EQ(ts.tv_sec, -1);
  EXPECT_EQ(ts.tv_nsec, NSEC_PER_SEC - 1);
  EXPECT_EQ(timespec64_to_ktime(ts), -1);
  EXPECT_EQ(ktime_us_delta(5000, 2000), 3);
}

TEST(DelayTest, BusyWaitsAtLeastTheRequestedHostTime) {
  u64 t0 = uk::host_clock_ns();
  udelay(200);
  EXPECT_GE(uk::host_clock_ns() - t0, 200000u);
  t0 = uk::host_clock_ns();
  ndelay(1000);
  EXPECT_GE(uk::host_clock_ns() - t0, 1000u);
}

TEST_F(ClockTest, UdelayDoesNotMoveVirtualTime) {
  udelay(10);
  EXPECT_EQ(uk::clock_now_ns(), kStart);
}

TEST_F(ClockTest, MsleepEndsWhenVirtualTimePasses) {
  std::atomic<bool> done{false};
  u64 slept_from = 0, slept_to = 0;
  std::thread sleeper([&] {
    slept_from = ktime_get_ns();
    msleep(10);
    slept_to = ktime_get_ns();
    done = true;
  });
  EXPECT_TRUE(WaitFor([&] {
    if (done.load()) return true;
    uk::virtual_clock_advance(NSEC_PER_MSEC);
    return false;
  }));
  sleeper.join();
  EXPECT_GE(slept_to - slept_from, 10u * NSEC_PER_MSEC);
}

TEST_F(ClockTest, UsleepRangeEndsWhenVirtualTimePasses) {
  std::atomic<bool> done{false};
  u64 slept_from = 0, slept_to = 0;
  std::thread sleeper([&] {
    slept_from = ktime_get_ns();
    usleep_range(100, 200);
    slept_to = ktime_get_ns();
    done = true;
  });
  EXPECT_TRUE(WaitFor([&] {
    if (done.load()) return true;
    uk::virtual_clock_advance(10 * NSEC_PER_USEC);
    return false;
  }));
  sleeper.join();
  EXPECT_GE(slept_to - slept_from, 100u * NSEC_PER_USEC);
}

TEST(HostSleepTest, MsleepSleepsOnHostClock) {
  u64 t0 = uk::host_clock_ns();
  msleep(2);
  EXPECT_GE(uk::host_clock_ns() - t0, 2u * NSEC_PER_MSEC);
}

}  // namespace
