/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The configfs objects that attribute functions are handed
 * (include/linux/configfs.h): an item and the group that embeds it. There
 * is no configfs file system; a driver's own attribute table passes the
 * item of the object it serves, so that ->show() and ->store() find their
 * object with container_of() as in the kernel.
 */
#ifndef UK_LINUX_CONFIGFS_H
#define UK_LINUX_CONFIGFS_H

#include <uk/linux/container_of.h>

struct config_item {
	const char *ci_name; /* the directory name; NULL when none */
};

struct config_group {
	struct config_item cg_item;
};

static inline struct config_group *to_config_group(struct config_item *item)
{
	return item ? container_of(item, struct config_group, cg_item) : NULL;
}

#endif /* UK_LINUX_CONFIGFS_H */
