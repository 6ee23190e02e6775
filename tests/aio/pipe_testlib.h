// SPDX-License-Identifier: GPL-2.0-only
// The ukern pipes a test makes (aio/pipe.cc), closed at its end: the
// fixtures of pipe_test.cc and aio_v26_test.cc hold one PipeFds.
#ifndef UKERN_TESTS_AIO_PIPE_TESTLIB_H_
#define UKERN_TESTS_AIO_PIPE_TESTLIB_H_

#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio_v26.h>
#include <uk/linux/pipe_fs_i.h>

class PipeFds
{
      public:
	// do_pipe2() into fds; both ends are closed by CloseAll().
	void Pipe(int fds[2], int flags = 0)
	{
		ASSERT_EQ(uk::aio26::do_pipe2(fds, flags), 0);
		fds_.push_back(fds[0]);
		fds_.push_back(fds[1]);
	}
	// Closes one end before the test ends.
	void Close(int fd)
	{
		EXPECT_EQ(uk::aio26::sys_close(fd), 0);
		for (auto &f : fds_)
			if (f == fd)
				f = -1;
	}
	// Closes every end still open (the fixture's TearDown).
	void CloseAll()
	{
		for (int fd : fds_)
			if (fd >= 0)
				uk::aio26::sys_close(fd);
		fds_.clear();
	}
	std::vector<int> fds_;
};

#endif // UKERN_TESTS_AIO_PIPE_TESTLIB_H_
