// SPDX-License-Identifier: GPL-2.0-only
// null_blk configuration (module parameters, configfs), power cycles,
// memory-backed storage, discard, badblocks, cache, throttling, faults.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/gfp.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/shim/clock.h>
#include <uk/shim/printk.h>

#include "testmain.h"

namespace {

std::vector<std::string> *g_log;
void CaptureHook(int level, const char *text) { g_log->push_back(text); }

class NullBlkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    null_blk_reset_module_params();
    g_log = &log_;
    uk::printk_hook = CaptureHook;
    kmalloc_before_ = uk::kmalloc_nr_allocated();
    pages_before_ = uk::page_alloc_nr_allocated();
  }
  void TearDown() override {
    null_exit();
    uk::printk_hook = nullptr;
    g_log = nullptr;
    null_blk_reset_module_params();
    // A deleted device's queue is freed after a grace period
    // (blk_free_queue_rcu()).
    rcu_barrier();
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_before_) << "leak";
    EXPECT_EQ(uk::page_alloc_nr_allocated(), pages_before_) << "page leak";
  }
  bool Logged(const std::string &needle) {
    for (auto &l : log_)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
  std::string Param(const char *name) {
    char page[PAGE_SIZE];
    ssize_t n = null_blk_param_show(name, page);
    return n < 0 ? "ERR" : std::string(page, n);
  }
  std::string Attr(struct nullb_device *dev, const char *name) {
    char page[PAGE_SIZE];
    ssize_t n = nullb_attr_show(dev, name, page);
    return n < 0 ? "ERR" + std::to_string(n) : std::string(page, n);
  }
  ssize_t Store(struct nullb_device *dev, const char *name, const char *v) {
    return nullb_attr_store(dev, name, v);
  }
  std::vector<std::string> log_;
  long kmalloc_before_ = 0;
  long pages_before_ = 0;
};

TEST_F(NullBlkTest, ModuleParamDefaults) {
  EXPECT_EQ(Param("submit_queues"), "1\n");
  EXPECT_EQ(Param("poll_queues"), "1\n");
  EXPECT_EQ(Param("home_node"), "-1\n");
  EXPECT_EQ(Param("queue_mode"), "2\n");
  EXPECT_EQ(Param("gb"), "250\n");
  EXPECT_EQ(Param("bs"), "512\n");
  EXPECT_EQ(Param("max_sectors"), "0\n");
  EXPECT_EQ(Param("nr_devices"), "1\n");
  EXPECT_EQ(Param("irqmode"), "1\n");
  EXPECT_EQ(Param("completion_nsec"), "10000\n");
  EXPECT_EQ(Param("hw_queue_depth"), "64\n");
  EXPECT_EQ(Param("blocking"), "N\n");
  EXPECT_EQ(Param("shared_tags"), "N\n");
  EXPECT_EQ(Param("shared_tag_bitmap"), "N\n");
  EXPECT_EQ(Param("no_sched"), "0\n");
  EXPECT_EQ(Param("memory_backed"), "N\n");
  EXPECT_EQ(Param("discard"), "N\n");
  EXPECT_EQ(Param("cache_size"), "0\n");
  EXPECT_EQ(Param("fua"), "Y\n");
  EXPECT_EQ(Param("mbps"), "0\n");
  EXPECT_EQ(Param("zoned"), "N\n");
  EXPECT_EQ(Param("zone_size"), "256\n");
  EXPECT_EQ(Param("zone_append_max_sectors"), "2147483647\n");
  EXPECT_EQ(Param("virt_boundary"), "N\n");
  EXPECT_EQ(Param("use_per_node_hctx"), "N\n");
  EXPECT_EQ(Param("rotational"), "N\n");
  EXPECT_EQ(Param("timeout"), "\n");
  EXPECT_EQ(Param("nope"), "ERR");
}

TEST_F(NullBlkTest, ModuleParamParsing) {
  ASSERT_EQ(
      null_blk_module_params(
          "submit_queues=4 hw_queue_depth=64 irqmode=2 completion_nsec=10000"),
      0);
  EXPECT_EQ(Param("submit_queues"), "4\n");
  EXPECT_EQ(Param("irqmode"), "2\n");
  // Base 0 for ints, '-' == '_', bool without value, quoted string.
  ASSERT_EQ(null_blk_module_params(
                "  hw-queue-depth=0x20 blocking memory_backed=on shared_tags=n "
                "timeout=\"1,100,0,3\" gb=010 mbps=+7 completion_nsec=5\n"),
            0);
  EXPECT_EQ(Param("hw_queue_depth"), "32\n");
  EXPECT_EQ(Param("blocking"), "Y\n");
  EXPECT_EQ(Param("memory_backed"), "Y\n");
  EXPECT_EQ(Param("shared_tags"), "N\n");
  EXPECT_EQ(Param("timeout"), "1,100,0,3\n");
  EXPECT_EQ(Param("gb"), "8\n");
  EXPECT_EQ(Param("mbps"), "7\n");
  EXPECT_EQ(Param("completion_nsec"), "5\n");
  for (const char *b :
       {"Y", "N", "1", "0", "y", "n", "on", "off", "true", "false"})
    EXPECT_EQ(null_blk_module_params((std::string("zoned=") + b).c_str()), 0)
        << b;
}

