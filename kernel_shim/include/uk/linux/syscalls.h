/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * System call definitions (include/linux/syscalls.h): SYSCALL_DEFINEn(name,
 * type1, arg1, ...) defines the entry point sys_name(type1 arg1, ...) with C
 * linkage and a long result. There is no system call table and no argument
 * sign-extension wrapper (__se_sys_*): ported code and its callers call
 * sys_name() directly, with user pointers as ordinary pointers.
 */
#ifndef UK_LINUX_SYSCALLS_H
#define UK_LINUX_SYSCALLS_H

#include <uk/linux/compiler.h>

#define __UK_SC_MAP0(m, ...)
#define __UK_SC_MAP1(m, t, a, ...) m(t, a)
#define __UK_SC_MAP2(m, t, a, ...) m(t, a), __UK_SC_MAP1(m, __VA_ARGS__)
#define __UK_SC_MAP3(m, t, a, ...) m(t, a), __UK_SC_MAP2(m, __VA_ARGS__)
#define __UK_SC_MAP4(m, t, a, ...) m(t, a), __UK_SC_MAP3(m, __VA_ARGS__)
#define __UK_SC_MAP5(m, t, a, ...) m(t, a), __UK_SC_MAP4(m, __VA_ARGS__)
#define __UK_SC_MAP6(m, t, a, ...) m(t, a), __UK_SC_MAP5(m, __VA_ARGS__)
#define __UK_SC_MAP(n, ...) __UK_SC_MAP##n(__VA_ARGS__)

#define __UK_SC_DECL(t, a) t a

#ifdef __cplusplus
#define __UK_SC_LINKAGE extern "C"
#else
#define __UK_SC_LINKAGE
#endif

#define asmlinkage __UK_SC_LINKAGE

#define SYSCALL_DEFINE0(sname) asmlinkage long sys_##sname(void)
#define SYSCALL_DEFINE1(name, ...) SYSCALL_DEFINEx(1, _##name, __VA_ARGS__)
#define SYSCALL_DEFINE2(name, ...) SYSCALL_DEFINEx(2, _##name, __VA_ARGS__)
#define SYSCALL_DEFINE3(name, ...) SYSCALL_DEFINEx(3, _##name, __VA_ARGS__)
#define SYSCALL_DEFINE4(name, ...) SYSCALL_DEFINEx(4, _##name, __VA_ARGS__)
#define SYSCALL_DEFINE5(name, ...) SYSCALL_DEFINEx(5, _##name, __VA_ARGS__)
#define SYSCALL_DEFINE6(name, ...) SYSCALL_DEFINEx(6, _##name, __VA_ARGS__)

#define SYSCALL_DEFINEx(x, name, ...) \
	asmlinkage long sys##name(__UK_SC_MAP(x, __UK_SC_DECL, __VA_ARGS__))

#endif /* UK_LINUX_SYSCALLS_H */
