/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pipes of the 2.6 era (include/linux/pipe_fs_i.h, fs/pipe.c) for the
 * retry-based AIO engine (<uk/linux/aio_v26.h>): one page of circular
 * buffer, one wait queue for readers and writers, and an AIO path whose
 * waits queue the request's ki_wait and return -EIOCBRETRY.
 *
 * A ukern pipe's two ends are descriptors of the program (each holds a
 * /dev/null open so that the number is taken) registered with the
 * engine's fd table: io_submit() on them goes to the pipe, and
 * uk::aio26::sys_read/sys_write/sys_close are read(2)/write(2)/close(2).
 */
#ifndef UK_LINUX_PIPE_FS_I_H
#define UK_LINUX_PIPE_FS_I_H

#include <sys/types.h>

#include <uk/linux/mutex.h>
#include <uk/linux/wait.h>

#define PIPE_SIZE 4096u
#ifndef PIPE_BUF
#define PIPE_BUF 4096 /* <limits.h> has it too */
#endif

namespace uk::aio26
{

struct pipe_inode_info {
	struct mutex mutex; /* the inode's semaphore: buffer and counts */
	wait_queue_head_t wait;
	char *base;
	unsigned int start;
	unsigned int len;
	unsigned int readers;
	unsigned int writers;
	unsigned int waiting_writers;
};

/* pipe2(2): 0 or -errno (-EINVAL for flags other than O_NONBLOCK|O_CLOEXEC). */
int do_pipe2(int fds[2], int flags);
/* read(2)/write(2)/close(2) on a ukern pipe end: bytes or -errno (-EBADF if not ours). */
ssize_t sys_read(int fd, void *buf, size_t count);
ssize_t sys_write(int fd, const void *buf, size_t count);
int sys_close(int fd);
/* fcntl(F_SETFL, O_NONBLOCK) for a ukern pipe end: 0 or -EBADF. */
int set_nonblock(int fd, bool on);
/* fcntl(F_GETFL): the end's O_* flags, or -EBADF. */
int get_fl(int fd);
/* Pipes alive (leak checks). */
long nr_live_pipes(void);

} // namespace uk::aio26

#endif /* UK_LINUX_PIPE_FS_I_H */
