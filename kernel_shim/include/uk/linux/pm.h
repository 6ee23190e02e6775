/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * include/linux/pm.h: the runtime-PM states a request queue reports. Runtime
 * power management is not modelled, so every device stays RPM_ACTIVE.
 */
#ifndef UK_LINUX_PM_H
#define UK_LINUX_PM_H

enum rpm_status {
	RPM_INVALID = -1,
	RPM_ACTIVE = 0,
	RPM_RESUMING,
	RPM_SUSPENDED,
	RPM_SUSPENDING,
};

#endif /* UK_LINUX_PM_H */
