// SPDX-License-Identifier: GPL-2.0-only
// aio/usercopy.cc: user accesses fault safely from the program's start.
// Each TEST runs in a process of its own (gtest_discover_tests), so these
// calls come before any io_setup() of the process.
#include <gtest/gtest.h>

#include <uk/linux/compiler.h>
#ifdef UK_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/errno.h>

#include "testmain.h"

namespace
{

// A context id is the address of its ring; lookup_ioctx() reads the ring's
// id there with get_user(). NULL, an unmapped page and a kernel address are
// not contexts: -EINVAL, as the kernel answers, and no crash.
TEST(UsercopyTest, SyscallsOnMadeUpContextsBeforeAnyIoSetup)
{
	struct io_event ev[1];
	struct iocb cb = {};
	struct iocb *cbs[1] = { &cb };
	struct timespec ts = { 0, 0 };

	for (unsigned long id : { 0UL, 4096UL, 0xffff888000000000UL }) {
		EXPECT_EQ(ukern_io_getevents(id, 0, 1, ev, &ts), -EINVAL) << id;
		EXPECT_EQ(ukern_io_pgetevents(id, 0, 1, ev, &ts, nullptr), -EINVAL) << id;
		EXPECT_EQ(ukern_io_submit(id, 1, cbs), -EINVAL) << id;
		EXPECT_EQ(ukern_io_cancel(id, &cb, ev), -EINVAL) << id;
		EXPECT_EQ(ukern_io_destroy(id), -EINVAL) << id;
	}
}

#ifdef UK_ASAN
// Under ASan a made-up id may name ASan's own shadow memory, which is
// mapped: get_user() reads it, and the access check after it must not call
// that a bad access (no object of the program lives there).
TEST(UsercopyTest, ContextIdInTheSanitizerShadow)
{
	size_t scale, offset;
	__asan_get_shadow_mapping(&scale, &offset);
	unsigned long high_shadow = (0x10007fff8000UL >> scale) + offset;
	unsigned long ctx = 0;

	ASSERT_EQ(ukern_io_setup(1, &ctx), 0);
	EXPECT_EQ(ukern_io_destroy(high_shadow), -EINVAL);
	EXPECT_EQ(ukern_io_destroy(0x030000000000UL), -EINVAL);
	EXPECT_EQ(ukern_io_destroy(ctx), 0);
}
#endif

} // namespace
