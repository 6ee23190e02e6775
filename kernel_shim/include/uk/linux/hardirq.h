/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_HARDIRQ_H
#define UK_LINUX_HARDIRQ_H

#include <uk/linux/bottom_half.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>

#endif /* UK_LINUX_HARDIRQ_H */
