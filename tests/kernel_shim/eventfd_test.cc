// SPDX-License-Identifier: GPL-2.0-only
// eventfd contexts over host eventfds.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>

#include <uk/linux/eventfd.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/slab.h>

#include "testmain.h"

namespace {

TEST(EventfdTest, SignalIsVisibleToPollAndRead) {
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  struct eventfd_ctx *ctx = eventfd_ctx_fdget(efd);
  ASSERT_FALSE(IS_ERR(ctx));

  struct pollfd p = {efd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // nothing yet
  eventfd_signal(ctx);
  eventfd_signal(ctx);
  eventfd_signal_mask(ctx, 0);
  p.revents = 0;
  ASSERT_EQ(poll(&p, 1, 0), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  uint64_t v = 0;
  ASSERT_EQ(read(efd, &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  EXPECT_EQ(v, 3u);
  eventfd_ctx_put(ctx);
  close(efd);
}

TEST(EventfdTest, ContextOutlivesProgramsDescriptor) {
  int efd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  struct eventfd_ctx *ctx = eventfd_ctx_fdget(efd);
  ASSERT_FALSE(IS_ERR(ctx));
  int other = dup(efd);
  close(efd);
  eventfd_signal(ctx);  // our own reference keeps the counter alive
  uint64_t v = 0;
  ASSERT_EQ(read(other, &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  EXPECT_EQ(v, 1u);
  eventfd_ctx_put(ctx);
  close(other);
}

TEST(EventfdTest, SignalFromHardirq) {
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct eventfd_ctx *ctx = eventfd_ctx_fdget(efd);
  ASSERT_FALSE(IS_ERR(ctx));
  uk::run_in_hardirq(0, [ctx] {
    EXPECT_TRUE(eventfd_signal_allowed());
    eventfd_signal(ctx);
  });
  uint64_t v = 0;
  ASSERT_EQ(read(efd, &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  EXPECT_EQ(v, 1u);
  eventfd_ctx_put(ctx);
  close(efd);
}

TEST(EventfdTest, BadDescriptors) {
  size_t before = uk::kmalloc_nr_allocated();
  EXPECT_EQ(PTR_ERR(eventfd_ctx_fdget(-1)), -EBADF);
  int fd = eventfd(0, 0);
  close(fd);
  EXPECT_EQ(PTR_ERR(eventfd_ctx_fdget(fd)), -EBADF);  // closed
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  EXPECT_EQ(PTR_ERR(eventfd_ctx_fdget(pipefd[0])), -EINVAL);
  int devnull = open("/dev/null", O_RDONLY);
  EXPECT_EQ(PTR_ERR(eventfd_ctx_fdget(devnull)), -EINVAL);
  close(pipefd[0]);
  close(pipefd[1]);
  close(devnull);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);
}

TEST(EventfdTest, ConcurrentSignalsAllCounted) {
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct eventfd_ctx *ctx = eventfd_ctx_fdget(efd);
  ASSERT_FALSE(IS_ERR(ctx));
  const unsigned n = uk::testing::StressThreads();
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < n; i++)
    ts.emplace_back([ctx] {
      for (int k = 0; k < 1000; k++) eventfd_signal(ctx);
    });
  for (auto &t : ts) t.join();
  uint64_t v = 0;
  ASSERT_EQ(read(efd, &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  EXPECT_EQ(v, n * 1000u);
  eventfd_ctx_put(ctx);
  close(efd);
}

}  // namespace
