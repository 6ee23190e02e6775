/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * include/linux/suspend.h: system sleep is not modelled, so no wakeup event
 * is ever pending during a suspend.
 */
#ifndef UK_LINUX_SUSPEND_H
#define UK_LINUX_SUSPEND_H

static inline bool pm_wakeup_pending(void)
{
	return false;
}

#endif /* UK_LINUX_SUSPEND_H */
