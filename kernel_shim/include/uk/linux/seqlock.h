/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * seqlock_t (include/linux/seqlock.h), writer side and reader side.
 *
 * Writers take the spinlock and bump the sequence, as in the kernel. Readers
 * differ: read_seqbegin() takes the same spinlock (interrupts saved in the
 * lock itself) and read_seqretry() drops it and never asks for a retry. A
 * reader therefore excludes writers instead of retrying after one, so the
 * plain loads of a read section never race with a writer's stores: C++ has
 * no tolerated data race for the optimistic read the kernel does, and TSan
 * would report it. Every read section must end in read_seqretry().
 */
#ifndef UK_LINUX_SEQLOCK_H
#define UK_LINUX_SEQLOCK_H

#include <uk/linux/spinlock.h>

typedef struct {
	unsigned int sequence;
	unsigned long read_flags; /* the reader's saved interrupt state */
	spinlock_t lock;
} seqlock_t;

static inline void seqlock_init(seqlock_t *sl)
{
	sl->sequence = 0;
	sl->read_flags = 0;
	spin_lock_init(&sl->lock);
}

static inline unsigned int read_seqbegin(seqlock_t *sl)
{
	unsigned long flags;

	spin_lock_irqsave(&sl->lock, flags);
	sl->read_flags = flags;
	return sl->sequence;
}

static inline unsigned int read_seqretry(seqlock_t *sl, unsigned int start)
{
	unsigned long flags = sl->read_flags;

	(void)start;
	spin_unlock_irqrestore(&sl->lock, flags);
	return 0;
}

static inline void write_seqlock(seqlock_t *sl)
{
	spin_lock(&sl->lock);
	sl->sequence++;
}

static inline void write_sequnlock(seqlock_t *sl)
{
	sl->sequence++;
	spin_unlock(&sl->lock);
}

static inline void write_seqlock_irq(seqlock_t *sl)
{
	spin_lock_irq(&sl->lock);
	sl->sequence++;
}

static inline void write_sequnlock_irq(seqlock_t *sl)
{
	sl->sequence++;
	spin_unlock_irq(&sl->lock);
}

#define write_seqlock_irqsave(sl, flags)               \
	do {                                           \
		spin_lock_irqsave(&(sl)->lock, flags); \
		(sl)->sequence++;                      \
	} while (0)

#define write_sequnlock_irqrestore(sl, flags)               \
	do {                                                \
		(sl)->sequence++;                           \
		spin_unlock_irqrestore(&(sl)->lock, flags); \
	} while (0)

#endif /* UK_LINUX_SEQLOCK_H */
