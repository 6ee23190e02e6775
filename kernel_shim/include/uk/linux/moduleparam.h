/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Module and command-line parameters (include/linux/moduleparam.h) for
 * code built into ukern, as a built-in kernel sees them: every parameter
 * is named "<KBUILD_MODNAME>.<name>" (core_param(): "<name>") and lives in
 * the "__param" linker section, which __start___param/__stop___param
 * bound in each executable and in libukern_aio.so. A file that declares
 * parameters defines KBUILD_MODNAME (a string) before its includes, as
 * Kbuild's -DKBUILD_MODNAME does. MODULE_PARM_DESC() and the parameter
 * type go to the "__modinfo" section, which `tools/ukern params` reads.
 *
 * kernel/params.c is kernel_shim/params.cc; UKERN_CMDLINE is parsed by
 * uk::parse_cmdline_env() (<uk/shim/cmdline.h>). No sysfs: the values are
 * read with param_show() and written with parse_args()/parse_module_args().
 */
#ifndef UK_LINUX_MODULEPARAM_H
#define UK_LINUX_MODULEPARAM_H

#include <uk/linux/compiler.h>
#include <uk/linux/types.h>

#ifdef KBUILD_MODNAME
#define MODULE_PARAM_PREFIX KBUILD_MODNAME "."
#define __MODULE_INFO_PREFIX KBUILD_MODNAME "."
#endif

/* Longest "KBUILD_MODNAME." prefix: 64 bytes less an unsigned long. */
#define MAX_PARAM_PREFIX_LEN (64 - sizeof(unsigned long))

#ifndef __section
#define __section(s) __attribute__((__section__(s)))
#endif

/* No struct module: every parameter is built in. */
struct module;
#ifndef THIS_MODULE
#define THIS_MODULE ((struct module *)0)
#endif

/*
 * One pointer per entry, "<mod>.<tag>=<text>" (the kernel packs the
 * strings themselves into .modinfo; a pointer keeps entries from different
 * objects free of padding questions).
 */
#define __MODULE_INFO(tag, name, info)                                           \
	static const char *const __UNIQUE_ID(name) __used __section("__modinfo") \
		__aligned(sizeof(void *)) =                                      \
			__MODULE_INFO_PREFIX __stringify(tag) "=" info

#define __MODULE_PARM_TYPE(name, _type) __MODULE_INFO(parmtype, name##type, #name ":" _type)

/* One for each parameter, describing how to use it. */
#define MODULE_PARM_DESC(_parm, desc) __MODULE_INFO(parm, _parm, #_parm ":" desc)

struct kernel_param;

/* NOARG: the parameter may be given without a value ("foo" for "foo=1"). */
enum { KERNEL_PARAM_OPS_FL_NOARG = (1 << 0) };

struct kernel_param_ops {
	/* How the ops should behave. */
	unsigned int flags;
	/* 0 or -errno; the value lives behind kp->arg. */
	int (*set)(const char *val, const struct kernel_param *kp);
	/* Characters written to @buffer (PAGE_SIZE bytes), or -errno. */
	int (*get)(char *buffer, const struct kernel_param *kp);
	/* Optional: frees what kp->arg holds. */
	void (*free)(void *arg);
};

/* UNSAFE: setting it taints the kernel. HWPARAM: refused under lockdown. */
enum {
	KERNEL_PARAM_FL_UNSAFE = (1 << 0),
	KERNEL_PARAM_FL_HWPARAM = (1 << 1),
};

struct kernel_param {
	const char *name;
	struct module *mod;
	const struct kernel_param_ops *ops;
	const u16 perm;
	s8 level;
	u8 flags;
	union {
		void *arg;
		const struct kparam_string *str;
		const struct kparam_array *arr;
	};
};

/* Weak: a program whose objects declare no parameter has an empty table. */
extern const struct kernel_param __start___param[] __attribute__((__weak__));
extern const struct kernel_param __stop___param[] __attribute__((__weak__));
extern const char *const __start___modinfo[] __attribute__((__weak__));
extern const char *const __stop___modinfo[] __attribute__((__weak__));

/* module_param_string(): a fixed buffer the value is copied into. */
struct kparam_string {
	unsigned int maxlen;
	char *string;
};

/* Arrays (module_param_array()) are not provided. */
struct kparam_array;

/*
 * module_param(name, type, perm): the variable @name is the parameter
 * "KBUILD_MODNAME.name"; '-' and '_' are the same in names. @type picks
 * param_ops_##type: byte, hexint, short, ushort, int, uint, long, ulong,
 * ullong, charp, bool, invbool, bint. @perm is kept for the listing only.
 */
#define module_param(name, type, perm) module_param_named(name, name, type, perm)

#define module_param_unsafe(name, type, perm) module_param_named_unsafe(name, name, type, perm)

