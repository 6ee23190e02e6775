// SPDX-License-Identifier: GPL-2.0-only
// printk, WARN/BUG and might_sleep() for the shim.
#define KBUILD_MODNAME "printk"

#include <sched.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include <uk/linux/irqflags.h>
#include <uk/linux/kernel.h>
#include <uk/linux/moduleparam.h>
#include <uk/shim/printk.h>

namespace uk {

long warn_count = 0;
PrintkHook printk_hook = nullptr;

namespace {
thread_local const char *last_warn_cond = "";
// Messages below KERN_WARNING reach stderr only with printk.ignore_loglevel.
bool ignore_loglevel;
// clang-format off
module_param(ignore_loglevel, bool, 0644);
MODULE_PARM_DESC(ignore_loglevel, "Print every message, whatever its level (otherwise levels 0-4 only)");
// clang-format on
}  // namespace

int(printk)(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  int level = 4;
  const char *text = buf;
  if (buf[0] == '<' && buf[1] >= '0' && buf[1] <= '7' && buf[2] == '>') {
    level = buf[1] - '0';
    text = buf + 3;
  }
  if (printk_hook != nullptr) {
    printk_hook(level, text);
  } else if (level <= 4 || ignore_loglevel) {
    fputs(text, stderr);
  }
  return n;
}

const char *last_warn_condition() { return last_warn_cond; }

void warn(const char *file, int line, const char *cond) {
  __atomic_fetch_add(&warn_count, 1, __ATOMIC_RELAXED);
  last_warn_cond = cond;
  fprintf(stderr, "ukern: WARNING at %s:%d: %s\n", file, line, cond);
}

void bug(const char *file, int line, const char *cond) {
  fprintf(stderr, "ukern: kernel BUG at %s:%d: %s\n", file, line, cond);
  abort();
}

void might_sleep_check(const char *file, int line) {
  if (unlikely(preempt_count() != 0 || irqs_disabled())) {
    fprintf(stderr,
            "ukern: BUG: sleeping function called from invalid context at "
            "%s:%d (preempt_count %#x, irqs_disabled %d)\n",
            file, line, preempt_count(), irqs_disabled());
    __atomic_fetch_add(&warn_count, 1, __ATOMIC_RELAXED);
  }
}

int cond_resched_impl() {
  if (preempt_count() != 0) return 0;
  sched_yield();
  return 1;
}

}  // namespace uk
