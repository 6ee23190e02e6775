/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_KCONFIG_H
#define UK_LINUX_KCONFIG_H

/*
 * IS_ENABLED(CONFIG_FOO) is 1 when CONFIG_FOO is defined as 1 and 0 when it
 * is not defined, so that code under a config option is compiled (and type
 * checked) either way and the compiler drops it when the option is off.
 * ukern defines few CONFIG_ options of the kernel's: the ones a header names
 * itself (CONFIG_HZ, CONFIG_NR_CPUS) and the fault injection below; KMSAN,
 * lockdep and the like are off. A defined option expands to "0," through the probe below, which
 * shifts the 1 into the selected position.
 */
#define __uk_config_probe_1 0,
#define __uk_config_second(ignored, val, ...) val
#define __uk_config_select(probe) __uk_config_second(probe 1, 0, 0)
#define __uk_config_expand(val) __uk_config_select(__uk_config_probe_##val)
#define IS_BUILTIN(option) __uk_config_expand(option)
#define IS_ENABLED(option) IS_BUILTIN(option)

/*
 * Fault injection is built in: failslab (kernel_shim/fault-inject.cc) and
 * the block layer's fail_make_request, armed from UKERN_CMDLINE.
 */
#define CONFIG_FAIL_MAKE_REQUEST 1

#endif /* UK_LINUX_KCONFIG_H */
