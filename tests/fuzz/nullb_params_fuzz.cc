// SPDX-License-Identifier: GPL-2.0-only
// drivers/block/null_blk's two parsers: the module parameter string
// ("modprobe null_blk ARGS", kernel/params.c's parse_args()) and the
// configfs attribute writes of a device (nullb_attr_store()), including
// power=1, which validates the configuration and adds the device.
//
// Input: a flags byte; the parameter string up to a NUL; then records of
// [attribute choice][value up to a NUL]. Flags bit 0: module_init() with
// the parameters (when nr_devices <= 2). Checks: every call returns success
// or one of its documented errors, an attribute store returns the length
// written (or, for badblocks, v6.12's 1 when the table refuses), a show
// fits its page and writes only the length it returns, and after the
// device is dropped and the parameters restored nothing is left behind
// (checked after each of the first 64 inputs of a process and after every
// 64th input on: LeakCheckDue()).
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/err.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/printk.h>

#include "../../blk/blk-mq.h"
#include "fuzz_common.h"

namespace {

constexpr size_t kPage = 4096;

const std::vector<std::string> &AttrNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    std::string page(kPage, '\0');
    ssize_t n = nullb_group_features_show(page.data());
    if (n <= 0) uk::fuzz::Finding("nullb_group_features_show() gave %zd", n);
    std::string s(page.c_str());
    size_t start = 0;
    while (start < s.size()) {
      size_t end = s.find_first_of(",\n", start);
      if (end == std::string::npos) end = s.size();
      if (end > start) v.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    for (const char *g :
         {"timeout_inject/", "requeue_inject/", "init_hctx_fault_inject/"})
      for (const char *k :
           {"times", "space", "probability", "interval", "verbose", "bad"})
        v.push_back(std::string(g) + k);
    v.push_back("power");
    v.push_back("badblocks");
    v.push_back("no_such_attribute");
    return v;
  }();
  return names;
}

// The length a badblocks store of "+START-END" or "-START-END" hands to
// badblocks_set() or badblocks_clear() (0 when the value is not one).
unsigned long long BadblocksLength(const std::string &val) {
  size_t b = val.find_first_not_of(" \t\n\v\f\r");
  if (b == std::string::npos || (val[b] != '+' && val[b] != '-')) return 0;
  size_t dash = val.find('-', b + 1);
  if (dash == std::string::npos) return 0;
  unsigned long long start = strtoull(val.c_str() + b + 1, nullptr, 0);
  unsigned long long end = strtoull(val.c_str() + dash + 1, nullptr, 0);
  return end >= start ? end - start + 1 : 0;
}

bool IsOneOf(long r, std::initializer_list<long> errs) {
  for (long e : errs)
    if (r == e) return true;
  return false;
}

