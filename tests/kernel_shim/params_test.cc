// SPDX-License-Identifier: GPL-2.0-only
// kernel/params.c: parse_args() and the standard types, the registry the
// module_param()s of every layer land in, the era switches set by name,
// and UKERN_CMDLINE read by the test main and by libukern_aio.so.
#define KBUILD_MODNAME "params_test"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/err.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/smp.h>
#include <uk/shim/cmdline.h>
#include <uk/shim/cpu.h>
#include <uk/shim/printk.h>

#include "testmain.h"

extern char **environ;

namespace {

unsigned char t_byte;
short t_short;
unsigned short t_ushort;
int t_int;
unsigned int t_uint;
long t_long;
unsigned long t_ulong;
unsigned long long t_ullong;
unsigned int t_hex;
bool t_bool;
bool t_invbool;
int t_bint;
char *t_charp;
char t_string[8];
unsigned int t_minmax;

module_param_named(byte, t_byte, byte, 0644);
module_param_named(short, t_short, short, 0644);
module_param_named(ushort, t_ushort, ushort, 0644);
module_param_named(int, t_int, int, 0644);
MODULE_PARM_DESC(int, "an int for the tests");
module_param_named(uint, t_uint, uint, 0644);
module_param_named(long, t_long, long, 0644);
module_param_named(ulong, t_ulong, ulong, 0644);
module_param_named(ullong, t_ullong, ullong, 0644);
module_param_named(hex, t_hex, hexint, 0644);
module_param_named(some_bool, t_bool, bool, 0644);
module_param_named(inv, t_invbool, invbool, 0644);
module_param_named(bint, t_bint, bint, 0644);
module_param_named(charp, t_charp, charp, 0644);
module_param_string(str, t_string, sizeof(t_string), 0644);

int set_minmax(const char *val, const struct kernel_param *kp) {
  return param_set_uint_minmax(val, kp, 2, 9);
}
const struct kernel_param_ops minmax_ops = {
    .flags = 0, .set = set_minmax, .get = param_get_uint, .free = nullptr};
module_param_cb(minmax, &minmax_ops, &t_minmax, 0644);

std::vector<std::string> *g_log;
void CaptureHook(int level, const char *text) { g_log->push_back(text); }

class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log = &log_;
    uk::printk_hook = CaptureHook;
  }
  void TearDown() override {
    uk::printk_hook = nullptr;
    g_log = nullptr;
  }
  // parse_cmdline() on a copy; each call starts with a clean log.
  int Parse(const std::string &s) {
    log_.clear();
    return uk::parse_cmdline("test", s.c_str());
  }
  bool Logged(const std::string &needle) {
    for (auto &l : log_)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
  static std::string Show(const char *name) {
    char page[PAGE_SIZE];
    int n = param_show(name, page);
    return n < 0 ? "ERR" + std::to_string(n) : std::string(page, n);
  }
  std::vector<std::string> log_;
};