/* The parameter @name stands for the variable @value. */
#define module_param_named(name, value, type, perm)             \
	param_check_##type(name, &(value));                     \
	module_param_cb(name, &param_ops_##type, &value, perm); \
	__MODULE_PARM_TYPE(name, #type)

#define module_param_named_unsafe(name, value, type, perm)             \
	param_check_##type(name, &(value));                            \
	module_param_cb_unsafe(name, &param_ops_##type, &value, perm); \
	__MODULE_PARM_TYPE(name, #type)

/* A parameter with ops of its own. */
#define module_param_cb(name, ops, arg, perm) \
	__module_param_call(MODULE_PARAM_PREFIX, name, ops, arg, perm, -1, 0)

#define module_param_cb_unsafe(name, ops, arg, perm) \
	__module_param_call(MODULE_PARAM_PREFIX, name, ops, arg, perm, -1, KERNEL_PARAM_FL_UNSAFE)

#define __level_param_cb(name, ops, arg, perm, level) \
	__module_param_call(MODULE_PARAM_PREFIX, name, ops, arg, perm, level, 0)

#define core_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 1)
#define postcore_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 2)
#define arch_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 3)
#define subsys_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 4)
#define fs_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 5)
#define device_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 6)
#define late_param_cb(name, ops, arg, perm) __level_param_cb(name, ops, arg, perm, 7)

/* Every way of declaring a parameter ends here: one entry in "__param". */
#define __module_param_call(prefix, name, ops, arg, perm, level, flags)                     \
	static_assert(sizeof("" prefix) - 1 <= MAX_PARAM_PREFIX_LEN);                       \
	static const char __param_str_##name[] = prefix #name;                              \
	static const struct kernel_param __param_##name __used __section("__param")         \
		__aligned(__alignof__(struct kernel_param)) = {                             \
			__param_str_##name, THIS_MODULE, ops, (perm), level, flags, { arg } \
		}

/* A set/get pair used by this one parameter. */
#define module_param_call(name, _set, _get, arg, perm)                             \
	static const struct kernel_param_ops __param_ops_##name = { .flags = 0,    \
								    .set = _set,   \
								    .get = _get }; \
	__module_param_call(MODULE_PARAM_PREFIX, name, &__param_ops_##name, arg, perm, -1, 0)

/* A core kernel parameter: no "KBUILD_MODNAME." prefix (e.g. nr_cpus). */
#define core_param(name, var, type, perm) \
	param_check_##type(name, &(var)); \
	__module_param_call("", name, &param_ops_##type, &var, perm, -1, 0)

/* A char array that the value is copied into; @len counts the NUL. */
#define module_param_string(name, string, len, perm)                               \
	static const struct kparam_string __param_string_##name = { len, string }; \
	__module_param_call(MODULE_PARAM_PREFIX, name, &param_ops_string,          \
			    .str = &__param_string_##name, perm, -1, 0);           \
	__MODULE_PARM_TYPE(name, "string")

/*
 * ukern: a parameter whose values are names, for era switches
 * ("aio.lookup=list"). @var is a bool or an int-sized enum whose value is
 * the index of its name in @names; anything else is -EINVAL, with a pr_err()
 * that lists the names. Reads back as the name.
 */
struct kparam_enum {
	void *var;
	unsigned int size; /* sizeof(*var): 1 or 4 */
	const char *const *names;
	unsigned int num;
};
extern const struct kernel_param_ops param_ops_enum;
extern int param_set_enum(const char *val, const struct kernel_param *kp);
extern int param_get_enum(char *buffer, const struct kernel_param *kp);

#define module_param_enum(name, var, names_array, perm)                                           \
	static_assert(sizeof(var) == 1 || sizeof(var) == 4);                                      \
	static const struct kparam_enum __param_enum_##name = { &(var), sizeof(var), names_array, \
								ARRAY_SIZE(names_array) };        \
	__module_param_call(MODULE_PARAM_PREFIX, name, &param_ops_enum,                           \
			    (void *)&__param_enum_##name, perm, -1, 0);                           \
	__MODULE_PARM_TYPE(name, "enum")

/* Parameter names are equal when they differ only in '-' against '_'. */
extern bool parameq(const char *name1, const char *name2);
extern bool parameqn(const char *name1, const char *name2, size_t n);

typedef int (*parse_unknown_fn)(char *param, char *val, const char *doing, void *arg);

/*
 * Parses @args ("foo=bar,bar2 baz=fuz wiz") in place against @params; NULL,
 * the rest of the string after a "--", or ERR_PTR() of the last error.
 */
extern char *parse_args(const char *name, char *args, const struct kernel_param *params,
			unsigned int num, s16 level_min, s16 level_max, void *arg,
			parse_unknown_fn unknown);

/* lib/cmdline.c: splits off the next "param[=val]" of @args. */
extern char *next_arg(char *args, char **param, char **val);

extern void kernel_param_lock(struct module *mod);
extern void kernel_param_unlock(struct module *mod);

/*
 * ukern: what load_module() does with "modprobe @mod_name @args": parse
 * @args against the parameters of that module (named without the
 * "mod_name." prefix). 0, or the error of the last parameter that failed
 * (-ENOENT: unknown name, which the kernel's loader would only warn about;
 * -EINVAL, -ERANGE, -ENOSPC: bad value).
 */
extern int parse_module_args(const char *mod_name, const char *args);

/*
 * ukern: /sys/module/<mod>/parameters/<name>: the value of the parameter
 * with full name @name ("null_blk.irqmode") in @buffer (PAGE_SIZE bytes),
 * newline-terminated; length, -ENOENT (no such parameter) or -EPERM (no get).
 */
extern int param_show(const char *name, char *buffer);

/* The registered parameters, [__start___param, __stop___param). */
static inline unsigned int kernel_param_count(void)
{
	return __start___param ? (unsigned int)(__stop___param - __start___param) : 0;
}

#define __param_check(name, p, type)                              \
	[[maybe_unused]] static inline type *__check_##name(void) \
	{                                                         \
		return (p);                                       \
	}

extern const struct kernel_param_ops param_ops_byte;
extern int param_set_byte(const char *val, const struct kernel_param *kp);
extern int param_get_byte(char *buffer, const struct kernel_param *kp);
#define param_check_byte(name, p) __param_check(name, p, unsigned char)

extern const struct kernel_param_ops param_ops_short;
extern int param_set_short(const char *val, const struct kernel_param *kp);
extern int param_get_short(char *buffer, const struct kernel_param *kp);
#define param_check_short(name, p) __param_check(name, p, short)

extern const struct kernel_param_ops param_ops_ushort;
extern int param_set_ushort(const char *val, const struct kernel_param *kp);
extern int param_get_ushort(char *buffer, const struct kernel_param *kp);
#define param_check_ushort(name, p) __param_check(name, p, unsigned short)

extern const struct kernel_param_ops param_ops_int;
extern int param_set_int(const char *val, const struct kernel_param *kp);
extern int param_get_int(char *buffer, const struct kernel_param *kp);
#define param_check_int(name, p) __param_check(name, p, int)

extern const struct kernel_param_ops param_ops_uint;
extern int param_set_uint(const char *val, const struct kernel_param *kp);
extern int param_get_uint(char *buffer, const struct kernel_param *kp);
int param_set_uint_minmax(const char *val, const struct kernel_param *kp, unsigned int min,
			  unsigned int max);
#define param_check_uint(name, p) __param_check(name, p, unsigned int)

extern const struct kernel_param_ops param_ops_long;
extern int param_set_long(const char *val, const struct kernel_param *kp);
extern int param_get_long(char *buffer, const struct kernel_param *kp);
#define param_check_long(name, p) __param_check(name, p, long)

extern const struct kernel_param_ops param_ops_ulong;
extern int param_set_ulong(const char *val, const struct kernel_param *kp);
extern int param_get_ulong(char *buffer, const struct kernel_param *kp);
#define param_check_ulong(name, p) __param_check(name, p, unsigned long)

extern const struct kernel_param_ops param_ops_ullong;
extern int param_set_ullong(const char *val, const struct kernel_param *kp);
extern int param_get_ullong(char *buffer, const struct kernel_param *kp);
#define param_check_ullong(name, p) __param_check(name, p, unsigned long long)

extern const struct kernel_param_ops param_ops_hexint;
extern int param_set_hexint(const char *val, const struct kernel_param *kp);
extern int param_get_hexint(char *buffer, const struct kernel_param *kp);
#define param_check_hexint(name, p) param_check_uint(name, p)

extern const struct kernel_param_ops param_ops_charp;
extern int param_set_charp(const char *val, const struct kernel_param *kp);
extern int param_get_charp(char *buffer, const struct kernel_param *kp);
extern void param_free_charp(void *arg);
#define param_check_charp(name, p) __param_check(name, p, char *)

extern const struct kernel_param_ops param_ops_bool;
extern int param_set_bool(const char *val, const struct kernel_param *kp);
extern int param_get_bool(char *buffer, const struct kernel_param *kp);
#define param_check_bool(name, p) __param_check(name, p, bool)

extern const struct kernel_param_ops param_ops_bool_enable_only;
extern int param_set_bool_enable_only(const char *val, const struct kernel_param *kp);
#define param_check_bool_enable_only param_check_bool

extern const struct kernel_param_ops param_ops_invbool;
extern int param_set_invbool(const char *val, const struct kernel_param *kp);
extern int param_get_invbool(char *buffer, const struct kernel_param *kp);
#define param_check_invbool(name, p) __param_check(name, p, bool)

/* An int variable that takes bool values. */
extern const struct kernel_param_ops param_ops_bint;
extern int param_set_bint(const char *val, const struct kernel_param *kp);
#define param_get_bint param_get_int
#define param_check_bint param_check_int

extern const struct kernel_param_ops param_ops_string;
extern int param_set_copystring(const char *val, const struct kernel_param *kp);
extern int param_get_string(char *buffer, const struct kernel_param *kp);

#endif /* UK_LINUX_MODULEPARAM_H */
