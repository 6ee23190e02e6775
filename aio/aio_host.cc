// SPDX-License-Identifier: GPL-2.0-only
//
// What fs/aio.c calls into, for the user-mode port: the file layer (host
// descriptors and registered emulated files; O_DIRECT on host files through
// one io_uring, or the aio workqueue), the aio workqueue (an unbound one of
// the shim's), and the ring pages (memfd arenas with a "kernel" alias).
#define KBUILD_MODNAME "aio"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <thread>
#include <vector>

#include <liburing.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/compat.h>
#include <uk/linux/errno.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/kernel.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/poll.h>
#include <uk/linux/printk.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include "aio_internal.h"

#define AIO_PAGE_SIZE 4096UL

thread_local bool uk_compat_syscall;

/* ------------------------------------------------------------------ */
/* aio_wq: the shim's workqueue for the threads backend.              */

namespace
{

struct workqueue_struct *aio_wq;
std::once_flag aio_wq_once;

struct workqueue_struct *get_aio_wq()
{
	/*
	 * Unbound: a work item that blocks in a host system call never sleeps
	 * in schedule(), so a bound pool would run one at a time per CPU; the
	 * unbound pool gives every pending item a worker.
	 */
	std::call_once(aio_wq_once, [] {
		aio_wq = alloc_workqueue("aio_host", WQ_UNBOUND, WQ_UNBOUND_MAX_ACTIVE);
	});
	return aio_wq;
}

} // namespace

void aio_work_fn(struct work_struct *work)
{
	struct aio_work *w = container_of(work, struct aio_work, work);

	w->func(w);
}

void aio_queue_work(struct aio_work *work)
{
	queue_work(get_aio_wq(), &work->work);
}

void aio_wq_flush(void)
{
	if (aio_wq)
		flush_workqueue(aio_wq);
}

/* ------------------------------------------------------------------ */
/* The kernel's own descriptors (see aio_internal.h).                   */

namespace
{

constexpr int kMaxKernelFd = 65536;
unsigned long kernel_fds[kMaxKernelFd / BITS_PER_LONG];

bool aio_kernel_fd(unsigned int fd)
{
	return fd < (unsigned)kMaxKernelFd &&
	       (__atomic_load_n(&kernel_fds[fd / BITS_PER_LONG], __ATOMIC_RELAXED) &
		(1UL << (fd % BITS_PER_LONG)));
}

} // namespace

void aio_kernel_fd_set(int fd)
{
	if (fd >= 0 && fd < kMaxKernelFd)
		__atomic_fetch_or(&kernel_fds[fd / BITS_PER_LONG], 1UL << (fd % BITS_PER_LONG),
				  __ATOMIC_RELAXED);
}

