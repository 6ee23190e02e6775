/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libukern_aio.so's view of /dev/ukern/<name>: open(), openat(), close()
 * and stat() are interposed so that an unmodified program (fio) can open an
 * emulated block device by path. With aio.engine=v26, pipe() and pipe2()
 * make ukern pipes (aio/pipe.cc), whose ends read(), write(), close() and
 * fcntl(F_GETFL/F_SETFL) reach. Other paths and descriptors go straight to
 * the system calls. C, so that the prototypes are glibc's own.
 */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define UK_EXPORT __attribute__((visibility("default")))

/* libaio.cc: fd or -errno for a /dev/ukern/ path; close of such an fd. */
int ukern_preload_open(const char *path, int flags);
int ukern_preload_is_blkdev(int fd);
int ukern_preload_close(int fd);
/* libaio.cc: ukern pipes (-ENOSYS from pipe2: not the v26 engine). */
int ukern_preload_pipe2(int fds[2], int flags);
int ukern_preload_is_pipe(int fd);
long ukern_preload_read(int fd, void *buf, size_t count);
long ukern_preload_write(int fd, const void *buf, size_t count);
int ukern_preload_close_pipe(int fd);
int ukern_preload_pipe_flags(int fd, int set, int flags);

static int is_ukern_path(const char *path)
{
	return path && strncmp(path, "/dev/ukern/", 11) == 0;
}

static int ret_errno(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if (is_ukern_path(path))
		return ret_errno(ukern_preload_open(path, flags));
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

UK_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}

UK_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}

UK_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

UK_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

UK_EXPORT int close(int fd)
{
	if (ukern_preload_is_pipe(fd))
		return ret_errno(ukern_preload_close_pipe(fd));
	if (ukern_preload_is_blkdev(fd))
		return ret_errno(ukern_preload_close(fd));
	return (int)syscall(SYS_close, fd);
}

/* stat() of a device: the placeholder's (a regular file of its size). */
static int stat_path(const char *path, struct stat *st, int atflags)
{
	if (is_ukern_path(path)) {
		int fd = ukern_preload_open(path, O_RDONLY | O_CLOEXEC), r;

		if (fd < 0)
			return ret_errno(fd);
		r = (int)syscall(SYS_fstat, fd, st);
		ukern_preload_close(fd);
		return r;
	}
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, atflags);
}

UK_EXPORT int stat(const char *path, struct stat *st)
{
	return stat_path(path, st, 0);
}

UK_EXPORT int stat64(const char *path, struct stat64 *st)
{
	return stat_path(path, (struct stat *)st, 0);
}

UK_EXPORT int lstat(const char *path, struct stat *st)
{
	return stat_path(path, st, AT_SYMLINK_NOFOLLOW);
}

UK_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	return stat_path(path, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
}

UK_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	if (is_ukern_path(path)) {
		int fd = ukern_preload_open(path, O_RDONLY | O_CLOEXEC), r;

		if (fd < 0)
			return ret_errno(fd);
		r = (int)syscall(SYS_statx, fd, "", flags | AT_EMPTY_PATH, mask, stx);
		ukern_preload_close(fd);
		return r;
	}
	return (int)syscall(SYS_statx, dirfd, path, flags, mask, stx);
}

UK_EXPORT int pipe2(int fds[2], int flags)
{
	int r = ukern_preload_pipe2(fds, flags);

	if (r != -ENOSYS)
		return ret_errno(r);
	return (int)syscall(SYS_pipe2, fds, flags);
}

UK_EXPORT int pipe(int fds[2])
{
	return pipe2(fds, 0);
}

UK_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	if (ukern_preload_is_pipe(fd))
		return ret_errno(ukern_preload_read(fd, buf, count));
	return syscall(SYS_read, fd, buf, count);
}

UK_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	if (ukern_preload_is_pipe(fd))
		return ret_errno(ukern_preload_write(fd, buf, count));
	return syscall(SYS_write, fd, buf, count);
}

/* fcntl: F_GETFL/F_SETFL of a ukern pipe end; everything else to the kernel. */
static int do_fcntl(int fd, int cmd, va_list ap)
{
	unsigned long arg = va_arg(ap, unsigned long);

	if ((cmd == F_GETFL || cmd == F_SETFL) && ukern_preload_is_pipe(fd))
		return ret_errno(ukern_preload_pipe_flags(fd, cmd == F_SETFL, (int)arg));
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

UK_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	int r;

	va_start(ap, cmd);
	r = do_fcntl(fd, cmd, ap);
	va_end(ap);
	return r;
}

UK_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));
