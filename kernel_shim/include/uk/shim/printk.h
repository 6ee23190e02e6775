// SPDX-License-Identifier: GPL-2.0-only
// Test access to the printk sink, the WARN counter and the last WARN.
#ifndef UK_SHIM_PRINTK_H_
#define UK_SHIM_PRINTK_H_

#include <uk/linux/printk.h>

namespace uk {
// Receives every printk line (level 0..7, text without the KERN_ prefix)
// instead of stderr while set.
using PrintkHook = void (*)(int level, const char *text);
extern PrintkHook printk_hook;
// The condition text of the calling thread's last WARN ("" before any), so
// that a caller expecting one known warning can tell it from the others.
const char *last_warn_condition();
}  // namespace uk

#endif  // UK_SHIM_PRINTK_H_