void aio_kernel_fd_clear(int fd)
{
	if (fd >= 0 && fd < kMaxKernelFd)
		__atomic_fetch_and(&kernel_fds[fd / BITS_PER_LONG], ~(1UL << (fd % BITS_PER_LONG)),
				   __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Ring pages.                                                         */

/*
 * Rings live in memfd arenas: the "kernel" maps each arena once (kbase);
 * each ring's user mapping goes at the same offset in a PROT_NONE
 * reservation of the arena's size (ubase), so that the user mappings of
 * neighbouring rings are one VMA, as the kernel would merge them. The
 * kernel's io_setup() fails with -ENOMEM where the ring's mmap() would take
 * the process past vm.max_map_count; 65536 rings, one VMA each, cannot
 * exist under the default limit, and here the allocator shares the budget:
 * a process whose rings took every mapping could no longer malloc(). So the
 * VMAs the rings make are counted, and the rings may use all but
 * kMapHeadroom of the limit.
 */
enum aio_uslot : uint8_t {
	USLOT_RESERVED, /* PROT_NONE, ours */
	USLOT_MAPPED,	/* a ring's user mapping */
	USLOT_LOST,	/* the program unmapped or moved it: never reused */
};

struct aio_ring_arena {
	int fd;
	char *kbase;
	char *ubase; /* user reservation (NULL: dedicated arena) */
	unsigned long npages;
	unsigned long used;
	unsigned long hint;
	std::vector<bool> map;
	std::vector<uint8_t> uslot;
	bool dedicated;
};

namespace
{

constexpr unsigned long kArenaPages = 16384; /* 64 MiB of address space */
constexpr long kMapHeadroom = 2048;
std::mutex arena_lock;
std::vector<aio_ring_arena *> *arenas;
/* VMAs the arenas and rings make (an estimate: what merging leaves). */
std::atomic<long> ring_vmas;
/* The user mappings we made, by address, for vm_munmap(). */
std::unordered_map<unsigned long, aio_ring_area *> *user_maps;

long max_map_count(void)
{
	static const long n = [] {
		long v = 65530; /* DEFAULT_MAX_MAP_COUNT */
		if (FILE *f = fopen("/proc/sys/vm/max_map_count", "re")) {
			if (fscanf(f, "%ld", &v) != 1)
				v = 65530;
			fclose(f);
		}
		return v;
	}();
	return n;
}

long ring_vmas_max(void)
{
	long max = max_map_count() - kMapHeadroom;

	return max > 0 ? max : 0;
}

/*
 * Does a VMA start at user slot @i (a run of reserved or mapped pages),
 * were slots [s, s + n) in state @st?
 */
bool uslot_run_starts(const aio_ring_arena *a, unsigned long i, unsigned long s, unsigned long n,
		      uint8_t st)
{
	auto state = [&](unsigned long j) { return j - s < n ? st : a->uslot[j]; };

	return state(i) != USLOT_LOST && (i == 0 || state(i - 1) != state(i));
}

/* How many VMAs setting user slots [s, s + n) to @st would add. */
long uslot_delta(const aio_ring_arena *a, unsigned long s, unsigned long n, uint8_t st)
{
	unsigned long end = std::min(s + n + 1, a->npages);
	long delta = 0;

	for (unsigned long i = s; i < end; i++)
		delta += (long)uslot_run_starts(a, i, s, n, st) -
			 (long)uslot_run_starts(a, i, 0, 0, 0);
	return delta;
}

void uslot_set(aio_ring_arena *a, unsigned long s, unsigned long n, uint8_t st)
{
	ring_vmas.fetch_add(uslot_delta(a, s, n, st), std::memory_order_relaxed);
	std::fill(a->uslot.begin() + s, a->uslot.begin() + s + n, st);
}

bool uslot_all(const aio_ring_arena *a, unsigned long s, unsigned long n, uint8_t st)
{
	for (unsigned long i = s; i < s + n; i++)
		if (a->uslot[i] != st)
			return false;
	return true;
}

void *reserve(void *addr, size_t size)
{
	void *p = mmap(addr, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr ? MAP_FIXED : 0), -1, 0);

	/* Neither the rings nor their reservation go to a fork child. */
	if (p != MAP_FAILED)
		madvise(p, size, MADV_DONTFORK);
	return p;
}

aio_ring_arena *arena_new(unsigned long npages, bool dedicated)
{
	size_t size = npages * AIO_PAGE_SIZE;
	long vmas = dedicated ? 1 : 2;

	if (ring_vmas.load(std::memory_order_relaxed) + vmas > ring_vmas_max())
		return nullptr;

	auto *a = new aio_ring_arena;

	a->fd = memfd_create("[aio]", MFD_CLOEXEC);
	if (a->fd < 0) {
		delete a;
		return nullptr;
	}
	aio_kernel_fd_set(a->fd);
	if (ftruncate(a->fd, size) < 0) {
		aio_kernel_fd_clear(a->fd);
		close(a->fd);
		delete a;
		return nullptr;
	}
	a->kbase = (char *)mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (a->kbase == MAP_FAILED) {
		aio_kernel_fd_clear(a->fd);
		close(a->fd);
		delete a;
		return nullptr;
	}
	/* A fork child does not get the ring (the kernel does not copy it). */
	madvise(a->kbase, size, MADV_DONTFORK);
	a->ubase = nullptr;
	if (!dedicated) {
		a->ubase = (char *)reserve(nullptr, size);
		if (a->ubase == MAP_FAILED) {
			munmap(a->kbase, size);
			aio_kernel_fd_clear(a->fd);
			close(a->fd);
			delete a;
			return nullptr;
		}
		a->uslot.assign(npages, USLOT_RESERVED);
	}
	ring_vmas.fetch_add(vmas, std::memory_order_relaxed);
	a->npages = npages;
	a->used = 0;
	a->hint = 0;
	a->map.assign(npages, false);
	a->dedicated = dedicated;
	return a;
}

bool arena_take(aio_ring_arena *a, unsigned long n, unsigned long *pgoff)
{
	if (a->npages - a->used < n)
		return false;
	for (int pass = 0; pass < 2; pass++) {
		unsigned long start = pass ? 0 : a->hint, run = 0;

		for (unsigned long i = start; i < a->npages; i++) {
			run = a->map[i] ? 0 : run + 1;
			if (run == n) {
				unsigned long s = i + 1 - n;

				for (unsigned long j = s; j <= i; j++)
					a->map[j] = true;
				a->used += n;
				/* Pages below the hint are all in use: lowest first. */
				if (s == a->hint)
					a->hint = i + 1 < a->npages ? i + 1 : 0;
				*pgoff = s;
				return true;
			}
		}
	}
	return false;
}

/*
 * The ring's user mapping is no longer where we made it (the program
 * unmapped or moved it), so the range may now hold the program's own
 * memory and must never be replaced by us.
 */
void user_mapping_gone(struct aio_ring_area *area)
{
	aio_ring_arena *a = area->arena;

	user_maps->erase(area->uaddr);
	if (area->ufixed)
		uslot_set(a, area->pgoff, area->nr_pages, USLOT_LOST);
	else
		ring_vmas.fetch_sub(1, std::memory_order_relaxed);
	area->user_mapped = false;
	area->ufixed = false;
}

} // namespace

int aio_ring_area_alloc(struct aio_ring_area *area, unsigned long nr_pages)
{
	std::lock_guard<std::mutex> g(arena_lock);
	aio_ring_arena *a = nullptr;
	unsigned long pgoff = 0;

	if (!arenas)
		arenas = new std::vector<aio_ring_arena *>;
	if (nr_pages > kArenaPages / 4) {
		a = arena_new(nr_pages, true);
		if (!a)
			return -ENOMEM;
		arena_take(a, nr_pages, &pgoff);
	} else {
		for (aio_ring_arena *c : *arenas)
			if (!c->dedicated && arena_take(c, nr_pages, &pgoff)) {
				a = c;
				break;
			}
		if (!a) {
			a = arena_new(kArenaPages, false);
			if (!a)
				return -ENOMEM;
			arena_take(a, nr_pages, &pgoff);
			arenas->push_back(a);
		}
	}
	area->arena = a;
	area->pgoff = pgoff;
	area->nr_pages = nr_pages;
	area->kaddr = a->kbase + pgoff * AIO_PAGE_SIZE;
	area->user_mapped = false;
	area->ufixed = false;
	return 0;
}

void aio_ring_area_free(struct aio_ring_area *area)
{
	std::lock_guard<std::mutex> g(arena_lock);
	aio_ring_arena *a = area->arena;

	if (!a)
		return;
	/* A user mapping left behind: moved, or the process "exits". */
	if (area->user_mapped)
		user_mapping_gone(area);
	if (a->dedicated) {
		munmap(a->kbase, a->npages * AIO_PAGE_SIZE);
		aio_kernel_fd_clear(a->fd);
		close(a->fd);
		delete a;
		ring_vmas.fetch_sub(1, std::memory_order_relaxed);
	} else {
		/* Give the pages back; they read as zeroes when reused. */
		fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  area->pgoff * AIO_PAGE_SIZE, area->nr_pages * AIO_PAGE_SIZE);
		for (unsigned long j = 0; j < area->nr_pages; j++)
			a->map[area->pgoff + j] = false;
		a->used -= area->nr_pages;
		a->hint = std::min(a->hint, area->pgoff);
	}
	area->arena = nullptr;
}