// Runs `cmd` under sh, stdout and stderr together; returns the exit status.
int RunShell(const std::string &cmd, std::string *out) {
  FILE *f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[512];
  out->clear();
  while (fgets(buf, sizeof(buf), f) != nullptr) *out += buf;
  int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

TEST_F(ParamsTest, NextArgSplitsAndUnquotes) {
  char args[] = "a=1 \"b=x y\"   c=\"p q\" d -- e=2";
  char *param, *val, *rest = args;

  rest = next_arg(rest, &param, &val);
  EXPECT_STREQ(param, "a");
  EXPECT_STREQ(val, "1");
  rest = next_arg(rest, &param, &val);
  EXPECT_STREQ(param, "b");
  EXPECT_STREQ(val, "x y");
  rest = next_arg(rest, &param, &val);
  EXPECT_STREQ(param, "c");
  EXPECT_STREQ(val, "p q");
  rest = next_arg(rest, &param, &val);
  EXPECT_STREQ(param, "d");
  EXPECT_EQ(val, nullptr);
  rest = next_arg(rest, &param, &val);
  EXPECT_STREQ(param, "--");
  EXPECT_STREQ(rest, "e=2");
}

TEST_F(ParamsTest, DashesAndUnderscoresAreEqual) {
  EXPECT_TRUE(parameq("params-test.some-bool", "params_test.some_bool"));
  EXPECT_FALSE(parameq("params_test.some_bool", "params_test.some_boo"));
  EXPECT_TRUE(parameqn("a-b", "a_bc", 3));
  ASSERT_EQ(Parse("params-test.int=5"), 0);
  EXPECT_EQ(t_int, 5);
  ASSERT_EQ(Parse("  params_test.some-bool=0\n  params-test.int=6  "), 0);
  EXPECT_FALSE(t_bool);
  EXPECT_EQ(t_int, 6);
}

TEST_F(ParamsTest, UnknownNameIsEnoent) {
  EXPECT_EQ(Parse("params_test.nosuch=1"), -ENOENT);
  EXPECT_TRUE(Logged("test: Unknown parameter `params_test.nosuch'"));
  // Without its module prefix a parameter is unknown too.
  EXPECT_EQ(Parse("int=1"), -ENOENT);
  EXPECT_EQ(Parse("nosuch.int=1"), -ENOENT);
}

TEST_F(ParamsTest, BadValueIsEinvalAndNamesTheParameter) {
  t_int = 7;
  EXPECT_EQ(Parse("params_test.int=abc"), -EINVAL);
  EXPECT_TRUE(Logged("`abc' invalid for parameter `params_test.int'"));
  EXPECT_EQ(Parse("params_test.int"), -EINVAL);  // an int needs a value
  EXPECT_EQ(Parse("params_test.int="), -EINVAL);
  EXPECT_EQ(Parse("params_test.int=1.5"), -EINVAL);
  EXPECT_EQ(t_int, 7);
}

TEST_F(ParamsTest, ParsingGoesOnAfterAnErrorAndReturnsTheLast) {
  t_int = 0;
  t_uint = 0;
  EXPECT_EQ(Parse("params_test.int=x params_test.uint=3 params_test.nope"),
            -ENOENT);
  EXPECT_EQ(t_uint, 3u);
  EXPECT_TRUE(Logged("invalid for parameter `params_test.int'"));
  EXPECT_TRUE(Logged("Unknown parameter `params_test.nope'"));
}

TEST_F(ParamsTest, DoubleDashEndsTheParameters) {
  char args[] = "params_test.int=11 -- params_test.int=12 rest";
  char *r = parse_args("test", args, __start___param, kernel_param_count(),
                       -32768, 32767, nullptr, nullptr);
  ASSERT_FALSE(IS_ERR(r));
  EXPECT_STREQ(r, "params_test.int=12 rest");
  EXPECT_EQ(t_int, 11);
}

TEST_F(ParamsTest, BoolForms) {
  for (const char *v : {"1", "y", "Y", "yes", "on", "true", "TRUE", "On"}) {
    t_bool = false;
    EXPECT_EQ(Parse(std::string("params_test.some_bool=") + v), 0) << v;
    EXPECT_TRUE(t_bool) << v;
  }
  for (const char *v : {"0", "n", "N", "no", "off", "false", "oFf"}) {
    t_bool = true;
    EXPECT_EQ(Parse(std::string("params_test.some_bool=") + v), 0) << v;
    EXPECT_FALSE(t_bool) << v;
  }
  t_bool = false;
  EXPECT_EQ(Parse("params_test.some_bool"), 0);  // a bare name sets it
  EXPECT_TRUE(t_bool);
  EXPECT_EQ(Show("params_test.some_bool"), "Y\n");
  EXPECT_EQ(Parse("params_test.some_bool=maybe"), -EINVAL);
  EXPECT_EQ(Parse("params_test.some_bool="), -EINVAL);
  EXPECT_TRUE(t_bool);

  // invbool stores the opposite and needs a value; bint is an int.
  EXPECT_EQ(Parse("params_test.inv=1"), 0);
  EXPECT_FALSE(t_invbool);
  EXPECT_EQ(Show("params_test.inv"), "Y\n");
  EXPECT_EQ(Parse("params_test.inv"), -EINVAL);
  EXPECT_EQ(Parse("params_test.bint=on"), 0);
  EXPECT_EQ(t_bint, 1);
  EXPECT_EQ(Parse("params_test.bint=2"), -EINVAL);
}

TEST_F(ParamsTest, IntegerRangesAreKstrtox) {
  struct Case {
    const char *arg;
    int err;
  } cases[] = {
      {"params_test.byte=255", 0},
      {"params_test.byte=256", -ERANGE},
      {"params_test.byte=-1", -EINVAL},
      {"params_test.short=-32768", 0},
      {"params_test.short=32768", -ERANGE},
      {"params_test.ushort=65535", 0},
      {"params_test.ushort=65536", -ERANGE},
      {"params_test.int=-2147483648", 0},
      {"params_test.int=2147483648", -ERANGE},
      {"params_test.uint=4294967295", 0},
      {"params_test.uint=4294967296", -ERANGE},
      {"params_test.uint=-1", -EINVAL},
      {"params_test.long=-9223372036854775808", 0},
      {"params_test.long=9223372036854775808", -ERANGE},
      {"params_test.ulong=18446744073709551615", 0},
      {"params_test.ulong=18446744073709551616", -ERANGE},
      {"params_test.ullong=18446744073709551615", 0},
      {"params_test.int=+7", 0},
      {"params_test.int=7x", -EINVAL},
  };
  for (const Case &c : cases) EXPECT_EQ(Parse(c.arg), c.err) << c.arg;

  // Base 0: hexadecimal and octal prefixes.
  ASSERT_EQ(Parse("params_test.int=0x1f params_test.uint=010"), 0);
  EXPECT_EQ(t_int, 31);
  EXPECT_EQ(t_uint, 8u);
  ASSERT_EQ(Parse("params_test.hex=0x2a params_test.short=-5"), 0);
  EXPECT_EQ(Show("params_test.hex"), "0x00002a\n");
  EXPECT_EQ(Show("params_test.short"), "-5\n");
  ASSERT_EQ(Parse("params_test.byte=200"), 0);
  EXPECT_EQ(Show("params_test.byte"), "200\n");

  // param_set_uint_minmax(): a range of the parameter's own.
  EXPECT_EQ(Parse("params_test.minmax=2"), 0);
  EXPECT_EQ(Parse("params_test.minmax=10"), -EINVAL);
  EXPECT_EQ(Parse("params_test.minmax=1"), -EINVAL);
  EXPECT_EQ(t_minmax, 2u);
}

TEST_F(ParamsTest, StringsAndCharp) {
  ASSERT_EQ(Parse("params_test.str=\"a b\""), 0);
  EXPECT_STREQ(t_string, "a b");
  ASSERT_EQ(Parse("\"params_test.str=1234567\""), 0);  // 7 + NUL fit
  EXPECT_STREQ(t_string, "1234567");
  EXPECT_EQ(Parse("params_test.str=12345678"), -ENOSPC);
  EXPECT_TRUE(Logged("params_test.str: string doesn't fit in 7 chars."));
  EXPECT_TRUE(Logged("`12345678' too large for parameter `params_test.str'"));
  EXPECT_STREQ(t_string, "1234567");

  // charp keeps its own copy; the next value frees the last one.
  ASSERT_EQ(Parse("params_test.charp=first"), 0);
  ASSERT_NE(t_charp, nullptr);
  EXPECT_STREQ(t_charp, "first");
  ASSERT_EQ(Parse("params_test.charp=\"second one\""), 0);
  EXPECT_STREQ(t_charp, "second one");
  EXPECT_EQ(Show("params_test.charp"), "second one\n");
  EXPECT_EQ(Parse("params_test.charp=" + std::string(1025, 'x')), -ENOSPC);
  EXPECT_STREQ(t_charp, "second one");
}

TEST_F(ParamsTest, ModuleLoadFormTakesShortNames) {
  EXPECT_EQ(parse_module_args("params_test", "int=21 some-bool=0"), 0);
  EXPECT_EQ(t_int, 21);
  EXPECT_FALSE(t_bool);
  EXPECT_EQ(parse_module_args("params_test", "params_test.int=1"), -ENOENT);
  EXPECT_EQ(parse_module_args("params_test", nullptr), 0);
}

TEST_F(ParamsTest, RegistryListsEveryLayerByModule) {
  std::vector<uk::ParamInfo> all = uk::list_params();
  auto find = [&](const std::string &full) -> const uk::ParamInfo * {
    for (const auto &p : all)
      if (p.full_name == full) return &p;
    return nullptr;
  };
  for (const char *name :
       {"aio.lookup", "aio.reqs", "aio.ref", "aio.submit", "sbitmap.wake",
        "sbitmap.deferred_clear", "null_blk.irqmode", "null_blk.submit_queues",
        "null_blk.timeout", "nr_cpus", "rcu.membarrier",
        "printk.ignore_loglevel", "params_test.int"})
    EXPECT_NE(find(name), nullptr) << name;
  for (size_t i = 1; i < all.size(); i++) {
    const auto &a = all[i - 1], &b = all[i];
    EXPECT_TRUE(a.module < b.module ||
                (a.module == b.module && a.name < b.name))
        << a.full_name << " before " << b.full_name;
  }
  const uk::ParamInfo *p = find("params_test.int");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->module, "params_test");
  EXPECT_EQ(p->name, "int");
  EXPECT_EQ(p->type, "int");
  EXPECT_EQ(p->description, "an int for the tests");
  p = find("null_blk.hw_queue_depth");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->type, "int");
  EXPECT_EQ(p->value, "64");
  EXPECT_FALSE(p->description.empty());
  p = find("nr_cpus");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->module, "kernel");
  EXPECT_EQ(p->value, std::to_string(nr_cpu_ids));
  EXPECT_FALSE(p->description.empty());
  p = find("aio.lookup");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->type, "enum");
  EXPECT_EQ(p->value, "table");
}

