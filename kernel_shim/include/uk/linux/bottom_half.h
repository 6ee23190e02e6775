/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_BOTTOM_HALF_H
#define UK_LINUX_BOTTOM_HALF_H

#include <uk/linux/preempt.h>

namespace uk
{
void local_bh_disable_slow();
void local_bh_enable_slow();
} // namespace uk

/* local_bh_disable(): softirqs for this CPU wait until local_bh_enable(). */
static __always_inline void local_bh_disable(void)
{
	::uk::local_bh_disable_slow();
	barrier();
}

static __always_inline void local_bh_enable(void)
{
	barrier();
	::uk::local_bh_enable_slow();
}

#endif /* UK_LINUX_BOTTOM_HALF_H */
