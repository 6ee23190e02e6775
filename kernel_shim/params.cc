// SPDX-License-Identifier: GPL-2.0-only
/*
 * kernel/params.c: parsing of boot and module parameters, and the standard
 * parameter types; next_arg() from lib/cmdline.c.
 *
 * Every parameter is built in (no struct module, no sysfs): the table is
 * the "__param" section of the program or of libukern_aio.so. The two
 * locks are host mutexes, since UKERN_CMDLINE is parsed in the preloaded
 * library's constructor, before the CPU model that spinlocks and the
 * shim's mutexes run on exists.
 *
 * Upstream: kernel/params.c @ v6.12
 * Upstream: lib/cmdline.c @ v6.12
 */
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/kernel.h>
#include <uk/linux/kstrtox.h>
#include <uk/linux/list.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/printk.h>
#include <uk/linux/slab.h>

/* Guards every parameter's value while it is set or read. */
static std::mutex param_lock;

/* lib/string.c */
static char *skip_spaces(const char *str)
{
	while (isspace(*str))
		++str;
	return (char *)str;
}

/* lib/vsprintf.c: like snprintf(), but returns what was written. */
static int scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list args;
	int i;

	va_start(args, fmt);
	i = vsnprintf(buf, size, fmt, args);
	va_end(args);
	if (i < 0)
		return 0;
	if ((size_t)i < size)
		return i;
	return size ? size - 1 : 0;
}

/* The shim's slab allocator works from the first instruction. */
static inline bool slab_is_available(void)
{
	return true;
}

/* Values of charp parameters that came from kmalloc_parameter(). */
struct kmalloced_param {
	struct list_head list;
	char val[];
};
static LIST_HEAD(kmalloced_params);
static std::mutex kmalloced_params_lock;

static void *kmalloc_parameter(unsigned int size)
{
	struct kmalloced_param *p;

	p = kmalloc(sizeof(*p) + size, GFP_KERNEL);
	if (!p)
		return NULL;

	kmalloced_params_lock.lock();
	list_add(&p->list, &kmalloced_params);
	kmalloced_params_lock.unlock();

	return p->val;
}

/* Frees @param only if kmalloc_parameter() gave it. */
static void maybe_kfree_parameter(void *param)
{
	struct kmalloced_param *p;

	kmalloced_params_lock.lock();
	list_for_each_entry (p, &kmalloced_params, list) {
		if (p->val == param) {
			list_del(&p->list);
			kfree(p);
			break;
		}
	}
	kmalloced_params_lock.unlock();
}

static char dash2underscore(char c)
{
	if (c == '-')
		return '_';
	return c;
}

bool parameqn(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (dash2underscore(a[i]) != dash2underscore(b[i]))
			return false;
	}
	return true;
}

bool parameq(const char *a, const char *b)
{
	return parameqn(a, b, strlen(a) + 1);
}

/* No lockdown and no taint flags: an unsafe parameter is only reported. */
static bool param_check_unsafe(const struct kernel_param *kp)
{
	if (kp->flags & KERNEL_PARAM_FL_UNSAFE)
		pr_notice("setting the unsafe parameter %s would taint the kernel\n", kp->name);

	return true;
}

static int parse_one(char *param, char *val, const char *doing, const struct kernel_param *params,
		     unsigned int num_params, s16 min_level, s16 max_level, void *arg,
		     parse_unknown_fn handle_unknown)
{
	unsigned int i;
	int err;

	for (i = 0; i < num_params; i++) {
		if (parameq(param, params[i].name)) {
			if (params[i].level < min_level || params[i].level > max_level)
				return 0;
			/* Only NOARG ops accept a missing value. */
			if (!val && !(params[i].ops->flags & KERNEL_PARAM_OPS_FL_NOARG))
				return -EINVAL;
			pr_debug("handling %s with %p\n", param, params[i].ops->set);
			kernel_param_lock(params[i].mod);
			if (param_check_unsafe(&params[i]))
				err = params[i].ops->set(val, &params[i]);
			else
				err = -EPERM;
			kernel_param_unlock(params[i].mod);
			return err;
		}
	}

	if (handle_unknown) {
		pr_debug("doing %s: %s='%s'\n", doing, param, val);
		return handle_unknown(param, val, doing, arg);
	}

	pr_debug("Unknown argument '%s'\n", param);
	return -ENOENT;
}