TEST_F(ParamsTest, AioSwitchesBySetByName) {
  using uk::aio::LookupMode;
  ASSERT_EQ(uk::aio::aio_lookup_mode, LookupMode::kTable);
  ASSERT_EQ(Parse("aio.lookup=list"), 0);
  EXPECT_EQ(uk::aio::aio_lookup_mode, LookupMode::kList);
  EXPECT_EQ(Show("aio.lookup"), "list\n");
  ASSERT_EQ(Parse("aio.lookup=radix"), 0);
  EXPECT_EQ(uk::aio::aio_lookup_mode, LookupMode::kRadix);
  EXPECT_EQ(Parse("aio.lookup=hash"), -EINVAL);
  EXPECT_TRUE(Logged("aio.lookup: `hash' is not one of table|list|radix"));
  EXPECT_TRUE(Logged("`hash' invalid for parameter `aio.lookup'"));
  EXPECT_EQ(uk::aio::aio_lookup_mode, LookupMode::kRadix);
  EXPECT_EQ(Parse("aio.lookup=List"), -EINVAL);  // names are exact
  ASSERT_EQ(Parse("aio.lookup=table"), 0);
  EXPECT_EQ(uk::aio::aio_lookup_mode, LookupMode::kTable);

  ASSERT_EQ(Parse("aio.reqs=locked aio.ref=atomic aio.submit=ctx_lock"), 0);
  EXPECT_EQ(uk::aio::aio_reqs_mode, uk::aio::ReqsMode::kLocked);
  EXPECT_EQ(uk::aio::aio_ref_mode, uk::aio::RefMode::kAtomic);
  EXPECT_EQ(uk::aio::aio_submit_mode, uk::aio::SubmitMode::kCtxLock);
  ASSERT_EQ(Parse("aio.reqs=percpu aio.ref=percpu aio.submit=direct"), 0);
  EXPECT_EQ(uk::aio::aio_reqs_mode, uk::aio::ReqsMode::kPercpu);
  EXPECT_EQ(uk::aio::aio_ref_mode, uk::aio::RefMode::kPercpu);
  EXPECT_EQ(uk::aio::aio_submit_mode, uk::aio::SubmitMode::kDirect);
}

