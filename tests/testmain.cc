// SPDX-License-Identifier: GPL-2.0-only
// main() for ukern tests: GoogleTest plus a check that no test leaves a WARN
// behind or leaves the thread with preemption or interrupts disabled.
// UKERN_CMDLINE sets module parameters first (docs/params.md); a bad one
// ends the program with status 1 before any test runs.
#include "testmain.h"

#include <gtest/gtest.h>

#include <uk/linux/irqflags.h>
#include <uk/linux/printk.h>
#include <uk/shim/cmdline.h>

namespace uk::testing {
namespace {

bool allow_warnings = false;

class KernelStateListener : public ::testing::EmptyTestEventListener {
  long warns_at_start_ = 0;

  void OnTestStart(const ::testing::TestInfo &) override {
    allow_warnings = false;
    warns_at_start_ = __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED);
  }

  void OnTestEnd(const ::testing::TestInfo &info) override {
    long warns =
        __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED) - warns_at_start_;
    if (warns != 0 && !allow_warnings)
      ADD_FAILURE() << info.name() << ": the kernel code WARNed " << warns
                    << " time(s)";
    EXPECT_EQ(preempt_count(), 0) << "test left preemption disabled";
    EXPECT_FALSE(irqs_disabled()) << "test left interrupts disabled";
  }
};

}  // namespace

void AllowWarnings() { allow_warnings = true; }

}  // namespace uk::testing

int main(int argc, char **argv) {
  if (uk::parse_cmdline_env() != 0) return 1;
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(
      new uk::testing::KernelStateListener);
  return RUN_ALL_TESTS();
}
