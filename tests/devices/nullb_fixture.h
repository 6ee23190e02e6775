// SPDX-License-Identifier: GPL-2.0-only
// Shared by the null_blk I/O tests: a fixture that loads null_blk devices
// from a module-parameter string and unloads them after the test (and,
// through testmain.h, WaitFor() for asynchronous completions).
#ifndef UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_
#define UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_

#include <gtest/gtest.h>

#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/workqueue.h>

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

}  // namespace uk::testing

#endif  // UKERN_TESTS_DEVICES_NULLB_FIXTURE_H_