long aio_ring_vmas(void)
{
	return ring_vmas.load(std::memory_order_relaxed);
}

long aio_ring_vmas_max(void)
{
	return ring_vmas_max();
}

void *aio_ring_area_map_user(struct aio_ring_area *area)
{
	std::lock_guard<std::mutex> g(arena_lock);
	aio_ring_arena *a = area->arena;
	size_t size = area->nr_pages * AIO_PAGE_SIZE;
	off_t off = area->pgoff * AIO_PAGE_SIZE;
	long delta = 1;
	void *p;

	/* A 32-bit task's ring must be reachable by a 32-bit address. */
	bool low = in_compat_syscall();
	bool fixed = !low && a->ubase && uslot_all(a, area->pgoff, area->nr_pages, USLOT_RESERVED);
	if (fixed)
		delta = uslot_delta(a, area->pgoff, area->nr_pages, USLOT_MAPPED);
	if (ring_vmas.load(std::memory_order_relaxed) + delta > ring_vmas_max()) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	if (fixed) {
		/* Replaces our own reservation: nothing of the program's is there. */
		p = mmap(a->ubase + off, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 a->fd, off);
		if (p == MAP_FAILED)
			return p;
		uslot_set(a, area->pgoff, area->nr_pages, USLOT_MAPPED);
	} else {
		p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | (low ? MAP_32BIT : 0),
			 a->fd, off);
		if (p == MAP_FAILED)
			return p;
		ring_vmas.fetch_add(1, std::memory_order_relaxed);
	}
	madvise(p, size, MADV_DONTFORK);
	area->user_mapped = true;
	area->ufixed = fixed;
	area->uaddr = (unsigned long)p;
	if (!user_maps)
		user_maps = new std::unordered_map<unsigned long, aio_ring_area *>;
	(*user_maps)[area->uaddr] = area;
	return p;
}

int aio_vm_munmap(unsigned long start, size_t len)
{
	std::lock_guard<std::mutex> g(arena_lock);
	struct aio_ring_area *area;

	if (!user_maps)
		return munmap((void *)start, len);
	auto it = user_maps->find(start);
	if (it == user_maps->end() || len != it->second->nr_pages * AIO_PAGE_SIZE)
		return munmap((void *)start, len); /* not a mapping we made there */
	area = it->second;
	if (area->ufixed) {
		/* Back to reserved, in one step: the range is never free. */
		if (reserve((void *)start, len) == MAP_FAILED)
			return -1;
		uslot_set(area->arena, area->pgoff, area->nr_pages, USLOT_RESERVED);
	} else {
		if (munmap((void *)start, len))
			return -1;
		ring_vmas.fetch_sub(1, std::memory_order_relaxed);
	}
	user_maps->erase(it);
	area->user_mapped = false;
	area->ufixed = false;
	return 0;
}

