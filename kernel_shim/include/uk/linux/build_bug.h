/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_BUILD_BUG_H
#define UK_LINUX_BUILD_BUG_H

#define BUILD_BUG_ON_MSG(cond, msg) static_assert(!(cond), msg)
#define BUILD_BUG_ON(cond) static_assert(!(cond), "BUILD_BUG_ON(" #cond ")")
/*
 * C++ has no types defined inside sizeof and no zero-sized structs: a
 * negative array size is the compile-time error, and the value is 0.
 */
#define BUILD_BUG_ON_ZERO(e) ((int)(sizeof(char[1 - 2 * !!(e)]) - 1))
#define BUILD_BUG() static_assert(false, "BUILD_BUG")
#define static_assert_msg static_assert

#endif /* UK_LINUX_BUILD_BUG_H */
