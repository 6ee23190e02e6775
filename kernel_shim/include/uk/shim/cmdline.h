// SPDX-License-Identifier: GPL-2.0-only
// The kernel command line of a ukern program: UKERN_CMDLINE, parsed with
// kernel/params.c's parse_args() over every module parameter the program
// (or libukern_aio.so) holds, and the listing behind `tools/ukern params`.
#ifndef UK_SHIM_CMDLINE_H_
#define UK_SHIM_CMDLINE_H_

#include <string>
#include <vector>

namespace uk {

// Parses `cmdline` ("null_blk.irqmode=1 aio.lookup=list ...") against every
// registered parameter, as start_kernel() parses the boot command line; a
// word that is no parameter goes to the __setup() option it names
// (<uk/linux/init.h>), and one that names neither is an error here. Each bad parameter is
// reported through printk as "<doing>: ...". 0, or the error of the last
// bad parameter: -ENOENT (unknown name), -EINVAL/-ERANGE (bad value),
// -ENOSPC (value too long).
int parse_cmdline(const char *doing, const char *cmdline);

// Reads UKERN_CMDLINE (unset or empty: nothing to do) with parse_cmdline().
// On an error it also prints one line saying that the program stops, and
// returns the error; the caller exits with status 1 (tests/testmain.cc,
// benchmarks/benchmain.cc, and libukern_aio.so's constructor).
int parse_cmdline_env();

// One registered parameter as /sys/module/<module>/parameters/<name> shows it.
struct ParamInfo {
  std::string module;       // "null_blk"; "kernel" for core_param()s
  std::string name;         // "irqmode"
  std::string full_name;    // "null_blk.irqmode" (what UKERN_CMDLINE takes)
  std::string type;         // "int", "bool", ... or what MODULE_PARM_TYPE says
  std::string value;        // the current value, without the newline
  std::string description;  // MODULE_PARM_DESC()
};

// Every registered parameter, by module, then by name.
std::vector<ParamInfo> list_params();

}  // namespace uk

#endif  // UK_SHIM_CMDLINE_H_
