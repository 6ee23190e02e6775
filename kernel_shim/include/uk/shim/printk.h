// SPDX-License-Identifier: GPL-2.0-only
// Test access to the printk sink and the WARN counter.
#ifndef UK_SHIM_PRINTK_H_
#define UK_SHIM_PRINTK_H_

#include <uk/linux/printk.h>

namespace uk {
// Receives every printk line (level 0..7, text without the KERN_ prefix)
// instead of stderr while set.
using PrintkHook = void (*)(int level, const char *text);
extern PrintkHook printk_hook;
}  // namespace uk

#endif  // UK_SHIM_PRINTK_H_