TEST_F(ParamsTest, SbitmapWakeSchemeAppliesToNewQueues) {
  struct sbitmap_queue sbq;

  ASSERT_EQ(Parse("sbitmap.wake=v61"), 0);
  EXPECT_EQ(Show("sbitmap.wake"), "v61\n");
  ASSERT_EQ(
      sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, NUMA_NO_NODE),
      0);
  EXPECT_EQ(sbq.wake_scheme, SBQ_WAKE_V61);
  sbitmap_queue_free(&sbq);

  ASSERT_EQ(Parse("sbitmap.wake=current"), 0);
  ASSERT_EQ(
      sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, NUMA_NO_NODE),
      0);
  EXPECT_EQ(sbq.wake_scheme, SBQ_WAKE_CURRENT);
  sbitmap_queue_free(&sbq);
  EXPECT_EQ(Parse("sbitmap.wake=v62"), -EINVAL);
  ASSERT_EQ(Parse("sbitmap.wake=v60"), 0);
  ASSERT_EQ(
      sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, NUMA_NO_NODE),
      0);
  EXPECT_EQ(sbq.wake_scheme, SBQ_WAKE_V60);
  sbitmap_queue_free(&sbq);
  ASSERT_EQ(Parse("sbitmap.wake=v61next"), 0);
  EXPECT_EQ(Show("sbitmap.wake"), "v61next\n");
  ASSERT_EQ(Parse("sbitmap.wake=current"), 0);

  ASSERT_EQ(Parse("sbitmap.deferred_clear=v610"), 0);
  EXPECT_TRUE(sbitmap_deferred_clear_v610);
  ASSERT_EQ(Parse("sbitmap.deferred-clear=current"), 0);
  EXPECT_FALSE(sbitmap_deferred_clear_v610);
}

