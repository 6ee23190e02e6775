/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * include/linux/init.h: __setup() options of the kernel command line. Each
 * __setup("name=", fn) puts one entry in the "__uk_setup" linker section;
 * parsing UKERN_CMDLINE (kernel_shim/shim/cmdline.cc) hands a word that is
 * no parameter to the entry whose string starts it, as the kernel's
 * obsolete_checksetup() does for the boot command line. __init marks code
 * the kernel frees after boot; nothing is freed here.
 */
#ifndef UK_LINUX_INIT_H
#define UK_LINUX_INIT_H

#include <uk/linux/compiler.h>

#ifndef __section
#define __section(s) __attribute__((__section__(s)))
#endif

#define __init
#define __initdata

struct obs_kernel_param {
	const char *str;
	int (*setup_func)(char *);
	int early;
};

#define __setup_param(str, unique_id, fn, early)                                                 \
	static const char __setup_str_##unique_id[] = str;                                       \
	static const struct obs_kernel_param __setup_##unique_id __used __section("__uk_setup")  \
		__aligned(__alignof__(struct obs_kernel_param)) = { __setup_str_##unique_id, fn, \
								    early }

#define __setup(str, fn) __setup_param(str, fn, fn, 0)

/* Weak: a program whose objects declare no __setup() has an empty table. */
extern const struct obs_kernel_param __start___uk_setup[] __attribute__((__weak__));
extern const struct obs_kernel_param __stop___uk_setup[] __attribute__((__weak__));

#endif /* UK_LINUX_INIT_H */
