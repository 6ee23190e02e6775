// SPDX-License-Identifier: GPL-2.0-only
#ifndef UKERN_BENCHMARKS_BENCHMAIN_H_
#define UKERN_BENCHMARKS_BENCHMAIN_H_

#include <vector>

namespace uk::bench {

// True with `tools/ukern bench --full`: run the full-size configurations.
extern bool full;

// Suites whose benchmark list depends on `full` register it from here; it
// runs after the flags are parsed. Static BENCHMARK() macros work as usual.
struct Registrar {
  explicit Registrar(void (*fn)());
};
void RegisterAll();

}  // namespace uk::bench

#endif  // UKERN_BENCHMARKS_BENCHMAIN_H_