char *parse_args(const char *doing, char *args, const struct kernel_param *params, unsigned num,
		 s16 min_level, s16 max_level, void *arg, parse_unknown_fn unknown)
{
	char *param, *val, *err = NULL;

	args = skip_spaces(args);

	if (*args)
		pr_debug("doing %s, parsing ARGS: '%s'\n", doing, args);

	while (*args) {
		int ret;
		int irq_was_disabled;

		args = next_arg(args, &param, &val);
		/* A bare "--" ends the parameters; the rest is the caller's. */
		if (!val && strcmp(param, "--") == 0)
			return err ?: args;
		irq_was_disabled = irqs_disabled();
		ret = parse_one(param, val, doing, params, num, min_level, max_level, arg, unknown);
		if (irq_was_disabled && !irqs_disabled())
			pr_warn("%s: option '%s' enabled irq's!\n", doing, param);

		switch (ret) {
		case 0:
			continue;
		case -ENOENT:
			pr_err("%s: Unknown parameter `%s'\n", doing, param);
			break;
		case -ENOSPC:
			pr_err("%s: `%s' too large for parameter `%s'\n", doing, val ?: "", param);
			break;
		default:
			pr_err("%s: `%s' invalid for parameter `%s'\n", doing, val ?: "", param);
			break;
		}

		err = ERR_PTR(ret);
	}

	return err;
}

/* param_{set,get}_NAME and param_ops_NAME for a kstrto*() integer type. */
#define STANDARD_PARAM_DEF(name, type, format, strtolfn)                              \
	int param_set_##name(const char *val, const struct kernel_param *kp)          \
	{                                                                             \
		return strtolfn(val, 0, (type *)kp->arg);                             \
	}                                                                             \
	int param_get_##name(char *buffer, const struct kernel_param *kp)             \
	{                                                                             \
		return scnprintf(buffer, PAGE_SIZE, format "\n", *((type *)kp->arg)); \
	}                                                                             \
	const struct kernel_param_ops param_ops_##name = {                            \
		.flags = 0,                                                           \
		.set = param_set_##name,                                              \
		.get = param_get_##name,                                              \
		.free = NULL,                                                         \
	}

STANDARD_PARAM_DEF(byte, unsigned char, "%hhu", kstrtou8);
STANDARD_PARAM_DEF(short, short, "%hi", kstrtos16);
STANDARD_PARAM_DEF(ushort, unsigned short, "%hu", kstrtou16);
STANDARD_PARAM_DEF(int, int, "%i", kstrtoint);
STANDARD_PARAM_DEF(uint, unsigned int, "%u", kstrtouint);
STANDARD_PARAM_DEF(long, long, "%li", kstrtol);
STANDARD_PARAM_DEF(ulong, unsigned long, "%lu", kstrtoul);
STANDARD_PARAM_DEF(ullong, unsigned long long, "%llu", kstrtoull);
STANDARD_PARAM_DEF(hexint, unsigned int, "%#08x", kstrtouint);

int param_set_uint_minmax(const char *val, const struct kernel_param *kp, unsigned int min,
			  unsigned int max)
{
	unsigned int num;
	int ret;

	if (!val)
		return -EINVAL;
	ret = kstrtouint(val, 0, &num);
	if (ret)
		return ret;
	if (num < min || num > max)
		return -EINVAL;
	*((unsigned int *)kp->arg) = num;
	return 0;
}

int param_set_charp(const char *val, const struct kernel_param *kp)
{
	char *tmp;
	size_t len, maxlen = 1024;

	len = strnlen(val, maxlen + 1);
	if (len == maxlen + 1) {
		pr_err("%s: string parameter too long\n", kp->name);
		return -ENOSPC;
	}

	/* Before slab is up the kernel points into the command line itself. */
	if (slab_is_available()) {
		tmp = (char *)kmalloc_parameter(len + 1);
		if (!tmp)
			return -ENOMEM;
		memcpy(tmp, val, len + 1);
	} else
		tmp = (char *)val;

	maybe_kfree_parameter(*(char **)kp->arg);
	*(char **)kp->arg = tmp;

	return 0;
}