TEST_F(NullBlkTest, ModuleParamErrorsNameTheParameter) {
  // kernel/params.c's answers: the set op's error, -ENOENT when no
  // parameter has the name.
  struct Case {
    const char *args, *needle;
    int err;
  } cases[] = {
      {"nosuch=1", "Unknown parameter `nosuch'", -ENOENT},
      {"irqmode=3", "`3' invalid for parameter `irqmode'", -EINVAL},
      {"irqmode=-1", "invalid for parameter `irqmode'", -EINVAL},
      {"irqmode=0x1", "invalid for parameter `irqmode'", -EINVAL},  // base 10
      {"queue_mode=3", "invalid for parameter `queue_mode'", -EINVAL},
      {"submit_queues=abc", "invalid for parameter `submit_queues'", -EINVAL},
      {"submit_queues=2147483648", "invalid for parameter `submit_queues'",
       -ERANGE},
      {"nr_devices=-1", "invalid for parameter `nr_devices'", -EINVAL},
      {"mbps=4294967296", "invalid for parameter `mbps'", -ERANGE},
      {"blocking=maybe", "invalid for parameter `blocking'", -EINVAL},
      {"gb", "invalid for parameter `gb'", -EINVAL},  // int needs a value
      {"completion_nsec=1.5", "invalid for parameter `completion_nsec'",
       -EINVAL},
  };
  for (const Case &c : cases) {
    log_.clear();
    EXPECT_EQ(null_blk_module_params(c.args), c.err) << c.args;
    EXPECT_TRUE(Logged(c.needle)) << c.args;
  }
  EXPECT_EQ(Param("irqmode"), "1\n");  // unchanged by the failures
  std::string longstr = "timeout=" + std::string(80, '1');
  EXPECT_EQ(null_blk_module_params(longstr.c_str()), -ENOSPC);
  EXPECT_TRUE(Logged("string doesn't fit in 79 chars"));
}

TEST_F(NullBlkTest, InitCreatesNrDevicesAndValidates) {
  ASSERT_EQ(
      null_blk_module_params("nr_devices=3 bs=8192 submit_queues=100000 gb=1"),
      0);
  ASSERT_EQ(null_init(), 0);
  EXPECT_EQ(null_nr_devices(), 3u);
  EXPECT_TRUE(Logged("invalid block size"));
  struct nullb *nb = null_lookup_dev("nullb2");
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(nb->dev->blocksize, PAGE_SIZE);
  EXPECT_EQ(nb->dev->submit_queues, nr_cpu_ids);
  EXPECT_EQ(nb->capacity, 1024ull * 1024 * 1024 / 512);
  EXPECT_EQ(nb->max_hw_sectors, 248u);  // 255 rounded down to 4 KiB blocks
  null_exit();
  EXPECT_EQ(null_nr_devices(), 0u);

  null_blk_reset_module_params();
  ASSERT_EQ(null_blk_module_params("queue_mode=1"), 0);
  log_.clear();
  EXPECT_EQ(null_init(), -EINVAL);
  EXPECT_TRUE(Logged("legacy IO path is no longer available"));

  null_blk_reset_module_params();
  ASSERT_EQ(null_blk_module_params("requeue=1,2"), 0);
  log_.clear();
  EXPECT_EQ(null_init(), -EINVAL);
  EXPECT_TRUE(Logged("FAULT_INJECTION: failed to parse arguments"));
  EXPECT_EQ(null_nr_devices(), 0u);

  null_blk_reset_module_params();
  ASSERT_EQ(null_blk_module_params("zoned=1 nr_devices=2"), 0);
  EXPECT_EQ(null_init(), -EINVAL);  // no CONFIG_BLK_DEV_ZONED
  EXPECT_TRUE(Logged("CONFIG_BLK_DEV_ZONED not enabled"));
  EXPECT_EQ(null_nr_devices(), 0u);

  null_blk_reset_module_params();
  ASSERT_EQ(null_blk_module_params("bs=1000"), 0);
  EXPECT_EQ(null_init(), -EINVAL);
  EXPECT_TRUE(Logged("invalid blocksize 1000"));
}

