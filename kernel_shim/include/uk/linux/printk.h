/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_PRINTK_H
#define UK_LINUX_PRINTK_H

#include <cstdio>
#include <cstdlib>

#include <uk/linux/compiler.h>

#define KERN_EMERG "<0>"
#define KERN_ALERT "<1>"
#define KERN_CRIT "<2>"
#define KERN_ERR "<3>"
#define KERN_WARNING "<4>"
#define KERN_NOTICE "<5>"
#define KERN_INFO "<6>"
#define KERN_DEBUG "<7>"
/* Continues the line of the previous message, at its level. */
#define KERN_CONT "<c>"

namespace uk
{
/*
 * printk sink; level is the KERN_* digit. Tests can capture it. As in the
 * kernel, a message ends its line unless the next one is KERN_CONT, and
 * the pointer extensions of %p (%ps, %pS, ...) print the bare address.
 * Cold, as the kernel's _printk(): the paths that print are the unlikely ones.
 */
__printf(1, 2) __cold int printk(const char *fmt, ...);
/* Counts WARN()s and BUG()s; tests assert it stays at zero. */
extern long warn_count;
__noreturn void bug(const char *file, int line, const char *cond);
void warn(const char *file, int line, const char *cond);
} // namespace uk

#define printk(fmt, ...) ::uk::printk(fmt, ##__VA_ARGS__)
#define pr_fmt_default(fmt) fmt
#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif
#define pr_emerg(fmt, ...) printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...) printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...) printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...) printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...) printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...) printk(KERN_CONT fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...)                                             \
	do {                                                           \
		if (0)                                                 \
			printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__); \
	} while (0)
#define pr_warn_once pr_warn
#define pr_err_ratelimited pr_err
#define pr_info_ratelimited pr_info
/* No rate limit: every message is printed. */
#define printk_ratelimited printk

#define BUG() ::uk::bug(__FILE__, __LINE__, "BUG()")
/* include/linux/panic.h: the message at KERN_EMERG, then the process ends. */
#define panic(fmt, ...)                                                               \
	do {                                                                          \
		printk(KERN_EMERG "Kernel panic - not syncing: " fmt, ##__VA_ARGS__); \
		::uk::bug(__FILE__, __LINE__, "panic()");                             \
	} while (0)
#define BUG_ON(cond)                                          \
	do {                                                  \
		if (unlikely(cond))                           \
			::uk::bug(__FILE__, __LINE__, #cond); \
	} while (0)
#define WARN_ON(cond)                                          \
	({                                                     \
		bool __ret_warn = !!(cond);                    \
		if (unlikely(__ret_warn))                      \
			::uk::warn(__FILE__, __LINE__, #cond); \
		unlikely(__ret_warn);                          \
	})
#define WARN_ON_ONCE(cond)                                                   \
	({                                                                   \
		static bool __warned;                                        \
		bool __ret_warn = !!(cond);                                  \
		if (unlikely(__ret_warn) &&                                  \
		    !__atomic_exchange_n(&__warned, true, __ATOMIC_RELAXED)) \
			::uk::warn(__FILE__, __LINE__, #cond);               \
		unlikely(__ret_warn);                                        \
	})
#define WARN(cond, fmt, ...)                                     \
	({                                                       \
		bool __ret_warn = !!(cond);                      \
		if (unlikely(__ret_warn)) {                      \
			printk(KERN_WARNING fmt, ##__VA_ARGS__); \
			::uk::warn(__FILE__, __LINE__, #cond);   \
		}                                                \
		unlikely(__ret_warn);                            \
	})
#define WARN_ONCE(cond, fmt, ...) WARN(cond, fmt, ##__VA_ARGS__)
#define VM_BUG_ON(cond) BUG_ON(cond)

#endif /* UK_LINUX_PRINTK_H */