TEST_F(ParamsTest, NullBlkParametersOnTheCommandLine) {
  null_blk_reset_module_params();
  ASSERT_EQ(Parse("null_blk.irqmode=2 null-blk.submit-queues=3 "
                  "null_blk.memory_backed null_blk.timeout=\"1,100,0,1\""),
            0);
  char page[PAGE_SIZE];
  ASSERT_GT(null_blk_param_show("irqmode", page), 0);
  EXPECT_STREQ(page, "2\n");
  ASSERT_GT(null_blk_param_show("submit_queues", page), 0);
  EXPECT_STREQ(page, "3\n");
  ASSERT_GT(null_blk_param_show("memory_backed", page), 0);
  EXPECT_STREQ(page, "Y\n");
  ASSERT_GT(null_blk_param_show("timeout", page), 0);
  EXPECT_STREQ(page, "1,100,0,1\n");
  EXPECT_EQ(Parse("null_blk.irqmode=3"), -EINVAL);
  EXPECT_EQ(Show("null_blk.irqmode"), "2\n");
  null_blk_reset_module_params();
}

TEST_F(ParamsTest, NrCpusIsACoreParameter) {
  unsigned int before = nr_cpu_ids;
  ASSERT_EQ(Parse("nr_cpus=3"), 0);
  EXPECT_EQ(nr_cpu_ids, 3u);
  EXPECT_EQ(Show("nr_cpus"), "3\n");
  EXPECT_EQ(Parse("nr_cpus=0"), -EINVAL);
  EXPECT_EQ(Parse("nr_cpus=65"), -EINVAL);
  EXPECT_TRUE(Logged("nr_cpus: 65 is not in 1..64"));
  EXPECT_EQ(Parse("kernel.nr_cpus=2"), -ENOENT);
  EXPECT_EQ(nr_cpu_ids, 3u);
  uk::set_nr_cpu_ids(before);
}

