// SPDX-License-Identifier: GPL-2.0-only
// What the fuzz targets share: reading an input as a stream of choices, the
// finding report, and the leak check (settle the deferred frees, then the
// slab, percpu, context, request and WARN counts).
#ifndef UKERN_TESTS_FUZZ_FUZZ_COMMON_H_
#define UKERN_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <uk/linux/aio.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/percpu.h>
#include <uk/linux/printk.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

namespace uk::fuzz {

// The input, consumed front to back; past its end every read gives 0.
class Input {
 public:
  Input(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() {
    return static_cast<uint32_t>(u16() | uint32_t{u16()} << 16);
  }
  uint64_t u64() { return u32() | uint64_t{u32()} << 32; }
  // Bytes up to the next NUL (or the end), the NUL taken too.
  std::string str() {
    std::string s;
    while (p_ < end_ && *p_) s.push_back(static_cast<char>(*p_++));
    if (p_ < end_) p_++;
    return s;
  }

 private:
  const uint8_t *p_;
  const uint8_t *end_;
};

// A finding: the report, then abort() so that libFuzzer keeps the input.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void Finding(
    const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FINDING: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

// libFuzzer's own leak pass (-detect_leaks=1) runs the input again and then
// LeakSanitizer after any input with more mallocs than frees; RCU's and
// aio's deferred frees make that most inputs, each pass costs milliseconds,
// and libFuzzer gives the pass up for good after 1000 of them.
// tools/ukern fuzz runs the targets with -detect_leaks=0 and each input
// ends here instead: a LeakSanitizer pass (some 80 ms) on the first input
// of a process and on every 16384th after, so a leaked allocation is
// reported within 16384 inputs of the one that made it (and at the
// process's exit). Where LeakSanitizer is not linked in (the release and
// tsan replays), nothing.
extern "C" int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
inline void LeakSanitizerDue() {
  static unsigned long n;
  if (n++ % 16384 || !__lsan_do_recoverable_leak_check) return;
  if (__lsan_do_recoverable_leak_check())
    Finding("LeakSanitizer reports a leak (above)");
}

// Whether this input ends with the full leak check: settling the deferred
// frees costs RCU grace periods, so the check runs on the first 64 inputs of
// a process (a corpus replay) and on every 64th after; a leak is caught
// within 64 inputs of the one that made it.
// UKERN_FUZZ_CHECK_EVERY=1 checks after every input (to find the input).
// It runs LeakSanitizerDue() too.
inline bool LeakCheckDue() {
  LeakSanitizerDue();
  static unsigned long n;
  static const unsigned long every = [] {
    const char *e = getenv("UKERN_FUZZ_CHECK_EVERY");
    return e && atol(e) > 0 ? static_cast<unsigned long>(atol(e)) : 64UL;
  }();
  return n++ < 64 || n % every == 0;
}

struct Counts {
  long slab, live_ctx, live_reqs, warns;
  size_t pcpu;
};

// The caches whose live objects differ between two walks, for the report.
inline std::string CacheDiff() {
  static std::map<std::string, long> last;
  std::map<std::string, long> now;
  uk::slab_for_each_cache(
      [](const char *name, long live, void *arg) {
        (*static_cast<std::map<std::string, long> *>(arg))[name] += live;
      },
      &now);
  std::string s;
  for (auto &[name, live] : now) {
    long d = live - (last.count(name) ? last[name] : 0);
    if (d) s += " " + name + " " + std::to_string(d);
  }
  last = now;
  return s;
}

// Runs what is deferred (aio's frees, RCU callbacks) until the slab count
// holds. The per-CPU radix-tree node preloads are a cache, not a leak: they
// are emptied as on CPU offline.
inline void Settle(bool rcu) {
  long prev;
  int cpu;
  for (int i = 0; i < 20; i++) {
    prev = uk::slab_total_allocated();
    uk::aio::quiesce();
    if (rcu) rcu_barrier();
    for_each_possible_cpu(cpu) radix_tree_cpu_dead(cpu);
    if (uk::slab_total_allocated() == prev) break;
  }
}

inline Counts Count() {
  Counts c{};
  c.slab = uk::slab_total_allocated();
  c.live_ctx = uk::aio::nr_live_ctx();
  c.live_reqs = uk::aio::nr_live_reqs();
  c.warns = uk::warn_count;
  c.pcpu = uk::percpu_bytes_in_use();
  return c;
}

// A finding for anything @b holds beyond @a.
// Call CacheDiff() when @a is taken, so that a report can name the caches.
inline void CheckNoLeak(const char *what, const Counts &a, const Counts &b) {
  if (a.slab != b.slab || a.pcpu != b.pcpu || a.live_ctx != b.live_ctx ||
      a.live_reqs != b.live_reqs || a.warns != b.warns)
    Finding(
        "%s left behind: slab objects %+ld (%s), percpu bytes %+ld, "
        "contexts %+ld, requests %+ld, WARNs %+ld",
        what, b.slab - a.slab, CacheDiff().c_str(),
        static_cast<long>(b.pcpu - a.pcpu), b.live_ctx - a.live_ctx,
        b.live_reqs - a.live_reqs, b.warns - a.warns);
}

}  // namespace uk::fuzz

#endif  // UKERN_TESTS_FUZZ_FUZZ_COMMON_H_
