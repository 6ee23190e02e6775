// SPDX-License-Identifier: GPL-2.0-only
// The XArray's normal API (kernel_shim/xarray.cc): store, load, replace,
// erase, and the error entry helpers.
#include <gtest/gtest.h>

#include <uk/linux/errno.h>
#include <uk/linux/xarray.h>

namespace {

DEFINE_XARRAY(static_xa);

TEST(XarrayTest, StoreLoadReplaceErase) {
  int a = 1, b = 2;
  EXPECT_TRUE(xa_empty(&static_xa));
  EXPECT_EQ(xa_load(&static_xa, 7), nullptr);
  EXPECT_EQ(xa_store(&static_xa, 7, &a, GFP_KERNEL), nullptr);
  EXPECT_EQ(xa_store(&static_xa, 1UL << 40, &b, GFP_KERNEL), nullptr);
  EXPECT_FALSE(xa_empty(&static_xa));
  EXPECT_EQ(xa_load(&static_xa, 7), &a);
  EXPECT_EQ(xa_load(&static_xa, 1UL << 40), &b);
  EXPECT_EQ(xa_load(&static_xa, 8), nullptr);
  // A store over an entry returns the one it replaces.
  EXPECT_EQ(xa_store(&static_xa, 7, &b, GFP_KERNEL), &a);
  EXPECT_EQ(xa_load(&static_xa, 7), &b);
  EXPECT_EQ(xa_erase(&static_xa, 7), &b);
  EXPECT_EQ(xa_erase(&static_xa, 7), nullptr);
  // Storing NULL erases; the last entry gone, the array is empty.
  EXPECT_EQ(xa_store(&static_xa, 1UL << 40, nullptr, GFP_KERNEL), &b);
  EXPECT_TRUE(xa_empty(&static_xa));
}

TEST(XarrayTest, InitAndDestroy) {
  struct xarray xa;
  int a = 1;
  xa_init_flags(&xa, 0);
  EXPECT_TRUE(xa_empty(&xa));
  xa_store(&xa, 3, &a, GFP_KERNEL);
  xa_destroy(&xa);
  EXPECT_TRUE(xa_empty(&xa));
  xa_init(&xa);
  EXPECT_EQ(xa_load(&xa, 3), nullptr);
}

TEST(XarrayTest, ErrorEntries) {
  int a = 1;
  EXPECT_EQ(xa_err(&a), 0);
  EXPECT_FALSE(xa_is_err(nullptr));
  void *e = xa_mk_internal(-ENOMEM);
  EXPECT_TRUE(xa_is_internal(e));
  EXPECT_TRUE(xa_is_err(e));
  EXPECT_EQ(xa_err(e), -ENOMEM);
  // An internal entry that is not an error code.
  EXPECT_FALSE(xa_is_err(xa_mk_internal(5)));
}

}  // namespace