// gb is an int and null_alloc_dev() multiplies it by 1024 in int: past
// 2097151 the product wraps (the kernel builds with -fno-strict-overflow, and
// so does ukern), and the device takes the size the wrapped value gives.
TEST_F(NullBlkTest, GbPastIntRangeWrapsAsInTheKernel) {
  ASSERT_EQ(null_blk_module_params("gb=20000000"), 0);
  ASSERT_EQ(null_init(), 0);
  struct nullb *nb = null_lookup_dev("nullb0");
  ASSERT_NE(nb, nullptr);
  const int wrapped = static_cast<int>(20000000u * 1024u);
  EXPECT_LT(wrapped, 0);
  EXPECT_EQ(nb->dev->size, static_cast<unsigned long>(wrapped));
  EXPECT_EQ(nb->capacity,
            (static_cast<sector_t>(nb->dev->size) * SZ_1M) >> SECTOR_SHIFT);
}

TEST_F(NullBlkTest, ConfigfsAttributes) {
  ASSERT_EQ(null_blk_module_params("hw_queue_depth=32"), 0);
  struct nullb_device *dev = nullb_group_make("mydisk");
  ASSERT_FALSE(IS_ERR(dev));
  EXPECT_EQ(PTR_ERR(nullb_group_make("mydisk")), -EEXIST);
  EXPECT_EQ(Attr(dev, "hw_queue_depth"), "32\n");  // module default
  EXPECT_EQ(Attr(dev, "size"), "256000\n");
  EXPECT_EQ(Attr(dev, "blocksize"), "512\n");
  EXPECT_EQ(Attr(dev, "home_node"), "4294967295\n");
  EXPECT_EQ(Attr(dev, "fua"), "1\n");
  EXPECT_EQ(Attr(dev, "power"), "0\n");
  EXPECT_EQ(Attr(dev, "zone_readonly"), "ERR-1");  // write-only: -EPERM
  // No zoned devices: zone_cond_store() refuses as without CONFIG_BLK_DEV_ZONED.
  EXPECT_EQ(Store(dev, "zone_readonly", "0"), -EOPNOTSUPP);
  EXPECT_EQ(Store(dev, "zone_offline", "0"), -EOPNOTSUPP);
  EXPECT_EQ(Attr(dev, "nope"), "ERR-2");

  EXPECT_EQ(Store(dev, "size", "1024\n"), 5);
  EXPECT_EQ(Store(dev, "size", "0x10"), 4);
  EXPECT_EQ(Attr(dev, "size"), "16\n");
  EXPECT_EQ(Store(dev, "blocksize", "4096"), 4);
  EXPECT_EQ(Store(dev, "irqmode", "-1"), -EINVAL);
  EXPECT_EQ(Store(dev, "irqmode", "4294967296"), -ERANGE);
  EXPECT_EQ(Store(dev, "irqmode", "7"), 1);  // clamped at power on
  EXPECT_EQ(Store(dev, "memory_backed", "Y"), 1);
  EXPECT_EQ(Store(dev, "discard", "yes"), 3);
  EXPECT_EQ(Store(dev, "discard", "x"), -EINVAL);
  EXPECT_EQ(Store(dev, "cache_size", "1"), 1);
  EXPECT_EQ(Store(dev, "submit_queues", "0"),
            1);  // not powered: no apply check
  EXPECT_EQ(Store(dev, "nope", "1"), -ENOENT);

  EXPECT_EQ(Store(dev, "power", "1"), 1);
  EXPECT_EQ(Attr(dev, "power"), "1\n");
  struct nullb *nb = null_lookup_dev("mydisk");
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(nb->dev, dev);
  EXPECT_EQ(dev->irqmode, (unsigned)NULL_IRQ_TIMER);
  EXPECT_TRUE(dev->blocking);  // forced by memory_backed
  EXPECT_EQ(dev->submit_queues, 1u);
  EXPECT_EQ(Attr(dev, "index"), "0\n");
  EXPECT_TRUE(test_bit(NULLB_DEV_FL_CACHE, &dev->flags));

  // Configured: plain attributes are busy, apply ones are applied.
  EXPECT_EQ(Store(dev, "size", "32"), -EBUSY);
  EXPECT_EQ(Store(dev, "blocking", "0"), -EBUSY);
  EXPECT_EQ(Store(dev, "hw_queue_depth", "8"), -EBUSY);
  EXPECT_EQ(Store(dev, "size", "bogus"), -EINVAL);  // parse error first
  EXPECT_EQ(Store(dev, "submit_queues", "0"), -EINVAL);
  char big[32];
  snprintf(big, sizeof(big), "%u", nr_cpu_ids + 1);
  EXPECT_EQ(Store(dev, "submit_queues", big), -EINVAL);
  EXPECT_EQ(Store(dev, "submit_queues", "1"), 1);
  EXPECT_EQ(Store(dev, "poll_queues", "2"), -EINVAL);  // > module poll_queues
  EXPECT_EQ(Store(dev, "poll_queues", "0"), 1);
  EXPECT_EQ(Attr(dev, "poll_queues"), "0\n");
  EXPECT_EQ(Store(dev, "power", "1"), 1);  // already on: no-op
  EXPECT_EQ(null_nr_devices(), 1u);

  EXPECT_EQ(Store(dev, "power", "0"), 1);
  EXPECT_EQ(null_lookup_dev("mydisk"), nullptr);
  EXPECT_EQ(Store(dev, "size", "32"), 2);  // reconfigurable again
  EXPECT_EQ(Store(dev, "power", "1"), 1);
  EXPECT_EQ(null_lookup_dev("mydisk")->capacity, 32ull * 2048);
  nullb_group_drop(dev);
  EXPECT_EQ(null_nr_devices(), 0u);
}

