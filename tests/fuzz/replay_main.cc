// SPDX-License-Identifier: GPL-2.0-only
// main() for a fuzz target outside the fuzz preset: each file named, or each
// file of each directory named (in name order), is given to
// LLVMFuzzerTestOneInput() once, as libFuzzer does with -runs=0. A finding
// is the target's abort (or a sanitizer's report); exit 0 otherwise.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

int RunFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  // A copy of its own, so that a read past the input is a heap overflow.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  uint8_t *p = data.empty() ? nullptr : data.data();
  if (data.empty()) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(""), 0);
  } else {
    LLVMFuzzerTestOneInput(p, data.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  size_t n = 0;
  int rc = 0;

  for (int i = 1; i < argc; i++) {
    std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;

    if (std::filesystem::is_directory(arg)) {
      for (auto &e : std::filesystem::directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    for (auto &f : files) {
      rc |= RunFile(f);
      n++;
    }
  }
  printf("replayed %zu inputs\n", n);
  if (n == 0) {
    fprintf(stderr, "no inputs: usage: %s DIR_OR_FILE...\n", argv[0]);
    return 1;
  }
  return rc;
}