TEST_F(ParamsTest, PrintkIgnoreLoglevel) {
  uk::printk_hook = nullptr;
  ::testing::internal::CaptureStderr();
  pr_info("params_test: quiet\n");
  ASSERT_EQ(uk::parse_cmdline("test", "printk.ignore_loglevel"), 0);
  pr_info("params_test: loud\n");
  ASSERT_EQ(uk::parse_cmdline("test", "printk.ignore_loglevel=N"), 0);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("quiet"), std::string::npos);
  EXPECT_NE(err.find("params_test: loud"), std::string::npos);
}

TEST_F(ParamsTest, RcuMembarrierReadsBack) {
  EXPECT_EQ(Show("rcu.membarrier"), "Y\n");
  ASSERT_EQ(Parse("rcu.membarrier=n"), 0);
  EXPECT_EQ(Show("rcu.membarrier"), "N\n");
  ASSERT_EQ(Parse("rcu.membarrier=y"), 0);
}

// The child of CmdlineEnvReachesTheTests: runs only with UKERN_CMDLINE set.
TEST_F(ParamsTest, ChildSeesCmdline) {
  const char *c = getenv("UKERN_CMDLINE");
  if (c == nullptr || strcmp(c, "aio.lookup=radix params_test.int=99") != 0)
    GTEST_SKIP() << "run by CmdlineEnvReachesTheTests";
  EXPECT_EQ(uk::aio::aio_lookup_mode, uk::aio::LookupMode::kRadix);
  EXPECT_EQ(t_int, 99);
}

TEST_F(ParamsTest, CmdlineEnvReachesTheTests) {
  std::string out, exe = SelfExe();
  ASSERT_FALSE(exe.empty());
  int rc = RunShell("UKERN_CMDLINE='aio.lookup=radix params_test.int=99' '" +
                        exe + "' --gtest_filter=ParamsTest.ChildSeesCmdline",
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
  EXPECT_EQ(out.find("SKIPPED"), std::string::npos) << out;

  rc = RunShell("UKERN_CMDLINE='params_test.int=x' '" + exe +
                    "' --gtest_filter=ParamsTest.ChildSeesCmdline",
                &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("UKERN_CMDLINE: `x' invalid for parameter "
                     "`params_test.int'"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("[==========]"), std::string::npos) << out;
}

// libukern_aio.so parses UKERN_CMDLINE when it is loaded: two 1 GB devices
// show through its stat() interposer, and a bad parameter ends the host
// program (here stat(1)) with status 1 before its main().
TEST_F(ParamsTest, PreloadLibraryHonoursCmdline) {
#ifdef UKERN_SANITIZER
  GTEST_SKIP() << "a sanitized .so cannot be preloaded into stat(1)";
#else
  std::string out, so = UKERN_AIO_SO;
  std::string pre = "LD_PRELOAD='" + so + "' ";
  int rc = RunShell(pre +
                        "UKERN_CMDLINE='null_blk.nr_devices=2 null_blk.gb=1' "
                        "stat -L -c %s /dev/ukern/nullb1",
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "1073741824\n");
  rc = RunShell(pre +
                    "UKERN_CMDLINE='null_blk.nr_devices=1' "
                    "stat -L -c %s /dev/ukern/nullb1",
                &out);
  EXPECT_NE(rc, 0) << out;
  rc = RunShell(pre + "UKERN_CMDLINE='null_blk.irqmode=5' stat -c %s /", &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("`5' invalid for parameter `null_blk.irqmode'"),
            std::string::npos)
      << out;
  rc = RunShell(pre + "UKERN_CMDLINE='nosuch.param=1' stat -c %s /", &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("Unknown parameter `nosuch.param'"), std::string::npos)
      << out;
#endif
}

}  // namespace
