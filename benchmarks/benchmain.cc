// SPDX-License-Identifier: GPL-2.0-only
// main() for the benchmark suites. `--ukern_full` selects the full-size
// configurations (see benchmarks/README.md); the default is a quick run.
// UKERN_CMDLINE sets module parameters first (docs/params.md); a bad one
// ends the program with status 1.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include <uk/shim/cmdline.h>

#include "benchmain.h"

namespace uk::bench {
bool full = false;
}

int main(int argc, char **argv) {
  if (uk::parse_cmdline_env() != 0) return 1;
  int out = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--ukern_full") == 0)
      uk::bench::full = true;
    else
      argv[out++] = argv[i];
  }
  argc = out;
  uk::bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

namespace uk::bench {
namespace {
std::vector<void (*)()> &registrars() {
  static std::vector<void (*)()> r;
  return r;
}
}  // namespace
Registrar::Registrar(void (*fn)()) { registrars().push_back(fn); }
void RegisterAll() {
  for (auto fn : registrars()) fn();
}
}  // namespace uk::bench