void aio_ring_fork_child(void)
{
	if (arenas)
		for (aio_ring_arena *a : *arenas) {
			aio_kernel_fd_clear(a->fd);
			close(a->fd);
		}
	arenas = nullptr; /* the mappings are not in the child */
	ring_vmas.store(0, std::memory_order_relaxed);
	user_maps = nullptr; /* the parent's, leaked */
	new (&arena_lock) std::mutex();
}

/* ------------------------------------------------------------------ */
/* Files.                                                              */

namespace
{

constexpr int kMaxRegisteredFd = 65536;
struct file *registered[kMaxRegisteredFd];

ssize_t host_do_rw(int fd, struct kiocb *iocb, struct iov_iter *it, bool write)
{
	ssize_t r;

	if (it->nr_segs == 1 && !iocb->ki_rw_flags) {
		void *base = iter_iov(it)[0].iov_base;
		size_t len = iter_iov(it)[0].iov_len;

		r = write ? pwrite(fd, base, len, iocb->ki_pos)
			  : pread(fd, base, len, iocb->ki_pos);
	} else {
		r = write ? pwritev2(fd, iter_iov(it), it->nr_segs, iocb->ki_pos, iocb->ki_rw_flags)
			  : preadv2(fd, iter_iov(it), it->nr_segs, iocb->ki_pos, iocb->ki_rw_flags);
	}
	if (r < 0 && errno == ESPIPE) {
		/* Streams (pipes, sockets): the position is not used. */
		r = write ? pwritev2(fd, iter_iov(it), it->nr_segs, -1, iocb->ki_rw_flags)
			  : preadv2(fd, iter_iov(it), it->nr_segs, -1, iocb->ki_rw_flags);
	}
	return r < 0 ? -errno : r;
}

struct host_async {
	struct aio_work work; /* the threads backend's work item */
	struct kiocb *iocb;
	bool write;
	int submitted; /* io_uring: set once the entry is filled in */
	struct iov_iter it;
	struct iovec iov[];
};

std::atomic<long> host_inflight_nr;

void host_async_done(struct host_async *ha, long res)
{
	struct kiocb *iocb = ha->iocb;

	kfree(ha);
	host_inflight_nr.fetch_sub(1, std::memory_order_relaxed);
	iocb->ki_complete(iocb, res);
}

/* The threads backend: the system call runs in a worker of aio_wq. */
void host_async_work(struct aio_work *w)
{
	auto *ha = container_of(w, struct host_async, work);
	struct kiocb *iocb = ha->iocb;

	host_inflight_nr.fetch_add(1, std::memory_order_relaxed);
	host_async_done(ha, host_do_rw(iocb->ki_filp->f_fd, iocb, &ha->it, ha->write));
}

/*
 * The io_uring backend: one ring for the process. Submitters fill the
 * submission queue under sq_lock; the reaper alone consumes the completion
 * queue and completes each request through ->ki_complete() (aio_complete())
 * from its own task, as an interrupt handler or a workqueue would.
 */
constexpr unsigned kRingSqEntries = 256;
constexpr unsigned kRingCqEntries = 4096;

struct HostRing {
	struct io_uring ring;
	std::mutex sq_lock;
};

enum { kRingUnset, kRingUp, kRingFailed };
std::atomic<int> host_ring_state{ kRingUnset };
HostRing *host_ring;
std::mutex host_ring_start;

void host_ring_reaper(HostRing *r)
{
	pthread_setname_np(pthread_self(), "aio_uring");
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		int ret = io_uring_wait_cqe(&r->ring, &cqe);

		if (ret < 0) {
			if (ret != -EINTR && ret != -EAGAIN)
				pr_err("aio: io_uring_wait_cqe: %d\n", ret);
			continue;
		}
		io_uring_for_each_cqe(&r->ring, head, cqe)
		{
			auto *ha = (struct host_async *)io_uring_cqe_get_data(cqe);
			long res = cqe->res;

			n++;
			if (!ha)
				continue; /* an IORING_OP_ASYNC_CANCEL of aio_host_exit() */
			/*
			 * Pairs with the release store in host_ring_submit():
			 * the request as the submitter left it. The host
			 * kernel's ring orders it too, unseen by ThreadSanitizer.
			 */
			(void)__atomic_load_n(&ha->submitted, __ATOMIC_ACQUIRE);
			/* Cancelled by io_uring (an exit): a read that exit interrupted. */
			host_async_done(ha, res == -ECANCELED ? -EINTR : res);
		}
		io_uring_cq_advance(&r->ring, n);
	}
}

