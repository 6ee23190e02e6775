/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Private glue between aio.cc (fs/aio.c) and aio_host.cc (the VFS, the
 * workqueue and the ring pages of the user-mode port).
 */
#ifndef UK_AIO_INTERNAL_H
#define UK_AIO_INTERNAL_H

#include <uk/linux/aio_fs.h>
#include <uk/linux/list.h>
#include <uk/linux/types.h>
#include <uk/linux/workqueue.h>

typedef unsigned int __poll_t;

/*
 * A work item of the host-file backend on aio_wq, an unbound workqueue of
 * the shim: a host read or write does not sleep in schedule(), so each
 * pending item gets a worker of the unbound pool.
 */
struct aio_work {
	struct work_struct work;
	void (*func)(struct aio_work *work);
};
void aio_work_fn(struct work_struct *work);
#define INIT_AIO_WORK(w, f)                         \
	do {                                        \
		INIT_WORK(&(w)->work, aio_work_fn); \
		(w)->func = (f);                    \
	} while (0)
void aio_queue_work(struct aio_work *work);
void aio_wq_flush(void);
void aio_wq_fork_child(void);
/* exit_mm(): host requests that io_uring can cancel complete with -EINTR. */
void aio_host_exit(void);

/* Ring pages: a run of pages in a memfd arena, mapped by the "kernel". */
struct aio_ring_arena;
struct aio_ring_area {
	struct aio_ring_arena *arena;
	unsigned long pgoff;
	unsigned long nr_pages;
	void *kaddr;	     /* kernel alias */
	bool user_mapped;    /* the user mapping aio_ring_area_map_user() made is ours */
	bool ufixed;	     /* ... and sits in the arena's reservation */
	unsigned long uaddr; /* where that mapping was made */
};
int aio_ring_area_alloc(struct aio_ring_area *area, unsigned long nr_pages);
void aio_ring_area_free(struct aio_ring_area *area);
/*
 * A fresh user mapping of the area (MAP_FAILED on error, with errno
 * ENOMEM once the process is near vm.max_map_count), and munmap() for
 * the kernel's vm_munmap(): a ring's place in its arena goes back in
 * reserve.
 */
void *aio_ring_area_map_user(struct aio_ring_area *area);
int aio_vm_munmap(unsigned long start, size_t len);
/* VMAs the ring arenas and user mappings make, and how many they may. */
long aio_ring_vmas(void);
long aio_ring_vmas_max(void);
void aio_ring_fork_child(void);

/* Files. */
/*
 * Descriptors that ukern opens for itself (the memfds of the ring arenas,
 * the io_uring instance, the poller's epoll and eventfd, the sleepers'
 * eventfds, the dups that pin host files) stand for files of the kernel,
 * which have no number in the program's descriptor table: aio_fget()
 * answers for them as for a number that is not open. Marked after they
 * are opened, unmarked before they are closed (numbers below 65536).
 */
void aio_kernel_fd_set(int fd);
void aio_kernel_fd_clear(int fd);
struct file *aio_fget(unsigned int fd, struct file *host_storage);
void fput(struct file *file);
/* Make the file usable after io_submit() returns (dup a host fd). */
int aio_file_pin(struct file *file);
/*
 * FSYNC and FDSYNC on a host descriptor, before aio_fsync(): the kernel's
 * file_operations of a pipe, socket or character device have no ->fsync,
 * and all host descriptors share host_file_operations, so such a file (one
 * that fstat() cannot tell apart either) gets operations without ->fsync,
 * which aio_fsync() refuses; any other is pinned, since its fsync runs
 * after io_submit() returns. 0, or -ENOMEM when it cannot be pinned.
 */
int aio_host_fsync_prep(struct file *file);

#endif /* UK_AIO_INTERNAL_H */