int param_get_charp(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%s\n", *((char **)kp->arg));
}

void param_free_charp(void *arg)
{
	maybe_kfree_parameter(*((char **)arg));
}

const struct kernel_param_ops param_ops_charp = {
	.flags = 0,
	.set = param_set_charp,
	.get = param_get_charp,
	.free = param_free_charp,
};

int param_set_bool(const char *val, const struct kernel_param *kp)
{
	/* A bare "name" sets it. */
	if (!val)
		val = "1";

	/* y/Y/n/N/1/0, on/off and true/false: kstrtobool() decides. */
	return kstrtobool(val, (bool *)kp->arg);
}

int param_get_bool(char *buffer, const struct kernel_param *kp)
{
	/* Y or N, as sysfs shows a bool. */
	return sprintf(buffer, "%c\n", *(bool *)kp->arg ? 'Y' : 'N');
}

const struct kernel_param_ops param_ops_bool = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = param_set_bool,
	.get = param_get_bool,
	.free = NULL,
};

int param_set_bool_enable_only(const char *val, const struct kernel_param *kp)
{
	int err;
	bool new_value;
	bool orig_value = *(bool *)kp->arg;
	struct kernel_param dummy_kp = *kp;

	dummy_kp.arg = &new_value;

	err = param_set_bool(val, &dummy_kp);
	if (err)
		return err;

	/* Once on, it stays on. */
	if (!new_value && orig_value)
		return -EROFS;

	if (new_value)
		err = param_set_bool(val, kp);

	return err;
}

const struct kernel_param_ops param_ops_bool_enable_only = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = param_set_bool_enable_only,
	.get = param_get_bool,
	.free = NULL,
};

int param_set_invbool(const char *val, const struct kernel_param *kp)
{
	int ret;
	bool boolval;
	struct kernel_param dummy = *kp;

	dummy.arg = &boolval;
	ret = param_set_bool(val, &dummy);
	if (ret == 0)
		*(bool *)kp->arg = !boolval;
	return ret;
}

int param_get_invbool(char *buffer, const struct kernel_param *kp)
{
	return sprintf(buffer, "%c\n", (*(bool *)kp->arg) ? 'N' : 'Y');
}

const struct kernel_param_ops param_ops_invbool = {
	.flags = 0,
	.set = param_set_invbool,
	.get = param_get_invbool,
	.free = NULL,
};

int param_set_bint(const char *val, const struct kernel_param *kp)
{
	/* bool's own parsing, into a temporary. */
	struct kernel_param boolkp = *kp;
	bool v;
	int ret;

	boolkp.arg = &v;

	ret = param_set_bool(val, &boolkp);
	if (ret == 0)
		*(int *)kp->arg = v;
	return ret;
}

const struct kernel_param_ops param_ops_bint = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = param_set_bint,
	.get = param_get_int,
	.free = NULL,
};

int param_set_copystring(const char *val, const struct kernel_param *kp)
{
	const struct kparam_string *kps = kp->str;

	if (strnlen(val, kps->maxlen) == kps->maxlen) {
		pr_err("%s: string doesn't fit in %u chars.\n", kp->name, kps->maxlen - 1);
		return -ENOSPC;
	}
	strcpy(kps->string, val);
	return 0;
}

int param_get_string(char *buffer, const struct kernel_param *kp)
{
	const struct kparam_string *kps = kp->str;
	return scnprintf(buffer, PAGE_SIZE, "%s\n", kps->string);
}

const struct kernel_param_ops param_ops_string = {
	.flags = 0,
	.set = param_set_copystring,
	.get = param_get_string,
	.free = NULL,
};

/* ukern: values that are names (module_param_enum()). */
int param_set_enum(const char *val, const struct kernel_param *kp)
{
	const struct kparam_enum *e = (const struct kparam_enum *)kp->arg;
	unsigned int i;
	char names[256];
	int len = 0;

	for (i = 0; i < e->num; i++) {
		if (strcmp(val, e->names[i]))
			continue;
		if (e->size == 1)
			*(u8 *)e->var = i;
		else
			*(int *)e->var = i;
		return 0;
	}
	names[0] = '\0';
	for (i = 0; i < e->num; i++)
		len += scnprintf(names + len, sizeof(names) - len, "%s%s", i ? "|" : "",
				 e->names[i]);
	pr_err("%s: `%s' is not one of %s\n", kp->name, val, names);
	return -EINVAL;
}