HostRing *get_host_ring(void)
{
	int state = host_ring_state.load(std::memory_order_acquire);
	struct io_uring_params p = {};
	sigset_t all, old;
	HostRing *r;

	if (likely(state == kRingUp))
		return host_ring;
	if (state == kRingFailed)
		return nullptr;
	std::lock_guard<std::mutex> g(host_ring_start);
	state = host_ring_state.load(std::memory_order_relaxed);
	if (state != kRingUnset)
		return state == kRingUp ? host_ring : nullptr;
	r = new HostRing;
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = kRingCqEntries;
	if (io_uring_queue_init_params(kRingSqEntries, &r->ring, &p) < 0) {
		/* io_uring_disabled, a seccomp filter, an old kernel: threads. */
		delete r;
		host_ring_state.store(kRingFailed, std::memory_order_release);
		return nullptr;
	}
	aio_kernel_fd_set(r->ring.ring_fd);
	/* The reaper takes none of the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	std::thread(host_ring_reaper, r).detach();
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	host_ring = r;
	/* Release: the ring is set up before another submitter uses it. */
	host_ring_state.store(kRingUp, std::memory_order_release);
	return r;
}

/* The plug of an io_submit() batch ends: one io_uring_enter() for it. */
void host_ring_unplug(struct blk_plug_cb *cb, bool from_schedule)
{
	auto *r = (HostRing *)cb->data;
	int ret;

	kfree(cb);
	std::lock_guard<std::mutex> g(r->sq_lock);
	while ((ret = io_uring_submit(&r->ring)) == -EINTR || ret == -EAGAIN || ret == -EBUSY)
		sched_yield();
}

int host_ring_submit(HostRing *r, struct host_async *ha)
{
	struct kiocb *iocb = ha->iocb;
	int fd = iocb->ki_filp->f_fd;
	/* Under io_submit()'s plug, the entry waits for the batch's end. */
	bool plugged = blk_check_plugged(host_ring_unplug, r, sizeof(struct blk_plug_cb));
	struct io_uring_sqe *sqe;
	int ret;

	std::lock_guard<std::mutex> g(r->sq_lock);
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			return -EAGAIN;
	}
	if (ha->it.nr_segs == 1) {
		void *base = ha->iov[0].iov_base;
		unsigned len = ha->iov[0].iov_len;

		if (ha->write)
			io_uring_prep_write(sqe, fd, base, len, iocb->ki_pos);
		else
			io_uring_prep_read(sqe, fd, base, len, iocb->ki_pos);
	} else if (ha->write) {
		io_uring_prep_writev(sqe, fd, ha->iov, ha->it.nr_segs, iocb->ki_pos);
	} else {
		io_uring_prep_readv(sqe, fd, ha->iov, ha->it.nr_segs, iocb->ki_pos);
	}
	sqe->rw_flags = iocb->ki_rw_flags;
	io_uring_sqe_set_data(sqe, ha);
	host_inflight_nr.fetch_add(1, std::memory_order_relaxed);
	/* Pairs with the acquire load in host_ring_reaper(). */
	__atomic_store_n(&ha->submitted, 1, __ATOMIC_RELEASE);
	/*
	 * Once submitted, the request holds its own reference to the file:
	 * the program may close its descriptor at once (no dup needed).
	 * -EBUSY and -EAGAIN: the completion queue is full until the reaper
	 * has drained it; the entry stays queued and is submitted again.
	 */
	if (plugged)
		return 0;
	while ((ret = io_uring_submit(&r->ring)) == -EINTR || ret == -EAGAIN || ret == -EBUSY)
		sched_yield();
	return 0;
}

ssize_t host_rw_iter(struct kiocb *iocb, struct iov_iter *it, bool write)
{
	struct file *f = iocb->ki_filp;
	HostRing *ring = nullptr;

	if (!(f->f_flags & O_DIRECT))
		return host_do_rw(f->f_fd, iocb, it, write);

	/* O_DIRECT is asynchronous in the kernel: io_uring, or aio_wq. */
	auto *ha = (struct host_async *)kmalloc(
		sizeof(struct host_async) + it->nr_segs * sizeof(struct iovec), GFP_KERNEL);
	if (!ha)
		return -ENOMEM;
	memcpy(ha->iov, iter_iov(it), it->nr_segs * sizeof(struct iovec));
	iov_iter_init(&ha->it, it->data_source, ha->iov, it->nr_segs, it->count);
	ha->iocb = iocb;
	ha->write = write;
	if (uk::aio::aio_host_backend == uk::aio::HostBackend::kUring)
		ring = get_host_ring();
	if (ring) {
		int ret = host_ring_submit(ring, ha);

		if (ret) {
			kfree(ha);
			return ret;
		}
		return -EIOCBQUEUED;
	}
	if (aio_file_pin(f)) {
		kfree(ha);
		return -ENOMEM;
	}
	INIT_AIO_WORK(&ha->work, host_async_work);
	aio_queue_work(&ha->work);
	return -EIOCBQUEUED;
}

