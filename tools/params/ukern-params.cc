// SPDX-License-Identifier: GPL-2.0-only
// ukern-params: the module parameters of every ukern layer, grouped by
// module as /sys/module/*/parameters shows them, with their values after
// UKERN_CMDLINE; or a check of a command line. Run by `tools/ukern params`.
//
//   ukern-params                   the listing (values after UKERN_CMDLINE)
//   ukern-params --check STRING    exit 0 if STRING parses, else 1 (the
//                                  messages name each bad parameter)
//   ukern-params --markdown        the table of docs/params.md (defaults)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <uk/shim/cmdline.h>

namespace {

int Usage() {
  fprintf(stderr,
          "usage: ukern-params [--check STRING | --markdown]\n"
          "  lists every module parameter (values after UKERN_CMDLINE), or\n"
          "  checks a UKERN_CMDLINE string (exit 1 on an unknown name or a\n"
          "  bad value)\n");
  return 2;
}

// The default of a parameter whose value depends on the machine.
std::string DefaultOf(const uk::ParamInfo &p) {
  if (p.full_name == "nr_cpus") return "host CPUs";
  return p.value.empty() ? "(empty)" : p.value;
}

void Markdown(const std::vector<uk::ParamInfo> &all) {
  printf("| parameter | type | default | meaning |\n");
  printf("|-----------|------|---------|---------|\n");
  for (const auto &p : all) {
    std::string desc = p.description;
    for (size_t i = 0; (i = desc.find('|', i)) != std::string::npos; i += 2)
      desc.replace(i, 1, "\\|");
    printf("| `%s` | %s | `%s` | %s |\n", p.full_name.c_str(),
           p.type.empty() ? "-" : p.type.c_str(), DefaultOf(p).c_str(),
           desc.c_str());
  }
}

void Listing(const std::vector<uk::ParamInfo> &all) {
  size_t wname = 0, wvalue = 0;
  for (const auto &p : all) {
    wname = std::max(wname, p.full_name.size());
    wvalue = std::max(wvalue, p.value.size());
  }
  std::string module;
  for (const auto &p : all) {
    if (p.module != module) {
      printf("%s%s (/sys/module/%s/parameters)\n", module.empty() ? "" : "\n",
             p.module.c_str(), p.module.c_str());
      module = p.module;
    }
    printf("  %-*s = %-*s  %-6s %s\n", static_cast<int>(wname),
           p.full_name.c_str(), static_cast<int>(wvalue), p.value.c_str(),
           p.type.c_str(), p.description.c_str());
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--check") == 0) {
    if (uk::parse_cmdline("UKERN_CMDLINE", argv[2]) != 0) {
      fprintf(stderr, "ukern-params: \"%s\": rejected\n", argv[2]);
      return 1;
    }
    printf("ukern-params: \"%s\": ok\n", argv[2]);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
    Markdown(uk::list_params());
    return 0;
  }
  if (argc != 1) return Usage();
  if (uk::parse_cmdline_env() != 0) return 1;
  Listing(uk::list_params());
  return 0;
}