// shared_tags: a configfs device takes the module's queue counts, which sized
// the global tag set it joins, and may not change that set's hardware queues.
TEST_F(NullBlkTest, ConfigfsSharedTagsUseModuleQueueCounts) {
  ASSERT_EQ(null_blk_module_params("submit_queues=1 poll_queues=2"), 0);
  struct nullb_device *a = nullb_group_make("sa");
  struct nullb_device *b = nullb_group_make("sb");
  ASSERT_FALSE(IS_ERR(a));
  ASSERT_FALSE(IS_ERR(b));
  for (struct nullb_device *d : {a, b}) {
    EXPECT_EQ(Store(d, "shared_tags", "1"), 1);
    EXPECT_EQ(Store(d, "submit_queues", "3"), 1);  // not powered: recorded
    EXPECT_EQ(Store(d, "poll_queues", "0"), 1);
    EXPECT_EQ(Store(d, "power", "1"), 1);
    EXPECT_EQ(Attr(d, "submit_queues"), "1\n");
    EXPECT_EQ(Attr(d, "poll_queues"), "2\n");
  }
  struct nullb *na = null_lookup_dev("sa");
  struct nullb *nb = null_lookup_dev("sb");
  ASSERT_NE(na, nullptr);
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(na->tag_set, nb->tag_set);
  EXPECT_EQ(na->tag_set->nr_hw_queues, 3u);

  EXPECT_EQ(Store(a, "submit_queues", "1"), -EINVAL);
  EXPECT_EQ(Store(a, "poll_queues", "1"), -EINVAL);
  EXPECT_EQ(Attr(a, "submit_queues"), "1\n");
  EXPECT_EQ(Attr(a, "poll_queues"), "2\n");
  EXPECT_EQ(na->tag_set->nr_hw_queues, 3u);
  nullb_group_drop(a);
  nullb_group_drop(b);
}

TEST_F(NullBlkTest, ConfigfsPowerOnFailures) {
  struct nullb_device *dev = nullb_group_make("z");
  ASSERT_FALSE(IS_ERR(dev));
  EXPECT_EQ(Store(dev, "zoned", "1"), 1);
  EXPECT_EQ(Store(dev, "zone_size", "3"), 1);
  EXPECT_EQ(Store(dev, "power", "1"), -EINVAL);
  EXPECT_TRUE(Logged("zone_size must be power-of-two"));
  EXPECT_EQ(Attr(dev, "power"), "0\n");
  EXPECT_EQ(Store(dev, "zone_size", "4"), 1);  // not configured: still writable
  EXPECT_EQ(Store(dev, "power", "1"), -EINVAL);
  EXPECT_TRUE(Logged("CONFIG_BLK_DEV_ZONED not enabled"));
  EXPECT_EQ(Store(dev, "zoned", "0"), 1);
  EXPECT_EQ(Store(dev, "queue_mode", "1"), 1);
  EXPECT_EQ(Store(dev, "power", "1"), -EINVAL);
  EXPECT_TRUE(Logged("legacy IO path"));
  EXPECT_EQ(Store(dev, "queue_mode", "0"), 1);
  EXPECT_EQ(Store(dev, "max_sectors", "4"), 1);
  EXPECT_EQ(Store(dev, "power", "1"), -EINVAL);
  EXPECT_TRUE(Logged("invalid max_sectors 4"));
  EXPECT_EQ(Store(dev, "max_sectors", "0"), 1);
  EXPECT_EQ(Store(dev, "discard", "1"), 1);
  EXPECT_EQ(Store(dev, "cache_size", "5"), 1);
  EXPECT_EQ(Store(dev, "power", "1"), 1);
  EXPECT_TRUE(Logged("BIO-based IO path is no longer available"));
  EXPECT_TRUE(Logged("discard option is ignored without memory backing"));
  EXPECT_FALSE(dev->discard);
  EXPECT_EQ(dev->cache_size, 0u);  // dropped: no backing store to cache for
  EXPECT_EQ(dev->queue_mode, (unsigned)NULL_Q_MQ);
  nullb_group_drop(dev);
}

