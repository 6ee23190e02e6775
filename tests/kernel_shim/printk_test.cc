// SPDX-License-Identifier: GPL-2.0-only
// printk(): levels, line ends, KERN_CONT, the %p extensions, mem_dump_obj().
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <uk/linux/printk.h>
#include <uk/linux/slab.h>
#include <uk/shim/printk.h>

#include "testmain.h"

namespace {

std::string Printed(void (*body)()) {
  ::testing::internal::CaptureStderr();
  body();
  return ::testing::internal::GetCapturedStderr();
}

TEST(PrintkTest, AMessageEndsItsLine) {
  std::string out = Printed([] {
    pr_err("first");
    pr_err("second\n");
  });
  EXPECT_EQ(out, "first\nsecond\n");
}

TEST(PrintkTest, ContinuationExtendsTheOpenLine) {
  std::string out = Printed([] {
    pr_err("a");
    pr_cont(" b");
    pr_cont(" c\n");
    pr_err("d\n");
  });
  EXPECT_EQ(out, "a b c\nd\n");
}

TEST(PrintkTest, ContinuationTakesTheLevelOfItsLine) {
  // A continuation of a hidden debug line stays hidden; one of an error
  // line is shown.
  std::string out = Printed([] {
    printk(KERN_DEBUG "hidden");
    pr_cont(" also hidden");
    pr_err("shown");
    pr_cont(" too\n");
  });
  EXPECT_EQ(out, "shown too\n");
}

TEST(PrintkTest, PointerExtensionsPrintTheAddress) {
  static int object;
  char want[64];
  snprintf(want, sizeof(want), "at %p and %p%%s.\n",
           static_cast<void *>(&object), static_cast<void *>(&object));
  std::string out =
      Printed([] { pr_err("at %ps and %pS%%s.\n", &object, &object); });
  EXPECT_EQ(out, want);
}

TEST(PrintkTest, MemDumpObjNamesASlabObject) {
  std::string out = Printed([] {
    void *p = kmalloc(40, GFP_KERNEL);
    pr_err("object:");
    mem_dump_obj(p);
    pr_err("null:");
    mem_dump_obj(nullptr);
    kfree(p);
  });
  EXPECT_NE(out.find("object: slab object 0x"), std::string::npos) << out;
  EXPECT_NE(out.find("null: NULL pointer.\n"), std::string::npos) << out;
}

}  // namespace
