// SPDX-License-Identifier: GPL-2.0-only
// printk, WARN/BUG and might_sleep() for the shim.
#define KBUILD_MODNAME "printk"

#include <sched.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

namespace {
// The level of the line a message left open (no '\n' at its end), or -1.
// Lines are per thread; the kernel's one log buffer is not modelled.
thread_local int open_line_level = -1;

// Copies @fmt without the extension letters after %p (%ps, %pS, %pF...),
// which the host printf would print after the address.
void strip_pointer_extensions(const char *fmt, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = fmt; *p != '\0' && n + 1 < size; p++) {
    out[n++] = *p;
    if (*p != '%') continue;
    if (p[1] == '%') {
      if (n + 1 < size) out[n++] = *++p;
      continue;
    }
    const char *q = p + 1;
    while (*q != '\0' && strchr("-+ #0123456789.*", *q) != nullptr) q++;
    if (*q == 'p' && isalnum(static_cast<unsigned char>(q[1]))) {
      while (p < q && n + 1 < size) out[n++] = *++p;
      p = q + 1;  // skip the extension letter; it never takes an argument
    }
  }
  out[n] = '\0';
}
}  // namespace

int(printk)(const char *fmt, ...) {
  char host_fmt[512];
  char buf[1024];
  va_list ap;
  bool cont = fmt[0] == '<' && fmt[1] == 'c' && fmt[2] == '>';
  const char *f = cont ? fmt + 3 : fmt;

  if (strstr(f, "%p") != nullptr) {
    strip_pointer_extensions(f, host_fmt, sizeof(host_fmt));
    f = host_fmt;
  }
  va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  int n = vsnprintf(buf, sizeof(buf), f, ap);
#pragma GCC diagnostic pop
  va_end(ap);
  int level = 4;
  const char *text = buf;
  if (cont && open_line_level >= 0) {
    level = open_line_level;
  } else if (buf[0] == '<' && buf[1] >= '0' && buf[1] <= '7' && buf[2] == '>') {
    level = buf[1] - '0';
    text = buf + 3;
  }
  bool show = level <= 4 || ignore_loglevel;
  if (printk_hook != nullptr) {
    printk_hook(level, text);
  } else {
    if (!cont && open_line_level >= 0 &&
        (open_line_level <= 4 || ignore_loglevel))
      fputc('\n', stderr);
    if (show) fputs(text, stderr);
  }
  size_t len = strlen(text);
  open_line_level = len > 0 && text[len - 1] != '\n' ? level : -1;
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