int param_get_enum(char *buffer, const struct kernel_param *kp)
{
	const struct kparam_enum *e = (const struct kparam_enum *)kp->arg;
	unsigned int i = e->size == 1 ? *(u8 *)e->var : *(int *)e->var;

	if (i >= e->num)
		return scnprintf(buffer, PAGE_SIZE, "%u\n", i);
	return scnprintf(buffer, PAGE_SIZE, "%s\n", e->names[i]);
}

const struct kernel_param_ops param_ops_enum = {
	.flags = 0,
	.set = param_set_enum,
	.get = param_get_enum,
	.free = NULL,
};

void kernel_param_lock(struct module *mod)
{
	param_lock.lock();
}

void kernel_param_unlock(struct module *mod)
{
	param_lock.unlock();
}

/*
 * load_module()'s parse_args() over one module's parameters: a copy of the
 * module's entries with the "mod_name." prefix taken off their names.
 */
int parse_module_args(const char *mod_name, const char *args)
{
	size_t len = strlen(mod_name);
	unsigned int i, num = 0;
	struct kernel_param *kp;
	char *buf, *ret;

	if (!args)
		return 0;
	kp = kmalloc_array(kernel_param_count() ?: 1, sizeof(*kp), GFP_KERNEL);
	buf = kstrdup(args, GFP_KERNEL);
	if (!kp || !buf) {
		kfree(kp);
		kfree(buf);
		return -ENOMEM;
	}
	for (i = 0; i < kernel_param_count(); i++) {
		const struct kernel_param *p = &__start___param[i];

		if (!parameqn(mod_name, p->name, len) || p->name[len] != '.')
			continue;
		memcpy((void *)&kp[num], p, sizeof(*p));
		kp[num++].name = p->name + len + 1;
	}
	ret = parse_args(mod_name, buf, kp, num, -32768, 32767, NULL, NULL);
	kfree(buf);
	kfree(kp);
	return IS_ERR(ret) ? PTR_ERR(ret) : 0;
}

/* param_attr_show() for a parameter named in full. */
int param_show(const char *name, char *buffer)
{
	unsigned int i;
	int count;

	for (i = 0; i < kernel_param_count(); i++) {
		const struct kernel_param *kp = &__start___param[i];

		if (!parameq(name, kp->name))
			continue;
		if (!kp->ops->get)
			return -EPERM;
		kernel_param_lock(kp->mod);
		count = kp->ops->get(buffer, kp);
		kernel_param_unlock(kp->mod);
		return count;
	}
	return -ENOENT;
}

/* ---- lib/cmdline.c ---- */

/*
 * next_arg - split off one "param[=val]" of @args at unquoted white space.
 * Double quotes around the value or around the whole argument are dropped.
 * Returns where the next argument starts.
 */
char *next_arg(char *args, char **param, char **val)
{
	unsigned int i, equals = 0;
	int in_quote = 0, quoted = 0;

	if (*args == '"') {
		args++;
		in_quote = 1;
		quoted = 1;
	}

	for (i = 0; args[i]; i++) {
		if (isspace(args[i]) && !in_quote)
			break;
		if (equals == 0) {
			if (args[i] == '=')
				equals = i;
		}
		if (args[i] == '"')
			in_quote = !in_quote;
	}

	*param = args;
	if (!equals)
		*val = NULL;
	else {
		args[equals] = '\0';
		*val = args + equals + 1;

		/* The value loses its quotes. */
		if (**val == '"') {
			(*val)++;
			if (args[i - 1] == '"')
				args[i - 1] = '\0';
		}
	}
	if (quoted && i > 0 && args[i - 1] == '"')
		args[i - 1] = '\0';

	if (args[i]) {
		args[i] = '\0';
		args += i + 1;
	} else
		args += i;

	/* Past the white space that follows. */
	return skip_spaces(args);
}