ssize_t host_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return host_rw_iter(iocb, to, false);
}

ssize_t host_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	return host_rw_iter(iocb, from, true);
}

int host_fsync(struct file *file, int datasync)
{
	int r;

	/* The kernel's fsync sleeps in schedule(); on system_wq, say so. */
	uk::host_block_begin();
	r = datasync ? fdatasync(file->f_fd) : fsync(file->f_fd);
	uk::host_block_end();
	return r < 0 ? -errno : 0;
}

/*
 * Readiness of host descriptors as wait-queue wake-ups. A host file that a
 * poll waits on gets a wait queue head of its own (file->private_data),
 * and its descriptor is put in the epoll set of one host thread with the
 * head as the event's data. That thread is the file's interrupt: for each
 * event it calls wake_up_poll() on the head with the ready events as the
 * key. Interest is one-shot and armed again by the file's ->poll() while a
 * waiter is queued and the events it waits for are not ready.
 *
 * A head outlives the file that owned it: fput() takes the descriptor out
 * of the set and hands the head to the thread, which frees it only after
 * the batch of events it was dispatching, the last that could name it.
 */
struct host_poll_head {
	wait_queue_head_t wqh;
	int fd;		       /* the file's pinned descriptor, in the set until fput() */
	struct list_head dead; /* on host_poller::dead once the file is gone */
};

struct host_poller {
	std::mutex lock; /* guards dead */
	int epfd;
	int wakefd;
	struct list_head dead;
};

std::atomic<host_poller *> host_poller_state;

/* The events epoll takes: no flags, no bits only the kernel reports. */
constexpr __poll_t kHostPollEvents = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND |
				     EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLERR | EPOLLHUP |
				     EPOLLRDHUP;

/* Every event the descriptor has now. */
__poll_t host_poll_mask(int fd)
{
	struct pollfd pfd = { fd,
			      POLLIN | POLLOUT | POLLPRI | POLLRDNORM | POLLWRNORM | POLLRDBAND |
				      POLLWRBAND | POLLRDHUP,
			      0 };

	if (poll(&pfd, 1, 0) < 0 || (pfd.revents & POLLNVAL))
		return 0;
	return demangle_poll(pfd.revents);
}

/*
 * The key to wake a host file's queue with. The host kernel's own key is
 * not visible: epoll reports only the events asked for, while a file's
 * waker passes every form of the readiness it signals (a pipe's writer
 * EPOLLIN | EPOLLRDNORM, an eventfd's signal EPOLLIN alone), and aio
 * completes a request with the key. A reported read or write event is
 * taken with the forms of it (plain, normal, band) the descriptor has now.
 */
constexpr __poll_t kHostPollRead = EPOLLIN | EPOLLRDNORM | EPOLLRDBAND;
constexpr __poll_t kHostPollWrite = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;

__poll_t host_poll_key(__poll_t reported, int fd)
{
	__poll_t forms = 0;

	if (reported & kHostPollRead)
		forms |= kHostPollRead;
	if (reported & kHostPollWrite)
		forms |= kHostPollWrite;
	if (forms)
		forms &= host_poll_mask(fd);
	return (reported | forms) & kHostPollEvents;
}

void host_poller_main(host_poller *p)
{
	struct epoll_event evs[64];
	LIST_HEAD(dead);

	for (;;) {
		int n = epoll_wait(p->epfd, evs, 64, -1);

		for (int i = 0; i < n; i++) {
			struct host_poll_head *head = (struct host_poll_head *)evs[i].data.ptr;
			u64 cnt;

			if (!head) {
				if (read(p->wakefd, &cnt, sizeof(cnt)) < 0) {
					/* nothing to drain */
				}
				continue;
			}
			wake_up_poll(&head->wqh, host_poll_key(evs[i].events, head->fd));
		}
		{
			std::lock_guard<std::mutex> g(p->lock);
			list_splice_init(&p->dead, &dead);
		}
		while (!list_empty(&dead)) {
			struct host_poll_head *head =
				list_first_entry(&dead, struct host_poll_head, dead);

			list_del(&head->dead);
			delete head;
		}
	}
}

host_poller *host_get_poller(void)
{
	static std::mutex start_lock;
	host_poller *p = host_poller_state.load(std::memory_order_acquire);
	struct epoll_event ev = {};

	if (likely(p))
		return p;
	std::lock_guard<std::mutex> g(start_lock);
	p = host_poller_state.load(std::memory_order_relaxed);
	if (p)
		return p;
	p = new host_poller;
	INIT_LIST_HEAD(&p->dead);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	aio_kernel_fd_set(p->epfd);
	aio_kernel_fd_set(p->wakefd);
	ev.events = EPOLLIN;
	ev.data.ptr = nullptr;
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakefd, &ev);
	std::thread(host_poller_main, p).detach();
	host_poller_state.store(p, std::memory_order_release);
	return p;
}

