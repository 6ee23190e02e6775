// SPDX-License-Identifier: GPL-2.0-only
// UKERN_CMDLINE and the parameter listing (see <uk/shim/cmdline.h>).
#include <uk/shim/cmdline.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <uk/linux/err.h>
#include <uk/linux/init.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/slab.h>

namespace uk {
namespace {

// "<module>.<tag>=<name>:<text>" entries of the __modinfo section.
std::string modinfo(const std::string &module, const char *tag,
                    const std::string &name) {
  if (__start___modinfo == nullptr) return "";
  std::string want = module + "." + tag + "=" + name + ":";
  for (const char *const *p = __start___modinfo; p < __stop___modinfo; p++) {
    if (strncmp(*p, want.c_str(), want.size()) == 0) return *p + want.size();
  }
  return "";
}

// The part of a core_param()'s entry after "<any module>.<tag>=<name>:".
std::string core_modinfo(const char *tag, const std::string &name) {
  if (__start___modinfo == nullptr) return "";
  std::string want = std::string(tag) + "=" + name + ":";
  for (const char *const *p = __start___modinfo; p < __stop___modinfo; p++) {
    const char *dot = strchr(*p, '.');
    if (dot != nullptr && strncmp(dot + 1, want.c_str(), want.size()) == 0)
      return dot + 1 + want.size();
  }
  return "";
}

// A word that names no parameter goes to the __setup() entry whose string
// starts it ("fail_make_request=" takes "fail_make_request=1,100,0,1"), as
// init/main.c's obsolete_checksetup() hands it on at boot. A handler that
// returns 0 refused the value (parse_args() reports both errors).
int setup_option(char *param, char *val, const char *doing, void *arg) {
  (void)doing;
  (void)arg;
  size_t len = strlen(param);
  for (const struct obs_kernel_param *p = __start___uk_setup;
       p != nullptr && p < __stop___uk_setup; p++) {
    size_t n = strlen(p->str);
    bool takes_value = n > 0 && p->str[n - 1] == '=';
    if (takes_value ? (val == nullptr || len != n - 1) : len != n) continue;
    if (strncmp(param, p->str, len) != 0) continue;
    return p->setup_func(val != nullptr ? val : param + len) ? 0 : -EINVAL;
  }
  return -ENOENT;
}

}  // namespace

int parse_cmdline(const char *doing, const char *cmdline) {
  if (cmdline == nullptr) return 0;
  char *buf = kstrdup(cmdline, GFP_KERNEL);
  if (buf == nullptr) return -ENOMEM;
  char *ret = parse_args(doing, buf, __start___param, kernel_param_count(),
                         -32768, 32767, nullptr, setup_option);
  kfree(buf);
  return IS_ERR(ret) ? static_cast<int>(PTR_ERR(ret)) : 0;
}

int parse_cmdline_env() {
  const char *cmdline = getenv("UKERN_CMDLINE");
  if (cmdline == nullptr || *cmdline == '\0') return 0;
  int err = parse_cmdline("UKERN_CMDLINE", cmdline);
  if (err != 0)
    fprintf(stderr,
            "ukern: UKERN_CMDLINE=\"%s\" has a bad parameter (%s): stopping "
            "(`tools/ukern params` lists them)\n",
            cmdline, strerrorname_np(-err) ? strerrorname_np(-err) : "?");
  return err;
}

std::vector<ParamInfo> list_params() {
  std::vector<ParamInfo> out;
  char *page = static_cast<char *>(malloc(PAGE_SIZE));
  for (unsigned int i = 0; i < kernel_param_count(); i++) {
    const struct kernel_param *kp = &__start___param[i];
    ParamInfo p;
    p.full_name = kp->name;
    const char *dot = strchr(kp->name, '.');
    if (dot != nullptr) {
      p.module.assign(kp->name, dot - kp->name);
      p.name = dot + 1;
      p.type = modinfo(p.module, "parmtype", p.name);
      p.description = modinfo(p.module, "parm", p.name);
    } else {
      p.module = "kernel";
      p.name = kp->name;
      p.type = core_modinfo("parmtype", p.name);
      p.description = core_modinfo("parm", p.name);
    }
    int n = param_show(kp->name, page);
    if (n >= 0) {
      p.value.assign(page, n);
      if (!p.value.empty() && p.value.back() == '\n') p.value.pop_back();
    }
    out.push_back(std::move(p));
  }
  free(page);
  std::sort(out.begin(), out.end(), [](const ParamInfo &a, const ParamInfo &b) {
    return a.module != b.module ? a.module < b.module : a.name < b.name;
  });
  return out;
}

}  // namespace uk
