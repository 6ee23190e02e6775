/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O priorities (include/uapi/linux/ioprio.h, include/linux/ioprio.h): a
 * 16-bit value with the scheduling class in its top 3 bits and the level
 * in its low bits.
 *
 * Deviation: a task here has no io_context, scheduling policy or nice
 * value, so get_current_ioprio() gives IOPRIO_DEFAULT (class NONE), where
 * v6.12 derives best-effort level 4 from a nice-0 task without an
 * io_context.
 */
#ifndef UK_LINUX_IOPRIO_H
#define UK_LINUX_IOPRIO_H

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_NR_CLASSES 8
#define IOPRIO_CLASS_MASK (IOPRIO_NR_CLASSES - 1)
#define IOPRIO_PRIO_CLASS(ioprio) (((ioprio) >> IOPRIO_CLASS_SHIFT) & IOPRIO_CLASS_MASK)

enum {
	IOPRIO_CLASS_NONE,
	IOPRIO_CLASS_RT,
	IOPRIO_CLASS_BE,
	IOPRIO_CLASS_IDLE,
	IOPRIO_CLASS_INVALID = 7
};

#define IOPRIO_LEVEL_NR_BITS 3
#define IOPRIO_NR_LEVELS (1 << IOPRIO_LEVEL_NR_BITS)
#define IOPRIO_LEVEL_MASK (IOPRIO_NR_LEVELS - 1)
#define IOPRIO_PRIO_LEVEL(ioprio) ((ioprio)&IOPRIO_LEVEL_MASK)

#define IOPRIO_PRIO_VALUE(class, level) (((class) << IOPRIO_CLASS_SHIFT) | (level))
#define IOPRIO_DEFAULT IOPRIO_PRIO_VALUE(IOPRIO_CLASS_NONE, 0)

/* The submitting task's I/O priority (see the deviation above). */
static inline int get_current_ioprio(void)
{
	return IOPRIO_DEFAULT;
}

#endif /* UK_LINUX_IOPRIO_H */
