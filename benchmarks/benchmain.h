// SPDX-License-Identifier: GPL-2.0-only
#ifndef UKERN_BENCHMARKS_BENCHMAIN_H_
#define UKERN_BENCHMARKS_BENCHMAIN_H_

#include <algorithm>
#include <cstddef>
#include <thread>
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

// Quantile q (0..1) of `v`: sorts a copy, then mixes the two samples on
// either side of position q * (n - 1) linearly; an empty `v` gives 0. With
// q = 0.5 this is the median (for an even count, the average of the two
// middle samples).
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t i = static_cast<size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (pos - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

inline double Median(const std::vector<double> &v) { return Quantile(v, 0.5); }

// Submitter threads of the sbitmap-patch experiments: 2 x host CPUs, 2..20
// (the patch ran 20 fio jobs on a 20-CPU box).
inline unsigned DefaultSubmitters() {
  unsigned n = 2 * std::thread::hardware_concurrency();
  return std::clamp(n, 2u, 20u);
}

}  // namespace uk::bench

#endif  // UKERN_BENCHMARKS_BENCHMAIN_H_
