/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_BUILD_BUG_H
#define UK_LINUX_BUILD_BUG_H

#define BUILD_BUG_ON_MSG(cond, msg) static_assert(!(cond), msg)
#define BUILD_BUG_ON(cond) static_assert(!(cond), "BUILD_BUG_ON(" #cond ")")
#define BUILD_BUG_ON_ZERO(e) ((int)(sizeof(struct { int : (-!!(e)); })))
#define BUILD_BUG() static_assert(false, "BUILD_BUG")
#define static_assert_msg static_assert

#endif /* UK_LINUX_BUILD_BUG_H */