void Settle() {
  if (kblockd_workqueue) flush_workqueue(kblockd_workqueue);
  uk::fuzz::Settle(true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool once = [] {
    null_blk_reset_module_params();
    (void)AttrNames();
    Settle();
    return true;
  }();
  (void)once;
  uk::fuzz::Input in(data, size);
  uint8_t flags = in.u8();
  std::string args = in.str();
  // The counts at the start of the inputs since the last leak check.
  static uk::fuzz::Counts before;
  static bool counted;
  if (!counted) {
    (void)uk::fuzz::CacheDiff();
    before = uk::fuzz::Count();
    counted = true;
  }

  int r = null_blk_module_params(args.c_str());
  if (!IsOneOf(r, {0, -ENOENT, -EINVAL, -ERANGE, -ENOSPC, -ENOMEM}))
    uk::fuzz::Finding("null_blk_module_params(\"%s\") gave %d", args.c_str(),
                      r);
  char page[kPage + 1];
  if (flags & 1) {
    ssize_t n = null_blk_param_show("nr_devices", page);
    if (n > 0 && strtoul(page, nullptr, 10) <= 2) {
      int e = null_init();
      if (!IsOneOf(e, {0, -EINVAL, -ENOMEM, -ENODEV, -ERANGE}))
        uk::fuzz::Finding("null_init() after \"%s\" gave %d", args.c_str(), e);
      if (e == 0) {
        null_exit();
      }
    }
  }

  struct nullb_device *dev = nullb_group_make("fz");
  if (IS_ERR_OR_NULL(dev))
    uk::fuzz::Finding("nullb_group_make() gave %ld", PTR_ERR(dev));
  const auto &names = AttrNames();
  while (!in.empty()) {
    const std::string &attr = names[in.u8() % names.size()];
    std::string val = in.str();
    long store_warns = uk::warn_count;
    ssize_t w = nullb_attr_store(dev, attr.c_str(), val.c_str());
    // v6.12's badblocks_set() and badblocks_clear() take an int length: a
    // range past INT_MAX sectors may arrive negative (a WARN at the end of
    // the walk) or zero, and a failed set or clear returns 1, which the
    // store passes on as the bytes written. v6.12's behaviour, not a
    // finding (NullBlkTest.BadblocksLengthPastIntMaxIsTruncatedAsV612Does).
    bool bb = attr == "badblocks";
    if (bb && w >= 0 && BadblocksLength(val) > INT_MAX)
      before.warns += uk::warn_count - store_warns;
    // With the table full, v6.12's behind_merge() counts the merged sectors
    // twice in its check and warns on a correct merge
    // (BadblocksTest.FullTableMergeBehindWarnsAsV612Does).
    else if (bb && uk::warn_count - store_warns == 1 &&
             strcmp(uk::last_warn_condition(),
                    "(BB_LEN(p[behind]) + merged) >= BB_MAX_LEN") == 0)
      before.warns += 1;
    if (w >= 0 && static_cast<size_t>(w) != val.size() && !(bb && w == 1))
      uk::fuzz::Finding("store %s=\"%s\" gave %zd, not its length",
                        attr.c_str(), val.c_str(), w);
    if (w < 0 && !IsOneOf(w, {-EINVAL, -EBUSY, -ENOENT, -EPERM, -ERANGE,
                              -ENOMEM, -ENOSPC, -EEXIST, -ENODEV, -EOPNOTSUPP}))
      uk::fuzz::Finding("store %s=\"%s\" gave %zd", attr.c_str(), val.c_str(),
                        w);
    // configfs hands a zeroed page to ->show(): nothing may follow its
    // length, and a length past the page is refused (-EIO).
    memset(page, 0, sizeof(page));
    long warns = uk::warn_count;
    ssize_t s = nullb_attr_show(dev, attr.c_str(), page);
    if (s >= 0 && (static_cast<size_t>(s) > kPage ||
                   strnlen(page + s, kPage + 1 - s) != 0))
      uk::fuzz::Finding("show %s gave %zd bytes and wrote past them",
                        attr.c_str(), s);
    // The kernel's badblocks_show() counts what snprintf() would have
    // written, so a table past a page of text makes configfs warn (once)
    // and fail the read: v6.12's behaviour, not a finding.
    bool bb_past_page = s == -EIO && attr == "badblocks";
    if (bb_past_page) before.warns += uk::warn_count - warns;
    if (s < 0 && !bb_past_page && !IsOneOf(s, {-ENOENT, -EPERM, -EINVAL}))
      uk::fuzz::Finding("show %s gave %zd", attr.c_str(), s);
  }
  nullb_group_drop(dev);
  // Module exit: a shared_tags device builds the module's global tag set,
  // which stays until then (null_exit()).
  null_free_global_tag_set();
  null_blk_reset_module_params();
  if (null_nr_devices() != 0)
    uk::fuzz::Finding("%u devices stay after the drop", null_nr_devices());
  // The counts over the inputs since the last check (one input on the
  // first 64 of a process): a leak is reported within 64 inputs of the one
  // that made it (UKERN_FUZZ_CHECK_EVERY=1 finds the input).
  if (uk::fuzz::LeakCheckDue()) {
    Settle();
    uk::fuzz::CheckNoLeak("the null_blk configurations since the last check",
                          before, uk::fuzz::Count());
    counted = false;
  }
  return 0;
}