/* One-shot interest in @key on the file's descriptor; ADD or MOD. */
int host_poll_arm(struct file *file, struct host_poll_head *head, __poll_t key, int op)
{
	struct epoll_event ev = {};

	ev.events = (key & kHostPollEvents) | EPOLLONESHOT;
	ev.data.ptr = head;
	return epoll_ctl(host_get_poller()->epfd, op, file->f_fd, &ev);
}

/*
 * The head of a file that is about to wait: its descriptor is pinned (the
 * program may close its own) and put in the set. NULL when the descriptor
 * cannot be waited on: epoll refuses files without ->poll() (regular files,
 * directories, /dev/null), which are always ready.
 */
struct host_poll_head *host_poll_head_get(struct file *file, __poll_t key)
{
	struct host_poll_head *head = (struct host_poll_head *)file->private_data;

	if (head)
		return head;
	if (aio_file_pin(file))
		return nullptr;
	head = new host_poll_head;
	init_waitqueue_head(&head->wqh);
	head->fd = file->f_fd;
	INIT_LIST_HEAD(&head->dead);
	if (host_poll_arm(file, head, key, EPOLL_CTL_ADD) < 0) {
		delete head;
		return nullptr;
	}
	file->private_data = head;
	return head;
}

void host_poll_head_put(struct file *file)
{
	struct host_poll_head *head = (struct host_poll_head *)file->private_data;
	host_poller *p = host_poller_state.load(std::memory_order_acquire);
	u64 one = 1;

	if (!head)
		return;
	file->private_data = nullptr;
	/* Out of the set while the descriptor is still open. */
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, file->f_fd, nullptr);
	{
		std::lock_guard<std::mutex> g(p->lock);
		list_add_tail(&head->dead, &p->dead);
	}
	if (write(p->wakefd, &one, sizeof(one)) < 0) {
		/* the thread frees it after its next batch anyway */
	}
}

__poll_t host_poll(struct file *file, struct poll_table_struct *pt)
{
	__poll_t key = poll_requested_events(pt);
	struct host_poll_head *head = (struct host_poll_head *)file->private_data;
	__poll_t mask;

	if (!poll_does_not_wait(pt)) {
		head = host_poll_head_get(file, key);
		if (head)
			poll_wait(file, &head->wqh, pt);
	}
	/* The state is read after the waiter is queued (poll_wait()'s barrier). */
	mask = host_poll_mask(file->f_fd);
	/* Still waiting for something not ready: arm the one-shot again. */
	if (head && !(mask & key) && waitqueue_active(&head->wqh))
		host_poll_arm(file, head, key, EPOLL_CTL_MOD);
	return mask;
}

ssize_t null_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return to->count;
}

ssize_t null_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	return from->count;
}

int null_fsync(struct file *file, int datasync)
{
	return 0;
}

} // namespace

namespace uk::aio
{
HostBackend aio_host_backend = HostBackend::kUring;

static const char *const aio_host_backend_names[] = { "uring", "threads" };
module_param_enum(host_backend, aio_host_backend, aio_host_backend_names, 0644);
MODULE_PARM_DESC(host_backend,
		 "O_DIRECT reads and writes of host files: uring (one io_uring, the program's "
		 "queue depth), threads (a work item each on the aio workqueue)");

HostBackend host_backend_active(void)
{
	if (aio_host_backend == HostBackend::kUring && get_host_ring())
		return HostBackend::kUring;
	return HostBackend::kThreads;
}

long host_inflight(void)
{
	return host_inflight_nr.load(std::memory_order_relaxed);
}

} // namespace uk::aio

void aio_host_exit(void)
{
	struct io_uring_sqe *sqe;

	if (host_ring_state.load(std::memory_order_acquire) != kRingUp)
		return;
	std::lock_guard<std::mutex> g(host_ring->sq_lock);
	sqe = io_uring_get_sqe(&host_ring->ring);
	if (!sqe) {
		io_uring_submit(&host_ring->ring);
		sqe = io_uring_get_sqe(&host_ring->ring);
		if (!sqe)
			return;
	}
	/* What waits (pipes, sockets) completes; disk I/O finishes as it is. */
	io_uring_prep_cancel(sqe, nullptr, IORING_ASYNC_CANCEL_ANY);
	io_uring_sqe_set_data(sqe, nullptr);
	io_uring_submit(&host_ring->ring);
}

void aio_wq_fork_child(void)
{
	/* The reaper is not in the child: a ring of its own starts on demand. */
	if (host_ring_state.load(std::memory_order_relaxed) == kRingUp) {
		aio_kernel_fd_clear(host_ring->ring.ring_fd);
		io_uring_queue_exit(&host_ring->ring);
	}
	host_ring = nullptr; /* the parent's, leaked */
	/* Nor is the poll thread: the parent's set and heads are leaked too. */
	if (host_poller *p = host_poller_state.load(std::memory_order_relaxed)) {
		aio_kernel_fd_clear(p->epfd);
		aio_kernel_fd_clear(p->wakefd);
		close(p->epfd);
		close(p->wakefd);
		host_poller_state.store(nullptr, std::memory_order_relaxed);
	}
	host_ring_state.store(kRingUnset, std::memory_order_relaxed);
	host_inflight_nr.store(0, std::memory_order_relaxed);
	new (&host_ring_start) std::mutex();
}