TEST_F(NullBlkTest, FeaturesAndBadblocksAttr) {
  char page[PAGE_SIZE];
  ssize_t n = nullb_group_features_show(page);
  ASSERT_GT(n, 0);
  std::string f(page, n);
  EXPECT_EQ(f.rfind("badblocks,badblocks_once,", 0), 0u);
  EXPECT_NE(f.find(",power,"), std::string::npos);
  EXPECT_NE(f.find(",zone_readonly,zone_size,zoned\n"), std::string::npos);

  struct nullb_device *dev = nullb_group_make("bb");
  EXPECT_EQ(dev->badblocks.shift, -1);
  EXPECT_EQ(Store(dev, "badblocks", "+10-19\n"), 7);
  EXPECT_EQ(dev->badblocks.shift, 0);
  EXPECT_EQ(Store(dev, "badblocks", "+0x40-0x41"), 10);
  EXPECT_EQ(Attr(dev, "badblocks"), "10 10\n64 2\n");
  EXPECT_EQ(Store(dev, "badblocks", "-12-13"), 6);
  EXPECT_EQ(Attr(dev, "badblocks"), "10 2\n14 6\n64 2\n");
  EXPECT_EQ(Store(dev, "badblocks", "*1-2"), -EINVAL);
  EXPECT_EQ(Store(dev, "badblocks", "+5"), -EINVAL);
  EXPECT_EQ(Store(dev, "badblocks", "+9-5"), -EINVAL);
  EXPECT_EQ(Store(dev, "badblocks", "+x-5"), -EINVAL);
  nullb_group_drop(dev);
}

// badblocks_show() adds up what snprintf() would have written, so a table
// whose text passes a page claims more than the page; configfs refuses such
// a show with a warning and -EIO, as v6.12 does.
TEST_F(NullBlkTest, BadblocksShowPastAPageIsRefusedAsConfigfsDoes) {
  struct nullb_device *dev = nullb_group_make("bbpage");
  ASSERT_FALSE(IS_ERR_OR_NULL(dev));
  // 400 separate ranges of "1000000000 1\n" and up: 13 bytes a line.
  for (int i = 0; i < 400; i++) {
    std::string r = "+" + std::to_string(1000000000 + 2 * i) + "-" +
                    std::to_string(1000000000 + 2 * i);
    ASSERT_EQ(Store(dev, "badblocks", r.c_str()), (ssize_t)r.size());
  }
  char page[PAGE_SIZE];
  long warns = uk::warn_count;
  uk::testing::AllowWarnings();
  EXPECT_EQ(nullb_attr_show(dev, "badblocks", page), -EIO);
  // WARN_ON_ONCE: the first refusal in the process warns.
  EXPECT_LE(uk::warn_count - warns, 1);
  EXPECT_EQ(nullb_attr_show(dev, "badblocks", page), -EIO);
  // Below a page the table shows as before.
  for (int i = 60; i < 400; i++) {
    std::string r = "-" + std::to_string(1000000000 + 2 * i) + "-" +
                    std::to_string(1000000000 + 2 * i);
    ASSERT_EQ(Store(dev, "badblocks", r.c_str()), (ssize_t)r.size());
  }
  std::string shown = Attr(dev, "badblocks");
  EXPECT_EQ(shown.size(), 60u * 13);
  EXPECT_EQ(shown.rfind("1000000000 1\n", 0), 0u);
  nullb_group_drop(dev);
}

