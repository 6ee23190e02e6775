/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * include/linux/error-injection.h: ALLOW_ERROR_INJECTION() marks a function
 * whose return value the kernel's error injection (kprobes) may override.
 * There is no such injection here; the mark compiles to nothing.
 */
#ifndef UK_LINUX_ERROR_INJECTION_H
#define UK_LINUX_ERROR_INJECTION_H

#define ALLOW_ERROR_INJECTION(fname, _etype)

#endif /* UK_LINUX_ERROR_INJECTION_H */