const struct file_operations host_file_operations = {
	.read_iter = host_read_iter,
	.write_iter = host_write_iter,
	.fsync = host_fsync,
	.poll = host_poll,
};

/* A host pipe, socket or character device: no ->fsync, as in the kernel. */
static const struct file_operations host_nofsync_file_operations = {
	.read_iter = host_read_iter,
	.write_iter = host_write_iter,
	.fsync = nullptr,
	.poll = host_poll,
};

static bool is_host_file(struct file *file)
{
	return file->f_op == &host_file_operations || file->f_op == &host_nofsync_file_operations;
}

const struct file_operations aio_null_file_operations = {
	.read_iter = null_read_iter,
	.write_iter = null_write_iter,
	.fsync = null_fsync,
	.poll = nullptr,
};

int aio_register_file(int fd, const struct file_operations *fops, fmode_t mode, void *private_data)
{
	struct file *f, *old = nullptr;

	if (fd < 0 || fd >= kMaxRegisteredFd)
		return -EBADF;
	f = (struct file *)kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->f_op = fops;
	f->f_mode = mode;
	f->f_fd = fd;
	f->private_data = private_data;
	atomic_long_set(&f->f_count, 1);
	if (!__atomic_compare_exchange_n(&registered[fd], &old, f, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED)) {
		kfree(f);
		return -EBUSY;
	}
	return 0;
}

int aio_unregister_file(int fd)
{
	struct file *f;

	if (fd < 0 || fd >= kMaxRegisteredFd)
		return -EBADF;
	f = __atomic_exchange_n(&registered[fd], nullptr, __ATOMIC_ACQ_REL);
	if (!f)
		return -ENOENT;
	/*
	 * An aio_fget() that found the file has taken its reference by the
	 * end of its RCU section; after that, only requests hold it.
	 */
	synchronize_rcu();
	fput(f); /* the registration's reference */
	return 0;
}

struct inode aio_anon_inode = { .i_mode = S_IRUSR | S_IWUSR, .i_sb = nullptr };

struct file *aio_fget(unsigned int fd, struct file *host)
{
	struct file *f;
	int flags;

	if (fd < (unsigned)kMaxRegisteredFd) {
		rcu_read_lock();
		f = rcu_dereference(registered[fd]);
		if (f)
			atomic_long_inc(&f->f_count);
		rcu_read_unlock();
		if (f)
			return f;
	}
	if (fd > INT_MAX || aio_kernel_fd(fd))
		return nullptr;
	flags = fcntl((int)fd, F_GETFL);
	if (flags < 0 || (flags & O_PATH))
		return nullptr;
	host->f_op = &host_file_operations;
	host->f_mode = FMODE_NOWAIT;
	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		host->f_mode |= FMODE_READ;
		break;
	case O_WRONLY:
		host->f_mode |= FMODE_WRITE;
		break;
	case O_RDWR:
		host->f_mode |= FMODE_READ | FMODE_WRITE;
		break;
	}
	host->f_flags = flags;
	host->f_iocb_flags = iocb_flags(host);
	host->f_fd = (int)fd;
	host->f_owned_fd = false;
	atomic_long_set(&host->f_count, 0);
	host->private_data = nullptr;
	return host;
}

void fput(struct file *file)
{
	if (is_host_file(file))
		host_poll_head_put(file);
	if (file->f_owned_fd) {
		aio_kernel_fd_clear(file->f_fd);
		close(file->f_fd);
		file->f_owned_fd = false;
	}
	/* Only registered files count references (host files stay at 0). */
	if (atomic_long_read(&file->f_count) && atomic_long_dec_and_test(&file->f_count)) {
		if (file->f_op->release)
			file->f_op->release(file);
		kfree(file);
	}
}

int aio_file_pin(struct file *file)
{
	int nfd;

	if (!is_host_file(file) || file->f_owned_fd)
		return 0;
	nfd = fcntl(file->f_fd, F_DUPFD_CLOEXEC, 0);
	if (nfd < 0)
		return -errno;
	aio_kernel_fd_set(nfd);
	file->f_fd = nfd;
	file->f_owned_fd = true;
	return 0;
}

int aio_host_fsync_prep(struct file *file)
{
	struct stat st;

	if (file->f_op != &host_file_operations)
		return 0;
	if (fstat(file->f_fd, &st) < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    S_ISCHR(st.st_mode)) {
		file->f_op = &host_nofsync_file_operations;
		return 0;
	}
	return aio_file_pin(file) ? -ENOMEM : 0;
}
