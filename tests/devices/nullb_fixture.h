// SPDX-License-Identifier: GPL-2.0-only
// Shared by the null_blk I/O tests: a fixture that loads null_blk devices
// from a module-parameter string and unloads them after the test, one for
// tests that do I/O through blkdev_rw() (and, through testmain.h,
// WaitFor() for asynchronous completions).
#ifndef UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_
#define UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/uio.h>

#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/clock.h>
#include <uk/shim/cpu.h>

#include "testmain.h"
#include "../../blk/blk-mq.h"

namespace uk::testing {

// Devices opened through Load()/Open() are put, null_blk is unloaded and
// its module parameters are reset when the test ends.
class NullbTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto *b : bdevs_) uk::blkdev_put(b);
    bdevs_.clear();
    null_exit();
    if (kblockd_workqueue) flush_workqueue(kblockd_workqueue);
    null_blk_reset_module_params();
  }
  struct block_device *Load(const char *params, const char *name = "nullb0") {
    EXPECT_EQ(null_blk_module_params(params), 0);
    EXPECT_EQ(null_init(), 0);
    return Open(name);
  }
  struct block_device *Open(const char *name) {
    struct block_device *b = uk::blkdev_lookup(name);
    EXPECT_NE(b, nullptr) << name;
    if (b) bdevs_.push_back(b);
    return b;
  }

  std::vector<struct block_device *> bdevs_;
};

// For tests that do I/O through blkdev_rw() and may switch softirqs to
// interrupt exit, the clock to virtual or the thread to one CPU: those are
// put back after the devices are gone. Rw() reads or writes one buffer,
// synchronously, or with `Done(io, res)` at completion when `io` is given.
template <class Io, void (*Done)(void *, long)>
class NullbIoTest : public NullbTest {
 protected:
  void TearDown() override {
    NullbTest::TearDown();
    uk::softirq_set_threads(true);
    if (uk::clock_is_virtual()) uk::clock_use_host();
    uk::pin_thread_to_cpu(-1);
  }
  static ssize_t Rw(struct block_device *b, bool write, loff_t pos, void *buf,
                    size_t len, unsigned flags = 0, Io *io = nullptr) {
    struct iovec iov = {buf, len};
    return blkdev_rw(b, pos, &iov, 1, flags | (write ? BLKDEV_RW_WRITE : 0),
                     io ? Done : nullptr, io);
  }
};

}  // namespace uk::testing

#endif  // UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_
