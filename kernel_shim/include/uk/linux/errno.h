/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel errno values. The user-visible ones are the host's <errno.h>
 * values (the same numbers on Linux); the kernel-internal ones follow.
 *
 * Upstream: include/linux/errno.h @ v6.12
 */
#ifndef UK_LINUX_ERRNO_H
#define UK_LINUX_ERRNO_H

#include <cerrno>

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ENOIOCTLCMD 515
#define ERESTART_RESTARTBLOCK 516
#define EPROBE_DEFER 517
#define EOPENSTALE 518
#define ENOPARAM 519
#define EBADHANDLE 521
#define ENOTSYNC 522
#define EBADCOOKIE 523
#define ENOTSUPP 524
#define ETOOSMALL 525
#define ESERVERFAULT 526
#define EBADTYPE 527
#define EJUKEBOX 528
#define EIOCBQUEUED 529
#define ERECALLCONFLICT 530

#define MAX_ERRNO 4095

#endif /* UK_LINUX_ERRNO_H */
