// SPDX-License-Identifier: GPL-2.0-only
// Context-switch counters (uk/shim/ctxsw.h).
#include <sys/resource.h>

#include <uk/shim/ctxsw.h>

namespace uk {

namespace {

CtxswCounts counts_of(int who) {
  struct rusage ru {};
  if (getrusage(who, &ru) != 0) return {};
  return {static_cast<uint64_t>(ru.ru_nvcsw),
          static_cast<uint64_t>(ru.ru_nivcsw)};
}

}  // namespace

CtxswCounts ctxsw_counts() { return counts_of(RUSAGE_THREAD); }

CtxswCounts ctxsw_counts_process() { return counts_of(RUSAGE_SELF); }

}  // namespace uk