// v6.12's badblocks_set() and badblocks_clear() take the length as an int,
// and the attribute's store passes end - start + 1 (a u64): a range longer
// than INT_MAX sectors arrives truncated. Negative, it warns at the end of
// the walk after one step of at most BB_MAX_LEN sectors; zero, it fails
// and the store returns that 1 as the bytes written; otherwise the range
// is cut short. Later kernels take the length as sector_t.
TEST_F(NullBlkTest, BadblocksLengthPastIntMaxIsTruncatedAsV612Does) {
  struct nullb_device *dev = nullb_group_make("bbint");
  ASSERT_FALSE(IS_ERR_OR_NULL(dev));
  uk::testing::AllowWarnings();
  // 4,294,967,299 sectors: 3 as an int.
  long warns = uk::warn_count;
  EXPECT_EQ(Store(dev, "badblocks", "+2055-4294969353"), 16);
  EXPECT_EQ(Attr(dev, "badblocks"), "2055 3\n");
  // 2^32 sectors: 0 as an int, refused by badblocks_set().
  EXPECT_EQ(Store(dev, "badblocks", "+0-4294967295"), 1);
  EXPECT_EQ(Attr(dev, "badblocks"), "2055 3\n");
  EXPECT_EQ(uk::warn_count - warns, 0);
  // 2,222,222,221 sectors: negative as an int.
  EXPECT_EQ(Store(dev, "badblocks", "+2-2222222222"), 13);
  EXPECT_EQ(uk::warn_count - warns, 1);
  EXPECT_EQ(Attr(dev, "badblocks"), "2 512\n2055 3\n");
  EXPECT_EQ(Store(dev, "badblocks", "-0-2222222220"), 13);
  EXPECT_EQ(uk::warn_count - warns, 2);
  // The table still works for lengths an int holds.
  EXPECT_EQ(Store(dev, "badblocks", "-0-4096"), 7);
  EXPECT_EQ(Attr(dev, "badblocks"), "");
  EXPECT_EQ(Store(dev, "badblocks", "+7-8"), 4);
  EXPECT_EQ(Attr(dev, "badblocks"), "7 2\n");
  nullb_group_drop(dev);
}

TEST_F(NullBlkTest, FaultInjection) {
  ASSERT_EQ(null_blk_module_params("timeout=1,100,0,2 requeue=2,100,0,-1"), 0);
  ASSERT_EQ(null_init(), 0);
  struct nullb *nb = null_lookup_dev("nullb0");
  ASSERT_NE(nb, nullptr);
  // The module's attributes reach the device (null_blk_io_test.cc submits
  // requests that meet them).
  struct fault_attr *fa = &nb->dev->timeout_config.attr;
  EXPECT_EQ(fa->interval, 1u);
  EXPECT_EQ(fa->probability, 100u);
  EXPECT_EQ(atomic_read(&fa->times), 2);
  fa = &nb->dev->requeue_config.attr;
  EXPECT_EQ(fa->interval, 2u);
  EXPECT_EQ(atomic_read(&fa->times), -1);

  // configfs devices copy the module attrs; the groups tune them.
  struct nullb_device *dev = nullb_group_make("fi");
  EXPECT_EQ(Attr(dev, "timeout_inject/times"), "2\n");
  EXPECT_EQ(Store(dev, "init_hctx_fault_inject/probability", "100"), 3);
  EXPECT_EQ(Store(dev, "init_hctx_fault_inject/times", "1"), 1);
  EXPECT_EQ(Store(dev, "init_hctx_fault_inject/probability", "101"), -EINVAL);
  EXPECT_EQ(Store(dev, "init_hctx_fault_inject/interval", "0"), -EINVAL);
  EXPECT_EQ(Store(dev, "init_hctx_fault_inject/bogus", "0"), -ENOENT);
  // The one failure allowed makes the first power on fail in null_init_hctx().
  EXPECT_LT(Store(dev, "power", "1"), 0);
  EXPECT_EQ(Attr(dev, "power"), "0\n");
  EXPECT_EQ(Store(dev, "power", "1"), 1);
  EXPECT_EQ(Attr(dev, "power"), "1\n");
  nullb_group_drop(dev);
}

// Writes and reads through bios at block granularity against a shadow copy.
class NullBlkStorageTest : public NullBlkTest,
                           public ::testing::WithParamInterface<int> {};

struct PageBuf {
  explicit PageBuf(size_t n) : n_(n), p_((char *)aligned_alloc(PAGE_SIZE, n)) {}
  ~PageBuf() { free(p_); }
  char &operator[](size_t i) { return p_[i]; }
  char *data() { return p_; }
  size_t size() const { return n_; }
  char *begin() { return p_; }
  char *end() { return p_ + n_; }
  size_t n_;
  char *p_;
};

void DoIo(struct nullb *nb, enum req_op op, sector_t sector, char *buf,
          size_t len, blk_opf_t flags = 0) {
  struct bio *bio = bio_alloc(nullptr, 4, op | flags, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  bio->bi_iter.bi_sector = sector;
  // Split the buffer into up to 3 bvecs at sector boundaries (the block
  // layer hands null_blk segments in whole logical blocks).
  size_t blks = len / nb->dev->blocksize;
  size_t a = blks / 3 * nb->dev->blocksize, b = blks / 2 * nb->dev->blocksize;
  if (a) bio_add_virt_nofail(bio, buf, a);
  if (b > a) bio_add_virt_nofail(bio, buf + a, b - a);
  bio_add_virt_nofail(bio, buf + b, len - b);
  EXPECT_EQ(null_process_bio(nb, bio, op, sector, len >> SECTOR_SHIFT),
            BLK_STS_OK);
  bio_put(bio);
}

TEST_P(NullBlkStorageTest, RandomIoMatchesShadow) {
  const unsigned bs = GetParam();
  struct nullb_device *dev = nullb_group_make("mem");
  ASSERT_EQ(Store(dev, "memory_backed", "1"), 1);
  ASSERT_EQ(Store(dev, "discard", "1"), 1);
  ASSERT_EQ(Store(dev, "size", "4"), 1);
  ASSERT_EQ(Store(dev, "blocksize", std::to_string(bs).c_str()),
            (ssize_t)std::to_string(bs).size());
  ASSERT_EQ(Store(dev, "power", "1"), 1);
  struct nullb *nb = dev->nullb;
  ASSERT_TRUE(dev->discard);

  const size_t dev_bytes = 4u << 20;
  std::vector<char> shadow(dev_bytes, 0);
  // Page-aligned I/O buffers, as O_DIRECT users have: segments then hold
  // whole blocks (null_blk sets valid bits per block-sized chunk).
  PageBuf buf(256 * 1024), rbuf(256 * 1024);
  std::mt19937_64 rng(bs);
  const size_t nblocks = dev_bytes / bs;
  for (int round = 0; round < 200; round++) {
    size_t blk = rng() % nblocks;
    size_t n = 1 + rng() % std::min<size_t>(64, nblocks - blk);
    size_t off = blk * bs, len = n * bs;
    int op = rng() % 4;
    if (op <= 1) {
      for (size_t i = 0; i < len; i++) buf[i] = (char)rng();
      DoIo(nb, REQ_OP_WRITE, off >> SECTOR_SHIFT, buf.data(), len,
           op ? REQ_FUA : 0);
      memcpy(&shadow[off], buf.data(), len);
    } else if (op == 2) {
      memset(rbuf.data(), 0xee, len);
      DoIo(nb, REQ_OP_READ, off >> SECTOR_SHIFT, rbuf.data(), len);
      size_t bad = 0;
      while (bad < len && rbuf[bad] == shadow[off + bad]) bad++;
      ASSERT_EQ(bad, len) << "round " << round << " off " << off << " len "
                          << len;
    } else {
      ASSERT_EQ(null_process_bio(nb, nullptr, REQ_OP_DISCARD,
                                 off >> SECTOR_SHIFT, len >> SECTOR_SHIFT),
                BLK_STS_OK);
      memset(&shadow[off], 0, len);
    }
  }
  // Full read-back, also after a power cycle (data survives; the disk does not).
  for (int pass = 0; pass < 2; pass++) {
    for (size_t off = 0; off < dev_bytes; off += buf.size()) {
      DoIo(nb, REQ_OP_READ, off >> SECTOR_SHIFT, rbuf.data(), buf.size());
      ASSERT_EQ(memcmp(rbuf.data(), &shadow[off], buf.size()), 0) << off;
    }
    ASSERT_EQ(Store(dev, "power", "0"), 1);
    ASSERT_EQ(Store(dev, "power", "1"), 1);
    nb = dev->nullb;
  }
  nullb_group_drop(dev);
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, NullBlkStorageTest,
                         ::testing::Values(512, 1024, 2048, 4096));

TEST_F(NullBlkTest, DiscardFreesPagesAndCacheFlushes) {
  struct nullb_device *dev = nullb_group_make("c");
  Store(dev, "memory_backed", "1");
  Store(dev, "discard", "1");
  Store(dev, "cache_size", "1");  // 1 MiB write-back cache
  Store(dev, "size", "8");
  ASSERT_EQ(Store(dev, "power", "1"), 1);
  struct nullb *nb = dev->nullb;
  PageBuf buf(3 << 20);
  for (size_t i = 0; i < buf.size(); i++) buf[i] = (char)(i * 7 + 3);
  DoIo(nb, REQ_OP_WRITE, 0, buf.data(), buf.size());
  EXPECT_LE(dev->curr_cache, 1u << 20);  // cache kept within its size
  EXPECT_EQ(null_process_bio(nb, nullptr, REQ_OP_FLUSH, 0, 0), BLK_STS_OK);
  EXPECT_EQ(dev->curr_cache, 0u);
  PageBuf rbuf(buf.size());
  DoIo(nb, REQ_OP_READ, 0, rbuf.data(), rbuf.size());
  EXPECT_EQ(memcmp(buf.data(), rbuf.data(), buf.size()), 0);

  // Discard everything: every page leaves the radix tree.
  EXPECT_EQ(null_handle_discard(dev, 0, buf.size() >> SECTOR_SHIFT),
            BLK_STS_OK);
  EXPECT_EQ(dev->data.rnode, nullptr);
  DoIo(nb, REQ_OP_READ, 0, rbuf.data(), rbuf.size());
  EXPECT_EQ(std::count(rbuf.begin(), rbuf.end(), 0), (long)rbuf.size());
  nullb_group_drop(dev);
}

TEST_F(NullBlkTest, BadblocksPartialIoAndOnce) {
  struct nullb_device *dev = nullb_group_make("bad");
  Store(dev, "memory_backed", "1");
  Store(dev, "blocksize", "4096");
  Store(dev, "size", "1");
  Store(dev, "badblocks_partial_io", "1");
  Store(dev, "badblocks_once", "1");
  Store(dev, "badblocks", "+20-20");
  ASSERT_EQ(Store(dev, "power", "1"), 1);
  unsigned int nr = 32;
  EXPECT_EQ(null_check_badblocks(dev, 0, &nr), BLK_STS_IOERR);
  EXPECT_EQ(nr, 16u);  // up to the 4 KiB block holding sector 20
  nr = 32;
  EXPECT_EQ(null_check_badblocks(dev, 0, &nr), BLK_STS_OK);  // "once": cleared
  EXPECT_EQ(nr, 32u);
  // Through a bio: partial write happens, status is an error.
  Store(dev, "badblocks", "+8-8");
  PageBuf buf(8192), rbuf(8192);
  memset(buf.data(), 'x', 8192);
  memset(rbuf.data(), 0, 8192);
  struct bio *bio = bio_alloc(nullptr, 1, REQ_OP_WRITE, GFP_KERNEL);
  bio_add_virt_nofail(bio, buf.data(), buf.size());
  EXPECT_EQ(null_process_bio(dev->nullb, bio, REQ_OP_WRITE, 0, 16),
            BLK_STS_IOERR);
  bio_put(bio);
  bio = bio_alloc(nullptr, 1, REQ_OP_READ, GFP_KERNEL);
  bio_add_virt_nofail(bio, rbuf.data(), rbuf.size());
  EXPECT_EQ(null_process_bio(dev->nullb, bio, REQ_OP_READ, 0, 16), BLK_STS_OK);
  bio_put(bio);
  EXPECT_EQ(rbuf[4095], 'x');
  EXPECT_EQ(rbuf[4096], 0);
  nullb_group_drop(dev);
}

TEST_F(NullBlkTest, ThrottleRefillsPerTick) {
  uk::clock_use_virtual();
  struct nullb_device *dev = nullb_group_make("slow");
  Store(dev, "mbps", "1");
  ASSERT_EQ(Store(dev, "power", "1"), 1);
  struct nullb *nb = dev->nullb;
  EXPECT_TRUE(test_bit(NULLB_DEV_FL_THROTTLED, &dev->flags));
  // 1 MiB/s: 20971 bytes for each of the 50 ticks a second.
  const long per_tick = (1 << 20) / 50;
  EXPECT_EQ(atomic_long_read(&nb->cur_bytes), per_tick);
  EXPECT_TRUE(hrtimer_active(&nb->bw_timer));
  // A tick with nothing spent stops the timer (null_blk_io_test.cc's
  // ThrottlingStallsUntilRefill spends the budget and restarts it).
  uk::virtual_clock_advance(NSEC_PER_SEC / 50);
  EXPECT_FALSE(hrtimer_active(&nb->bw_timer));
  // mbps is capped at 40960 at power on.
  struct nullb_device *dev2 = nullb_group_make("fast");
  Store(dev2, "mbps", "100000");
  ASSERT_EQ(Store(dev2, "power", "1"), 1);
  EXPECT_EQ(dev2->mbps, 40960u);
  nullb_group_drop(dev2);
  nullb_group_drop(dev);
  uk::clock_use_host();
}

}  // namespace
