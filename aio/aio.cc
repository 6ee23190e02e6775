// SPDX-License-Identifier: GPL-2.0-only
/*
 * fs/aio.c in user mode: Linux native AIO contexts, the shared completion
 * ring, request submission and completion, io_getevents/io_pgetevents and
 * io_cancel, with the kernel's names, structures and algorithms.
 *
 * What stands in for the kernel here:
 *  - the ring pages: a memfd "arena" mapped once as the kernel alias, where
 *    each ring folio (ctx->ring_folios[i]) is a page of it, and once more
 *    per context as the user mapping whose address is the aio_context_t;
 *  - the process's mm: `current->mm` is the shim's one uk::process_mm
 *    (<uk/linux/mm_types.h>), with ioctx_lock and an RCU-published
 *    ioctx_table (plus the pre-3.11 list and the radix tree of the
 *    rejected 2013 patch, selectable by uk::aio::aio_lookup_mode);
 *  - user memory: copy_{from,to}_user with fault fixup (usercopy.cc);
 *  - struct file: fds registered with aio_register_file() use their ops
 *    table, every other fd the host-fd ops (aio_host.cc);
 *  - sleeping in read_events: a per-thread eventfd, written when the
 *    waiter on ctx->wait is woken (aio_complete's min_nr filter,
 *    kill_ioctx's wake_up_all), waited on with ppoll() so the signal mask
 *    is swapped atomically and signals give -EINTR;
 *  - the system workqueue: aio_wq, an unbound workqueue of the shim (a
 *    worker for each pending item, never a thread per ctx).
 *
 * Upstream: fs/aio.c @ v6.12
 */
#define KBUILD_MODNAME "aio"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mutex>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/atomic.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/cacheflush.h>
#include <uk/linux/compat.h>
#include <uk/linux/completion.h>
#include <uk/linux/cred.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/eventfd.h>
#include <uk/linux/ioprio.h>
#include <uk/linux/kernel.h>
#include <uk/linux/ktime.h>
#include <uk/linux/list.h>
#include <uk/linux/mm.h>
#include <uk/linux/mm_types.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/mutex.h>
#include <uk/linux/nospec.h>
#include <uk/linux/percpu-refcount.h>
#include <uk/linux/percpu.h>
#include <uk/linux/poll.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rculist.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched/signal.h>
#include <uk/linux/refcount.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/syscalls.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

#include "aio_internal.h"
#include "usercopy.h"

#define AIO_RING_MAGIC 0xa10a10a1
#define AIO_RING_COMPAT_FEATURES 1
#define AIO_RING_INCOMPAT_FEATURES 0
#define KIOCB_KEY 0
#define AIO_PLUG_THRESHOLD 2
#define AIO_RING_PAGES 8
#ifndef UIO_FASTIOV
#define UIO_FASTIOV 8
#endif
#ifndef UIO_MAXIOV
#define UIO_MAXIOV 1024
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#endif
#ifndef PAGE_SHIFT
#define PAGE_SHIFT 12
#endif
#ifndef PAGE_MASK
#define PAGE_MASK (~(PAGE_SIZE - 1))
#endif
#ifndef PFN_UP
#define PFN_UP(x) (((x) + PAGE_SIZE - 1) >> PAGE_SHIFT)
#endif
#ifndef MAX_RW_COUNT
#define MAX_RW_COUNT (INT_MAX & PAGE_MASK)
#endif
#ifndef KTIME_MAX
#define KTIME_MAX ((s64) ~((u64)1 << 63))
#endif
#ifndef NSEC_PER_SEC
#define NSEC_PER_SEC 1000000000LL
#endif
/* No sleep-in-atomic debugging state to reset (include/linux/kernel.h). */
#ifndef sched_annotate_sleep
#define sched_annotate_sleep() \
	do {                   \
	} while (0)
#endif

#define RWF_HIPRI 0x00000001
#define RWF_DSYNC 0x00000002
#define RWF_SYNC 0x00000004
#define RWF_NOWAIT 0x00000008
#define RWF_APPEND 0x00000010
#define RWF_NOAPPEND 0x00000020
#define RWF_ATOMIC 0x00000040
#define RWF_SUPPORTED \
	(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND | RWF_ATOMIC)

#define num_possible_cpus() (nr_cpu_ids)

struct aio_ring {
	unsigned id;   /* slot of this ctx in mm->ioctx_table */
	unsigned nr;   /* capacity, in io_event entries */
	unsigned head; /* advanced by userspace, or by the reaper under ring_lock */
	unsigned tail;

	unsigned magic;
	unsigned compat_features;
	unsigned incompat_features;
	unsigned header_length; /* bytes in this header */

	struct io_event io_events[];
}; /* a 32-byte header, then the events */
static_assert(sizeof(struct aio_ring) == 32, "aio_ring header is ABI");

/* The user mapping is contiguous, so event i simply follows the header. */
#define AIO_EVENTS_PER_PAGE (PAGE_SIZE / sizeof(struct io_event))
#define AIO_EVENTS_FIRST_PAGE ((PAGE_SIZE - sizeof(struct aio_ring)) / sizeof(struct io_event))
#define AIO_EVENTS_OFFSET (AIO_EVENTS_PER_PAGE - AIO_EVENTS_FIRST_PAGE)

struct kioctx_table {
	struct rcu_head rcu;
	unsigned nr;
	struct kioctx __rcu *table[];
};

struct kioctx_cpu {
	unsigned reqs_available;
};

struct ctx_rq_wait {
	struct completion comp;
	atomic_t count;
};

/* An io_getevents sleeper on ctx->wait (see read_events()). */
struct aio_waiter {
	struct wait_queue_entry w;
	size_t min_nr; /* wake only once this many events are there */
};

struct kioctx {
	struct percpu_ref users;
	atomic_t dead;

	struct percpu_ref reqs;

	unsigned long user_id;

	struct kioctx_cpu __percpu *cpu;

	/*
	 * Batch size of the percpu reqs_available caches: how many ring slots
	 * travel between one CPU's counter and the shared one per transfer.
	 */
	unsigned req_batch;
	/*
	 * The nr_events argument of io_setup(), kept only so that it can be
	 * charged to, and later refunded from, the system-wide aio_nr quota.
	 *
	 * How many requests may really be in flight is nr_events - 1, a
	 * bigger number; aio_setup_ring() decides it.
	 */
	unsigned max_reqs;

	/* Ring capacity, counted in io_event entries */
	unsigned nr_events;

	unsigned long mmap_base;
	unsigned long mmap_size;

	/* The ring pages, at their places in the kernel alias of ring_area. */
	struct folio **ring_folios;
	long nr_pages;
	struct aio_ring_area ring_area;

	struct rcu_work free_rwork; /* see free_ioctx() */

	/* completed once the last in-flight request has finished */
	struct ctx_rq_wait *rq_wait;

	struct hlist_node list;	 /* mm->ioctx_list (LookupMode::kList) */
	unsigned long rtree_key; /* its key in mm->ioctx_rtree */

	/*
	 * The four groups below each start a cacheline (the kernel's
	 * anonymous ____cacheline_aligned_in_smp structs), so submitters,
	 * cancellers, reapers and completers do not false-share.
	 *
	 * reqs_available is the number of ring slots not yet promised to a
	 * request. Allocating a kiocb first takes one (failing at zero), and
	 * the slot comes back only after the matching io_event has been
	 * reaped; every completion thus finds room and the ring cannot
	 * overflow. Most of the traffic goes through the percpu kioctx_cpu
	 * caches.
	 */
	atomic_t reqs_available ____cacheline_aligned_in_smp;

	spinlock_t ctx_lock ____cacheline_aligned_in_smp;
	struct list_head active_reqs;	/* requests io_cancel/kill can reach */
	unsigned reqs_available_locked; /* ReqsMode::kLocked */

	struct mutex ring_lock ____cacheline_aligned_in_smp;
	wait_queue_head_t wait;

	unsigned tail ____cacheline_aligned_in_smp;
	unsigned completed_events;
	spinlock_t completion_lock;

	struct folio *internal_folios[AIO_RING_PAGES];

	unsigned id;
};

struct fsync_iocb {
	struct file *file;
	struct work_struct work;
	bool datasync;
	struct cred *creds;
};

struct poll_iocb {
	struct file *file;
	struct wait_queue_head *head;
	__poll_t events;
	bool cancelled;
	bool work_scheduled;
	bool work_need_resched;
	struct wait_queue_entry wait;
	struct work_struct work;
};

/*
 * ki_filp overlays the leading member of every variant in the union below:
 * rw, fsync and poll all start with their struct file pointer, so that
 * pointer may be read through whichever variant is handy, or as ki_filp.
 */
struct aio_kiocb {
	union {
		struct file *ki_filp;
		struct kiocb rw;
		struct fsync_iocb fsync;
		struct poll_iocb poll;
	};

	struct kioctx *ki_ctx;
	kiocb_cancel_fn *ki_cancel;

	struct io_event ki_res;

	struct list_head ki_list; /* links the request into ctx->active_reqs */
	refcount_t ki_refcnt;

	/* The eventfd behind aio_resfd, signalled at completion, or NULL. */
	struct eventfd_ctx *ki_eventfd;

	/* Storage for ki_filp when the request targets a host descriptor. */
	struct file ki_hostfile;
};

/* ---- the fs.aio-nr and fs.aio-max-nr sysctls ---- */
static DEFINE_SPINLOCK(aio_nr_lock);
unsigned long aio_nr;		    /* events reserved by all live contexts */
unsigned long aio_max_nr = 0x10000; /* ceiling that aio_nr may not pass */
/* ---- end of the sysctls ---- */

namespace uk::aio
{
LookupMode aio_lookup_mode = LookupMode::kTable;
ReqsMode aio_reqs_mode = ReqsMode::kPercpu;
RefMode aio_ref_mode = RefMode::kPercpu;
SubmitMode aio_submit_mode = SubmitMode::kDirect;

/*
 * The same switches as parameters, "aio.lookup=list" (docs/params.md); the
 * names are in the enums' order.
 */
static const char *const aio_lookup_names[] = { "table", "list", "radix" };
module_param_enum(lookup, aio_lookup_mode, aio_lookup_names, 0644);
MODULE_PARM_DESC(lookup,
		 "lookup_ioctx(): table (3.11+), list (before 3.11), radix (2013 v2 patch)");

static const char *const aio_reqs_names[] = { "percpu", "locked" };
module_param_enum(reqs, aio_reqs_mode, aio_reqs_names, 0644);
MODULE_PARM_DESC(reqs, "Ring-slot accounting: percpu (3.10+), locked (ctx_lock, before 3.10)");

static const char *const aio_ref_names[] = { "percpu", "atomic" };
module_param_enum(ref, aio_ref_mode, aio_ref_names, 0644);
MODULE_PARM_DESC(ref, "kioctx references: percpu (percpu_ref, 3.10+), atomic (before 3.10)");

static const char *const aio_submit_names[] = { "direct", "ctx_lock" };
module_param_enum(submit, aio_submit_mode, aio_submit_names, 0644);
MODULE_PARM_DESC(
	submit,
	"io_submit_one(): direct (3.10+), ctx_lock (the three ctx_lock sections of 3.3-3.9)");

/* The historical races of the explore tests (docs/explore.md). */
bool lookup_get_v416;
module_param_named(lookup_get_v416, lookup_get_v416, bool, 0644);
MODULE_PARM_DESC(lookup_get_v416,
		 "lookup_ioctx() takes its reference with percpu_ref_get(), as 3.11-4.16 did");
bool kill_cancel_v310;
module_param_named(kill_cancel_v310, kill_cancel_v310, bool, 0644);
MODULE_PARM_DESC(kill_cancel_v310,
		 "kill_ioctx() cancels active_reqs before dropping users, as 3.10 did");
void (*free_ioctx_rcu_hook)(struct rcu_work *rwork);
} // namespace uk::aio

using uk::aio::aio_lookup_mode;
using uk::aio::aio_ref_mode;
using uk::aio::aio_reqs_mode;
using uk::aio::aio_submit_mode;
using uk::aio::free_ioctx_rcu_hook;
using uk::aio::kill_cancel_v310;
using uk::aio::lookup_get_v416;
using uk::aio::LookupMode;
using uk::aio::RefMode;
using uk::aio::ReqsMode;
using uk::aio::SubmitMode;

static struct kmem_cache *kiocb_cachep;
static struct kmem_cache *kioctx_cachep;

struct mm_struct *aio_current_mm(void)
{
	return current->mm;
}

static void aio_fork_child(void);
static void aio_exit_mm(void);
static void free_ioctx_users(struct percpu_ref *ref);
static void free_ioctx_reqs(struct percpu_ref *ref);

/*
 * RefMode::kAtomic: the kioctx refs start in atomic mode, as the atomic_t
 * counts of the contexts before 3.10 (percpu_ref_init_hook).
 */
static unsigned int aio_ref_init_flags(percpu_ref_func_t *release, unsigned int flags)
{
	if (aio_ref_mode == RefMode::kAtomic &&
	    (release == free_ioctx_users || release == free_ioctx_reqs))
		flags |= PERCPU_REF_INIT_ATOMIC;
	return flags;
}

/*
 * fs.aio-nr and fs.aio-max-nr: there is no sysctl table to register them in.
 * aio_nr is read by the tests; aio_max_nr starts at least at the host
 * kernel's limit, so a program gets as many events here as there.
 */
static void aio_sysctl_init(void)
{
	unsigned long max = 0;
	FILE *f;

	f = fopen("/proc/sys/fs/aio-max-nr", "r");
	if (f) {
		if (fscanf(f, "%lu", &max) == 1 && max > aio_max_nr)
			aio_max_nr = max;
		fclose(f);
	}
}

static void aio_setup(void)
{
	static std::once_flag once;

	std::call_once(once, [] {
		aio_sysctl_init();
		uk::aio::usercopy_init();
		kiocb_cachep = KMEM_CACHE(aio_kiocb, SLAB_HWCACHE_ALIGN | SLAB_PANIC);
		kioctx_cachep = KMEM_CACHE(kioctx, SLAB_HWCACHE_ALIGN | SLAB_PANIC);
		spin_lock_init(&uk::process_mm.ioctx_lock);
		INIT_HLIST_HEAD(&uk::process_mm.ioctx_list);
		INIT_RADIX_TREE(&uk::process_mm.ioctx_rtree, GFP_ATOMIC);
		percpu_ref_init_hook = aio_ref_init_flags;
		pthread_atfork(nullptr, nullptr, aio_fork_child);
		atexit(aio_exit_mm);
	});
}

/* ------------------------------------------------------------------ */
/* The ring: pages, the user mapping, and finding a moved mapping.     */

/*
 * The ring's pages go back to their arena, which stands for the ring file
 * and its page cache; no page migration can reach the kioctx through it.
 */
static void put_aio_ring_file(struct kioctx *ctx)
{
	aio_ring_area_free(&ctx->ring_area);
}

static void aio_free_ring(struct kioctx *ctx)
{
	int i;

	/* Detach the ring pages from their arena (the kernel's ring file). */
	put_aio_ring_file(ctx);

	for (i = 0; i < ctx->nr_pages; i++) {
		struct folio *folio = ctx->ring_folios[i];

		if (!folio)
			continue;

		pr_debug("pid(%d) [%d] folio->count=%d\n", current->pid, i, folio_ref_count(folio));
		ctx->ring_folios[i] = NULL;
		folio_put(folio);
	}

	if (ctx->ring_folios && ctx->ring_folios != ctx->internal_folios) {
		kfree(ctx->ring_folios);
		ctx->ring_folios = NULL;
	}
}

static int vm_munmap(unsigned long start, size_t len)
{
	return aio_vm_munmap(start, len);
}

/*
 * Is the user mapping at @addr (still) this context's ring? A cookie is
 * written through the kernel alias and read back through @addr. Caller
 * holds ring_lock, which every ring-header writer of ours takes.
 */
static bool aio_ring_mapped_at(struct kioctx *ctx, unsigned long addr)
{
	struct aio_ring *ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
	unsigned cookie = 0x5eed0000u | (ctx->id & 0xffff), seen = 0;
	unsigned saved = READ_ONCE(ring->incompat_features);
	bool same;

	WRITE_ONCE(ring->incompat_features, cookie);
	same = !copy_from_user(&seen, (void *)(addr + offsetof(struct aio_ring, incompat_features)),
			       sizeof(seen)) &&
	       seen == cookie;
	WRITE_ONCE(ring->incompat_features, saved);
	return same;
}

/*
 * The kernel's aio_ring_mremap() runs from mremap(); here a ring that the
 * program moved is adopted when its new address is first used: the id in
 * the header at @ctx_id leads to the ctx, and the cookie check proves that
 * @ctx_id maps the same pages. The old address stops working, as with
 * the kernel.
 */
static bool aio_ring_mremap(struct kioctx *ctx, unsigned long ctx_id)
{
	bool ok = false;

	mutex_lock(&ctx->ring_lock);
	if (!atomic_read(&ctx->dead) && ctx->user_id != ctx_id && aio_ring_mapped_at(ctx, ctx_id)) {
		WRITE_ONCE(ctx->user_id, ctx_id);
		ctx->mmap_base = ctx_id;
		ok = true;
	} else if (ctx->user_id == ctx_id) {
		ok = true;
	}
	mutex_unlock(&ctx->ring_lock);
	return ok;
}

static int aio_setup_ring(struct kioctx *ctx, unsigned int nr_events)
{
	struct aio_ring *ring;
	unsigned long size;
	long nr_pages;
	long i;
	void *user;
	int err;

	/* A full ring leaves one slot unused so that it differs from an empty one. */
	nr_events += 2; /* that slot, plus one spare */

	size = sizeof(struct aio_ring);
	size += sizeof(struct io_event) * nr_events;

	nr_pages = PFN_UP(size);
	if (nr_pages < 0)
		return -EINVAL;

	err = aio_ring_area_alloc(&ctx->ring_area, nr_pages);
	if (err)
		return err;

	nr_events = (PAGE_SIZE * nr_pages - sizeof(struct aio_ring)) / sizeof(struct io_event);

	ctx->ring_folios = ctx->internal_folios;
	if (nr_pages > AIO_RING_PAGES) {
		ctx->ring_folios = kcalloc(nr_pages, sizeof(struct folio *), GFP_KERNEL);
		if (!ctx->ring_folios) {
			put_aio_ring_file(ctx);
			return -ENOMEM;
		}
	}

	/* Page i of the ring is page i of the area's kernel alias. */
	for (i = 0; i < nr_pages; i++)
		ctx->ring_folios[i] = virt_to_folio((char *)ctx->ring_area.kaddr + i * PAGE_SIZE);
	ctx->nr_pages = i;

	ctx->mmap_size = nr_pages * PAGE_SIZE;
	user = aio_ring_area_map_user(&ctx->ring_area);
	if (user == MAP_FAILED) {
		ctx->mmap_size = 0;
		aio_free_ring(ctx);
		return -ENOMEM;
	}
	ctx->mmap_base = (unsigned long)user;

	ctx->user_id = ctx->mmap_base;
	ctx->nr_events = nr_events;		    /* ours: userspace can rewrite ring->nr */
	ctx->reqs_available_locked = nr_events - 1; /* ReqsMode::kLocked */

	ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
	ring->nr = nr_events; /* the value userspace reads */
	ring->id = ~0U;
	ring->head = ring->tail = 0;
	ring->magic = AIO_RING_MAGIC;
	ring->compat_features = AIO_RING_COMPAT_FEATURES;
	ring->incompat_features = AIO_RING_INCOMPAT_FEATURES;
	ring->header_length = sizeof(struct aio_ring);
	flush_dcache_folio(ctx->ring_folios[0]);

	return 0;
}

void kiocb_set_cancel_fn(struct kiocb *iocb, kiocb_cancel_fn *cancel)
{
	struct aio_kiocb *req;
	struct kioctx *ctx;
	unsigned long flags;

	/* Only aio's own read/write requests may be made cancellable. */
	if (!(iocb->ki_flags & IOCB_AIO_RW))
		return;

	req = container_of(iocb, struct aio_kiocb, rw);

	if (WARN_ON_ONCE(!list_empty(&req->ki_list)))
		return;

	ctx = req->ki_ctx;

	spin_lock_irqsave(&ctx->ctx_lock, flags);
	list_add_tail(&req->ki_list, &ctx->active_reqs);
	req->ki_cancel = cancel;
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
}

/* ------------------------------------------------------------------ */
/* Context lifetime.                                                   */

/*
 * Freed after a grace period, since lookup_ioctx() reads table->table[]
 * under RCU alone, and in process context, which aio_free_ring() needs: an
 * rcu_work on the system workqueue.
 */
static void free_ioctx(struct work_struct *work)
{
	struct kioctx *ctx = container_of(to_rcu_work(work), struct kioctx, free_rwork);
	pr_debug("freeing %p\n", ctx);

	aio_free_ring(ctx);
	free_percpu(ctx->cpu);
	percpu_ref_exit(&ctx->reqs);
	percpu_ref_exit(&ctx->users);
	kmem_cache_free(kioctx_cachep, ctx);
}

static void free_ioctx_reqs(struct percpu_ref *ref)
{
	struct kioctx *ctx = container_of(ref, struct kioctx, reqs);

	/* reqs reached zero: no request is in flight any more */
	if (ctx->rq_wait && atomic_dec_and_test(&ctx->rq_wait->count))
		complete(&ctx->rq_wait->comp);

	/* lookup_ioctx() may be looking at table->table[] under RCU still */
	INIT_RCU_WORK(&ctx->free_rwork, free_ioctx);
	/* the explore tests end the grace period themselves */
	if (unlikely(free_ioctx_rcu_hook))
		return free_ioctx_rcu_hook(&ctx->free_rwork);
	queue_rcu_work(system_wq, &ctx->free_rwork);
}

/*
 * kill_cancel_v310: kill_ioctx() cancels what is on active_reqs before it
 * drops the users reference, as 3.10's kill_ctx() did, while an io_submit()
 * that looked the context up earlier may still add requests to it; and
 * free_ioctx_users_v310() only kills ctx->reqs.
 */
static void kill_ioctx_cancel_v310(struct kioctx *ctx)
{
	struct aio_kiocb *req;

	spin_lock_irq(&ctx->ctx_lock);

	while (!list_empty(&ctx->active_reqs)) {
		req = list_first_entry(&ctx->active_reqs, struct aio_kiocb, ki_list);
		req->ki_cancel(&req->rw);
		list_del_init(&req->ki_list);
	}

	spin_unlock_irq(&ctx->ctx_lock);
}

static void free_ioctx_users_v310(struct kioctx *ctx)
{
	percpu_ref_kill(&ctx->reqs);
	percpu_ref_put(&ctx->reqs);
}

/*
 * Runs once ctx->users has reached zero. The ctx is already out of the mm's
 * lookup table by then, so io_submit can no longer add kiocbs to it, which
 * makes this the place to cancel whatever is still on active_reqs.
 */
static void free_ioctx_users(struct percpu_ref *ref)
{
	struct kioctx *ctx = container_of(ref, struct kioctx, users);
	struct aio_kiocb *req;

	if (unlikely(kill_cancel_v310))
		return free_ioctx_users_v310(ctx);

	spin_lock_irq(&ctx->ctx_lock);

	while (!list_empty(&ctx->active_reqs)) {
		req = list_first_entry(&ctx->active_reqs, struct aio_kiocb, ki_list);
		req->ki_cancel(&req->rw);
		list_del_init(&req->ki_list);
	}

	spin_unlock_irq(&ctx->ctx_lock);

	percpu_ref_kill(&ctx->reqs);
	percpu_ref_put(&ctx->reqs);
}

static unsigned long aio_rtree_key(unsigned long user_id)
{
	return user_id >> PAGE_SHIFT;
}

static int ioctx_add_table(struct kioctx *ctx, struct mm_struct *mm)
{
	unsigned i, new_nr;
	struct kioctx_table *table, *old;
	struct aio_ring *ring;
	int err;

	/*
	 * The pre-table lookups. The radix tree takes its nodes under
	 * ioctx_lock from the per-CPU preload: an insert that failed halfway
	 * would leave empty nodes in the tree.
	 */
	ctx->rtree_key = aio_rtree_key(ctx->user_id);
	err = radix_tree_preload(GFP_KERNEL);
	if (err)
		return err;
	spin_lock(&mm->ioctx_lock);
	err = radix_tree_insert(&mm->ioctx_rtree, ctx->rtree_key, ctx);
	if (!err)
		hlist_add_head_rcu(&ctx->list, &mm->ioctx_list);
	spin_unlock(&mm->ioctx_lock);
	radix_tree_preload_end();
	if (err)
		return err;

	spin_lock(&mm->ioctx_lock);
	table = rcu_dereference_raw(mm->ioctx_table);

	while (1) {
		if (table)
			for (i = 0; i < table->nr; i++)
				if (!rcu_access_pointer(table->table[i])) {
					ctx->id = i;
					rcu_assign_pointer(table->table[i], ctx);
					spin_unlock(&mm->ioctx_lock);

					/*
					 * ioctx_alloc() holds ring_lock for
					 * the whole setup, so page migration
					 * cannot swap the ring pages here.
					 */
					ring = (struct aio_ring *)folio_address(
						ctx->ring_folios[0]);
					ring->id = ctx->id;
					return 0;
				}

		new_nr = (table ? table->nr : 1) * 4;
		spin_unlock(&mm->ioctx_lock);

		table = (struct kioctx_table *)kzalloc(
			sizeof(*table) + sizeof(struct kioctx *) * new_nr, GFP_KERNEL);
		if (!table) {
			spin_lock(&mm->ioctx_lock);
			radix_tree_delete(&mm->ioctx_rtree, ctx->rtree_key);
			hlist_del_rcu(&ctx->list);
			spin_unlock(&mm->ioctx_lock);
			return -ENOMEM;
		}

		table->nr = new_nr;

		spin_lock(&mm->ioctx_lock);
		old = rcu_dereference_raw(mm->ioctx_table);

		if (!old) {
			rcu_assign_pointer(mm->ioctx_table, table);
		} else if (table->nr > old->nr) {
			memcpy(table->table, old->table, old->nr * sizeof(struct kioctx *));

			rcu_assign_pointer(mm->ioctx_table, table);
			kfree_rcu(old, rcu);
		} else {
			kfree(table);
			table = old;
		}
	}
}

static void aio_nr_sub(unsigned nr)
{
	spin_lock(&aio_nr_lock);
	if (WARN_ON(aio_nr - nr > aio_nr))
		aio_nr = 0;
	else
		aio_nr -= nr;
	spin_unlock(&aio_nr_lock);
}

/* ioctx_alloc
 *	Build a new kioctx (refs, ring, table slot) for the current mm.
 *	Failure comes back as an ERR_PTR.
 */
static struct kioctx *ioctx_alloc(unsigned nr_events)
{
	struct mm_struct *mm = current->mm;
	struct kioctx *ctx;
	int err = -ENOMEM;

	/*
	 * nr_events is scaled below; the caller's unscaled value is what the
	 * aio_max_nr quota is charged with, so remember it first.
	 */
	unsigned int max_reqs = nr_events;

	/*
	 * Free ring slots are tracked in reqs_available, partly cached in
	 * per-CPU counters, so up to half of them can sit parked on CPUs
	 * other than the submitter's. Doubling nr_events keeps the capacity
	 * userspace asked for reachable anyway. The floor of four per
	 * possible CPU keeps req_batch, the number of slots moved per
	 * transfer between percpu and shared counters, from being 0.
	 */
	nr_events = max(nr_events, num_possible_cpus() * 4);
	nr_events *= 2;

	/* Refuse sizes for which the ring size computation would overflow */
	if (nr_events > (0x10000000U / sizeof(struct io_event))) {
		pr_debug("ENOMEM: nr_events too high\n");
		return (struct kioctx *)ERR_PTR(-EINVAL);
	}

	if (!nr_events || (unsigned long)max_reqs > aio_max_nr)
		return (struct kioctx *)ERR_PTR(-EAGAIN);

	ctx = (struct kioctx *)kmem_cache_zalloc(kioctx_cachep, GFP_KERNEL);
	if (!ctx)
		return (struct kioctx *)ERR_PTR(-ENOMEM);

	ctx->max_reqs = max_reqs;

	spin_lock_init(&ctx->ctx_lock);
	spin_lock_init(&ctx->completion_lock);
	mutex_init(&ctx->ring_lock);
	/* ring_lock stays held until setup is finished, so that page
	 * migration never sees a half-built kioctx. */
	mutex_lock(&ctx->ring_lock);
	init_waitqueue_head(&ctx->wait);

	INIT_LIST_HEAD(&ctx->active_reqs);

	if (percpu_ref_init(&ctx->users, free_ioctx_users, 0, GFP_KERNEL))
		goto err;

	if (percpu_ref_init(&ctx->reqs, free_ioctx_reqs, 0, GFP_KERNEL))
		goto err;

	ctx->cpu = alloc_percpu(struct kioctx_cpu);
	if (!ctx->cpu)
		goto err;

	err = aio_setup_ring(ctx, nr_events);
	if (err < 0)
		goto err;

	atomic_set(&ctx->reqs_available, ctx->nr_events - 1);
	ctx->req_batch = (ctx->nr_events - 1) / (num_possible_cpus() * 4);
	if (ctx->req_batch < 1)
		ctx->req_batch = 1;

	/* charge max_reqs to aio_nr; fail if that passes aio_max_nr */
	spin_lock(&aio_nr_lock);
	if (aio_nr + ctx->max_reqs > aio_max_nr || aio_nr + ctx->max_reqs < aio_nr) {
		spin_unlock(&aio_nr_lock);
		err = -EAGAIN;
		goto err_ctx;
	}
	aio_nr += ctx->max_reqs;
	spin_unlock(&aio_nr_lock);

	percpu_ref_get(&ctx->users); /* put by io_setup() when done */
	percpu_ref_get(&ctx->reqs);  /* put by free_ioctx_users() */

	err = ioctx_add_table(ctx, mm);
	if (err)
		goto err_cleanup;

	/* Setup done: page migration may touch the ring again. */
	mutex_unlock(&ctx->ring_lock);

	pr_debug("allocated ioctx %p[%ld]: mm=%p mask=0x%x\n", ctx, ctx->user_id, mm,
		 ctx->nr_events);
	return ctx;

err_cleanup:
	aio_nr_sub(ctx->max_reqs);
err_ctx:
	atomic_set(&ctx->dead, 1);
	if (ctx->mmap_size)
		vm_munmap(ctx->mmap_base, ctx->mmap_size);
	aio_free_ring(ctx);
err:
	mutex_unlock(&ctx->ring_lock);
	free_percpu(ctx->cpu);
	percpu_ref_exit(&ctx->reqs);
	percpu_ref_exit(&ctx->users);
	kmem_cache_free(kioctx_cachep, ctx);
	pr_debug("error allocating ioctx %d\n", err);
	return (struct kioctx *)ERR_PTR(err);
}

/* kill_ioctx
 *	Mark the context dead, take it out of the lookup structures and
 *	kill ctx->users, which gets every outstanding request cancelled.
 *	Besides io_destroy, exit_aio uses it once the owning process is
 *	gone, so that the kioctx is torn down without delay. Returns
 *	-EINVAL if the context was already dead.
 */
static int kill_ioctx(struct mm_struct *mm, struct kioctx *ctx, struct ctx_rq_wait *wait)
{
	struct kioctx_table *table;

	spin_lock(&mm->ioctx_lock);
	if (atomic_xchg(&ctx->dead, 1)) {
		spin_unlock(&mm->ioctx_lock);
		return -EINVAL;
	}

	table = rcu_dereference_raw(mm->ioctx_table);
	WARN_ON(ctx != rcu_access_pointer(table->table[ctx->id]));
	RCU_INIT_POINTER(table->table[ctx->id], NULL);
	hlist_del_rcu(&ctx->list);
	radix_tree_delete(&mm->ioctx_rtree, ctx->rtree_key);
	spin_unlock(&mm->ioctx_lock);

	/*
	 * No synchronize_rcu() here: free_ioctx_reqs() defers the free past
	 * a grace period.
	 */
	wake_up_all(&ctx->wait);

	/*
	 * Refund the quota now rather than in free_ioctx(). Waiting for the
	 * last kiocb would be more exact, but io_destroy returns before that
	 * point, and an io_setup() issued right after could then get -EAGAIN
	 * although, as far as userspace can see, no context is left.
	 */
	aio_nr_sub(ctx->max_reqs);

	if (ctx->mmap_size) {
		/* Unmap only what is still ours (the program may have moved it). */
		mutex_lock(&ctx->ring_lock);
		if (aio_ring_mapped_at(ctx, ctx->mmap_base))
			vm_munmap(ctx->mmap_base, ctx->mmap_size);
		mutex_unlock(&ctx->ring_lock);
	}

	ctx->rq_wait = wait;
	if (unlikely(kill_cancel_v310))
		kill_ioctx_cancel_v310(ctx);
	percpu_ref_kill(&ctx->users);
	return 0;
}

/*
 * exit_aio: the mm has lost its final user, so nothing can submit to its
 * contexts or call any io_* syscall on them any more.
 *
 * Requests may still be in flight; the wait at the end (completed through
 * free_ioctx_reqs()) covers them before the table goes away.
 */
void exit_aio(struct mm_struct *mm)
{
	struct kioctx_table *table = rcu_dereference_raw(mm->ioctx_table);
	struct ctx_rq_wait wait;
	int i, skipped;

	if (!table)
		return;

	atomic_set(&wait.count, table->nr);
	init_completion(&wait.comp);

	skipped = 0;
	for (i = 0; i < (int)table->nr; ++i) {
		struct kioctx *ctx = rcu_dereference_protected(table->table[i], true);

		if (!ctx) {
			skipped++;
			continue;
		}

		/*
		 * No munmap(): exit_mmap() will drop every mapping of this mm
		 * shortly, and the mm being torn down need not be the caller's
		 * own, so unmapping from here would be wrong anyway. kill_ioctx()
		 * unmaps only when ->mmap_size is non-zero; clearing it skips that.
		 */
		ctx->mmap_size = 0;
		if (kill_ioctx(mm, ctx, &wait))
			skipped++; /* already being destroyed by io_destroy */
	}

	if (!atomic_sub_and_test(skipped, &wait.count)) {
		/* Sleep until every killed context has drained its requests. */
		wait_for_completion(&wait.comp);
	}

	RCU_INIT_POINTER(mm->ioctx_table, NULL);
	kfree_rcu(table, rcu);
}

/*
 * do_exit() -> exit_mm() -> mmput(): the process's contexts die with it,
 * after their in-flight requests (cancelled where they can be) complete.
 * Runs from exit() (atexit), while the other threads still run: a later
 * io_submit() from one of them finds no context (-EINVAL). _exit() and a
 * fatal signal skip it, as nothing can run then.
 */
static void aio_exit_mm(void)
{
	aio_host_exit();
	exit_aio(&uk::process_mm);
}

/* ------------------------------------------------------------------ */
/* Ring-slot accounting.                                               */

/*
 * ReqsMode::kLocked, the accounting before 3.10: one counter of free ring
 * slots, under the context's lock.
 */
static void put_reqs_available_v39(struct kioctx *ctx, unsigned nr)
{
	unsigned long flags;

	spin_lock_irqsave(&ctx->ctx_lock, flags);
	ctx->reqs_available_locked += nr;
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
}

static bool __get_reqs_available_v39(struct kioctx *ctx)
{
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&ctx->ctx_lock, flags);
	if (ctx->reqs_available_locked) {
		ctx->reqs_available_locked--;
		ret = true;
	}
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
	return ret;
}

#define aio_reqs_v39 (aio_reqs_mode == ReqsMode::kLocked)

static void put_reqs_available(struct kioctx *ctx, unsigned nr)
{
	struct kioctx_cpu *kcpu;
	unsigned long flags;

	if (unlikely(aio_reqs_v39))
		return put_reqs_available_v39(ctx, nr);

	local_irq_save(flags);
	kcpu = this_cpu_ptr(ctx->cpu);
	kcpu->reqs_available += nr;

	while (kcpu->reqs_available >= ctx->req_batch * 2) {
		kcpu->reqs_available -= ctx->req_batch;
		atomic_add(ctx->req_batch, &ctx->reqs_available);
	}

	local_irq_restore(flags);
}

static bool __get_reqs_available(struct kioctx *ctx)
{
	struct kioctx_cpu *kcpu;
	bool ret = false;
	unsigned long flags;

	if (unlikely(aio_reqs_v39))
		return __get_reqs_available_v39(ctx);

	local_irq_save(flags);
	kcpu = this_cpu_ptr(ctx->cpu);
	if (!kcpu->reqs_available) {
		int avail = atomic_read(&ctx->reqs_available);

		do {
			if (avail < (int)ctx->req_batch)
				goto out;
		} while (!atomic_try_cmpxchg(&ctx->reqs_available, &avail, avail - ctx->req_batch));

		kcpu->reqs_available += ctx->req_batch;
	}

	ret = true;
	kcpu->reqs_available--;
out:
	local_irq_restore(flags);
	return ret;
}

/* refill_reqs_available
 *	Return to reqs_available the slots of completed events that have
 *	since left the ring (completed_events minus what still lies between
 *	head and tail). aio_complete() calls it opportunistically, and the
 *	submit path calls it when aio_get_req() finds no free slot. Caller
 *	holds ctx->completion_lock.
 */
static void refill_reqs_available(struct kioctx *ctx, unsigned head, unsigned tail)
{
	unsigned events_in_ring, completed;

	/* head is user-writable: bring it into range before using it. */
	head %= ctx->nr_events;
	if (head <= tail)
		events_in_ring = tail - head;
	else
		events_in_ring = ctx->nr_events - (head - tail);

	completed = ctx->completed_events;
	if (events_in_ring < completed)
		completed -= events_in_ring;
	else
		completed = 0;

	if (!completed)
		return;

	ctx->completed_events -= completed;
	put_reqs_available(ctx, completed);
}

/* user_refill_reqs_available
 *	Slow path of get_reqs_available(): no slot is left in the percpu or
 *	shared counters, so reclaim those of events already reaped.
 */
static void user_refill_reqs_available(struct kioctx *ctx)
{
	spin_lock_irq(&ctx->completion_lock);
	if (ctx->completed_events) {
		struct aio_ring *ring;
		unsigned head;

		/* ring->head is read without ring_lock, so a concurrent
		 * aio_read_events_ring() may be moving it; its old and new
		 * values are both usable. What matters is that tail is frozen
		 * while completion_lock is held (aio_complete() needs it), so
		 * head cannot overtake tail. A garbage head does no harm
		 * either: refill_reqs_available() never gives back more than
		 * ctx->completed_events.
		 */
		ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
		head = READ_ONCE(ring->head);
		/* Stands for the order aio_read_events_ring() gives the
		 * events it copied out before its store of ring->head. */
		uk_tsan_acquire(&ring->head);

		refill_reqs_available(ctx, head, ctx->tail);
	}

	spin_unlock_irq(&ctx->completion_lock);
}

static bool get_reqs_available(struct kioctx *ctx)
{
	if (__get_reqs_available(ctx))
		return true;
	user_refill_reqs_available(ctx);
	return __get_reqs_available(ctx);
}

/* aio_get_req
 *	Allocate a kiocb and reserve a ring slot for it; NULL when either
 *	the allocation fails or the ring has no free slot.
 *
 *	ki_refcnt starts at 2: the submit path drops one reference when it
 *	is done with the request, the completion drops the other.
 */
static inline struct aio_kiocb *aio_get_req(struct kioctx *ctx)
{
	struct aio_kiocb *req;

	req = (struct aio_kiocb *)kmem_cache_alloc(kiocb_cachep, GFP_KERNEL);
	if (unlikely(!req))
		return NULL;

	if (unlikely(!get_reqs_available(ctx))) {
		kmem_cache_free(kiocb_cachep, req);
		return NULL;
	}

	percpu_ref_get(&ctx->reqs);
	req->ki_ctx = ctx;
	INIT_LIST_HEAD(&req->ki_list);
	refcount_set(&req->ki_refcnt, 2);
	req->ki_eventfd = NULL;
	return req;
}

/*
 * The lookups that aio_lookup_mode selects instead of the table: the
 * per-mm list that v3.10 walked, and the radix tree of the 2013 patch.
 */
static struct kioctx *lookup_ioctx_v310(unsigned long ctx_id)
{
	struct mm_struct *mm = current->mm;
	struct kioctx *ctx, *ret = NULL;

	rcu_read_lock();
	if (aio_lookup_mode == LookupMode::kList) {
		hlist_for_each_entry_rcu (ctx, &mm->ioctx_list, list) {
			if (READ_ONCE(ctx->user_id) == ctx_id) {
				if (percpu_ref_tryget_live(&ctx->users))
					ret = ctx;
				break;
			}
		}
	} else {
		ctx = (struct kioctx *)radix_tree_lookup(&mm->ioctx_rtree, aio_rtree_key(ctx_id));
		if (ctx && READ_ONCE(ctx->user_id) == ctx_id && percpu_ref_tryget_live(&ctx->users))
			ret = ctx;
	}
	rcu_read_unlock();
	return ret;
}

#define aio_lookup_v310 (aio_lookup_mode != LookupMode::kTable)

/*
 * lookup_get_v416: the table lookup of 3.11-4.16, whose percpu_ref_get()
 * brings a users count that kill_ioctx() took to 0 back to 1 (fixed by
 * baf10564fbb6, "aio: fix io_destroy(2) vs. lookup_ioctx() race").
 */
static struct kioctx *lookup_ioctx_v416(unsigned long ctx_id)
{
	struct aio_ring __user *ring = (struct aio_ring __user *)ctx_id;
	struct mm_struct *mm = current->mm;
	struct kioctx *ctx, *ret = NULL;
	struct kioctx_table *table;
	unsigned id;

	if (get_user(id, &ring->id))
		return NULL;

	rcu_read_lock();
	table = rcu_dereference(mm->ioctx_table);

	if (!table || id >= table->nr)
		goto out;

	id = array_index_nospec(id, table->nr);
	ctx = rcu_dereference(table->table[id]);
	if (ctx && READ_ONCE(ctx->user_id) == ctx_id) {
		percpu_ref_get(&ctx->users);
		ret = ctx;
	}
out:
	rcu_read_unlock();
	return ret;
}

static struct kioctx *lookup_ioctx(unsigned long ctx_id)
{
	struct aio_ring __user *ring = (struct aio_ring __user *)ctx_id;
	struct mm_struct *mm = current->mm;
	struct kioctx *ctx, *ret = NULL;
	struct kioctx_table *table;
	unsigned id;

	if (unlikely(aio_lookup_v310))
		return lookup_ioctx_v310(ctx_id);
	if (unlikely(lookup_get_v416))
		return lookup_ioctx_v416(ctx_id);

	if (get_user(id, &ring->id))
		return NULL;

	rcu_read_lock();
	table = rcu_dereference(mm->ioctx_table);

	if (!table || id >= table->nr)
		goto out;

	id = array_index_nospec(id, table->nr);
	ctx = rcu_dereference(table->table[id]);
	if (ctx && READ_ONCE(ctx->user_id) == ctx_id) {
		if (percpu_ref_tryget_live(&ctx->users))
			ret = ctx;
	} else if (ctx && percpu_ref_tryget_live(&ctx->users)) {
		/* Perhaps the program moved the ring: aio_ring_mremap() decides. */
		ret = ctx;
		goto moved;
	}
out:
	rcu_read_unlock();
	return ret;
moved:
	rcu_read_unlock();
	if (!aio_ring_mremap(ret, ctx_id)) {
		percpu_ref_put(&ret->users);
		ret = NULL;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Completion.                                                         */

static inline void iocb_destroy(struct aio_kiocb *iocb)
{
	if (iocb->ki_eventfd)
		eventfd_ctx_put(iocb->ki_eventfd);
	if (iocb->ki_filp)
		fput(iocb->ki_filp);
	percpu_ref_put(&iocb->ki_ctx->reqs);
	kmem_cache_free(kiocb_cachep, iocb);
}

/* aio_complete
 *	Post the io_event of a finished request to the ring, then notify
 *	its eventfd and the waiters in io_getevents.
 */
static void aio_complete(struct aio_kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;
	struct aio_ring *ring;
	struct io_event *ev_page, *event;
	unsigned tail, pos, head, avail;
	unsigned long flags;

	/*
	 * completion_lock serialises every writer of the tail: completions
	 * may come from interrupt context (hence irqsave), and no two of
	 * them may claim the same slot.
	 */
	spin_lock_irqsave(&ctx->completion_lock, flags);

	tail = ctx->tail;
	pos = tail + AIO_EVENTS_OFFSET;

	if (++tail >= ctx->nr_events)
		tail = 0;

	ev_page = (struct io_event *)folio_address(ctx->ring_folios[pos / AIO_EVENTS_PER_PAGE]);
	event = ev_page + pos % AIO_EVENTS_PER_PAGE;

	*event = iocb->ki_res;

	flush_dcache_folio(ctx->ring_folios[pos / AIO_EVENTS_PER_PAGE]);

	pr_debug("%p[%u]: %p: %p %Lx %Lx %Lx\n", ctx, tail, iocb,
		 (void __user *)(unsigned long)iocb->ki_res.obj,
		 (unsigned long long)iocb->ki_res.data, (unsigned long long)iocb->ki_res.res,
		 (unsigned long long)iocb->ki_res.res2);

	/*
	 * The event must be visible before tail: pairs with the smp_rmb()
	 * after the load of ring->tail in aio_read_events_ring(), and with
	 * the acquire load of it in user-space reapers.
	 */
	smp_wmb();

	ctx->tail = tail;

	ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
	head = READ_ONCE(ring->head);
	uk_tsan_acquire(&ring->head); /* as in user_refill_reqs_available() */
	uk_tsan_release(&ring->tail); /* the smp_wmb() above */
	WRITE_ONCE(ring->tail, tail);
	flush_dcache_folio(ctx->ring_folios[0]);

	ctx->completed_events++;
	if (ctx->completed_events > 1)
		refill_reqs_available(ctx, head, tail);

	avail = tail > head ? tail - head : tail + ctx->nr_events - head;
	spin_unlock_irqrestore(&ctx->completion_lock, flags);

	pr_debug("added to ring %p at [%u]\n", iocb, tail);

	/*
	 * IOCB_FLAG_RESFD: also notify the eventfd attached to the request.
	 * Signalling an eventfd is allowed from interrupt context as well.
	 */
	if (iocb->ki_eventfd)
		eventfd_signal(iocb->ki_eventfd);

	/*
	 * Full barrier between publishing ring->tail above and the lockless
	 * check of ctx->wait below: store first, then look for waiters
	 * without the lock, the same pattern as wake_up_bit(). Pairs with
	 * the full barrier of set_current_state() in the
	 * prepare_to_wait_event() of read_events(), after it queues its
	 * waiter and before it reads the ring.
	 */
	smp_mb();

	if (waitqueue_active(&ctx->wait)) {
		struct aio_waiter *curr, *next;
		unsigned long flags;

		spin_lock_irqsave(&ctx->wait.lock, flags);
		list_for_each_entry_safe (curr, next, &ctx->wait.head, w.entry)
			if (avail >= READ_ONCE(curr->min_nr)) {
				wake_up_process(
					static_cast<struct task_struct *>(curr->w.private_));
				list_del_init_careful(&curr->w.entry);
			}
		spin_unlock_irqrestore(&ctx->wait.lock, flags);
	}
}

static inline void iocb_put(struct aio_kiocb *iocb)
{
	if (refcount_dec_and_test(&iocb->ki_refcnt)) {
		aio_complete(iocb);
		iocb_destroy(iocb);
	}
}

/* ------------------------------------------------------------------ */
/* Reaping.                                                            */

/* aio_read_events_ring
 *	Copy up to nr completed events from the ring to @event and move
 *	ring->head past them. Returns how many were copied, or -EFAULT.
 */
static long aio_read_events_ring(struct kioctx *ctx, struct io_event __user *event, long nr)
{
	struct aio_ring *ring;
	unsigned head, tail, pos;
	long ret = 0;
	int copy_ret;

	/*
	 * Taking ring_lock may sleep inside read_events()' wait loop; that
	 * is expected there, and the loop simply goes round once more.
	 */
	sched_annotate_sleep();
	mutex_lock(&ctx->ring_lock);

	/* Holding ring_lock keeps the ring pages and head stable here. */
	ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
	head = READ_ONCE(ring->head);
	tail = READ_ONCE(ring->tail);

	/*
	 * The events up to tail are read only after tail: pairs with the
	 * smp_wmb() in aio_complete().
	 */
	smp_rmb();
	uk_tsan_acquire(&ring->tail);

	pr_debug("h%u t%u m%u\n", head, tail, ctx->nr_events);

	if (head == tail)
		goto out;

	head %= ctx->nr_events;
	tail %= ctx->nr_events;

	while (ret < nr) {
		long avail;
		struct io_event *ev;
		struct folio *folio;

		avail = (head <= tail ? tail : ctx->nr_events) - head;
		if (head == tail)
			break;

		pos = head + AIO_EVENTS_OFFSET;
		folio = ctx->ring_folios[pos / AIO_EVENTS_PER_PAGE];
		pos %= AIO_EVENTS_PER_PAGE;

		avail = min(avail, nr - ret);
		avail = min_t(long, avail, AIO_EVENTS_PER_PAGE - pos);

		ev = (struct io_event *)folio_address(folio);
		copy_ret = copy_to_user(event + ret, ev + pos, sizeof(*ev) * avail);

		if (unlikely(copy_ret)) {
			ret = -EFAULT;
			goto out;
		}

		ret += avail;
		head += avail;
		head %= ctx->nr_events;
	}

	ring = (struct aio_ring *)folio_address(ctx->ring_folios[0]);
	/*
	 * Stands for the order between the copies above and this store,
	 * which x86 keeps: a completer that reads the new head may reuse
	 * the slots (uk_tsan_acquire() in aio_complete() and
	 * user_refill_reqs_available()).
	 */
	uk_tsan_release(&ring->head);
	WRITE_ONCE(ring->head, head);
	flush_dcache_folio(ctx->ring_folios[0]);

	pr_debug("%li  h%u t%u\n", ret, head, tail);
out:
	mutex_unlock(&ctx->ring_lock);

	return ret;
}

static bool aio_read_events(struct kioctx *ctx, long min_nr, long nr, struct io_event __user *event,
			    long *i)
{
	long ret = aio_read_events_ring(ctx, event + *i, nr - *i);

	if (ret > 0)
		*i += ret;

	if (unlikely(atomic_read(&ctx->dead)))
		ret = -EINVAL;

	if (!*i)
		*i = ret;

	return ret < 0 || *i >= min_nr;
}

static s64 aio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (s64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * The sleeping thread's eventfd: made once per thread, closed at its exit.
 * It is empty between sleeps (aio_schedule() drains it after
 * uk::host_sleep_end(), past which no waker writes to it), so a host thread
 * that runs one task after another (uk::task_exit_current()) can share it
 * among them.
 */
struct aio_thread_efd {
	int fd = -1;
	~aio_thread_efd()
	{
		if (fd >= 0) {
			aio_kernel_fd_clear(fd);
			close(fd);
		}
	}
};
static thread_local aio_thread_efd aio_sleeper;

static int aio_sleeper_fd(void)
{
	if (unlikely(aio_sleeper.fd < 0)) {
		aio_sleeper.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (aio_sleeper.fd >= 0)
			aio_kernel_fd_set(aio_sleeper.fd);
	}
	return aio_sleeper.fd;
}

/*
 * The schedule() of read_events(): a ppoll() on the thread's eventfd, which
 * try_to_wake_up() writes to while uk::host_sleep_begin() has it named (the
 * wake_up_process() of aio_complete(), the wake_up_all() of kill_ioctx()).
 * ppoll() sleeps under the mask a set_user_sigmask() installed
 * (io_pgetevents), swapped in atomically, until @deadline on
 * CLOCK_MONOTONIC, the hrtimer of the kernel's sleeper; a deadline already
 * passed sets *@timed_out, as the hrtimer's expiry clears t.task. A host
 * signal that ends the sleep is recorded for signal_pending(current), which
 * the next prepare_to_wait_event() finds.
 */
static void aio_schedule(int efd, s64 deadline, const sigset_t *sigmask, bool *timed_out)
{
	struct pollfd pfd = { .fd = efd, .events = POLLIN, .revents = 0 };
	struct timespec ts, *tsp = NULL;
	u64 cnt;
	int r;

	if (deadline != KTIME_MAX) {
		s64 left = deadline - aio_now_ns();

		if (left <= 0) {
			*timed_out = true;
			return;
		}
		ts.tv_sec = left / NSEC_PER_SEC;
		ts.tv_nsec = left % NSEC_PER_SEC;
		tsp = &ts;
	}
	if (!uk::host_sleep_begin(efd))
		return;
	r = ppoll(&pfd, 1, tsp, sigmask);
	if (r < 0 && errno == EINTR)
		uk::host_sleep_interrupted();
	uk::host_sleep_end();
	/* A wake-up may have come after a timeout or a signal ended the sleep. */
	if (read(efd, &cnt, sizeof(cnt)) < 0) {
		/* nothing was written: the eventfd was empty already */
	}
}

/*
 * read_events(): the kernel's loop, sleeping in aio_schedule() instead of an
 * hrtimer sleeper and schedule().
 */
static long read_events(struct kioctx *ctx, long min_nr, long nr, struct io_event __user *event,
			ktime_t until)
{
	struct aio_waiter w;
	long ret = 0, ret2 = 0;
	s64 deadline = KTIME_MAX;
	bool timed_out = false;
	const sigset_t *sigmask;
	sigset_t mask;
	int efd;

	uk::host_signal_delivered();
	aio_read_events(ctx, min_nr, nr, event, &ret);
	if (until == 0 || ret < 0 || ret >= min_nr)
		return ret;

	efd = aio_sleeper_fd();
	if (efd < 0)
		return ret ? ret : -ENOMEM;
	sigmask = uk::host_sleep_sigmask(&mask);
	/*
	 * A relative hrtimer adds the current time with ktime_add_safe(),
	 * which saturates: a negative timeout never expires.
	 */
	if (until != KTIME_MAX)
		deadline = ktime_add_safe(aio_now_ns(), until);

	init_wait(&w.w);

	while (1) {
		unsigned long nr_got = ret;

		/* aio_complete() reads it under ctx->wait.lock, while queued */
		WRITE_ONCE(w.min_nr, min_nr - ret);

		ret2 = prepare_to_wait_event(&ctx->wait, &w.w, TASK_INTERRUPTIBLE);
		if (!ret2 && timed_out)
			ret2 = -ETIME;

		if (aio_read_events(ctx, min_nr, nr, event, &ret) || ret2)
			break;

		if (nr_got == ret)
			aio_schedule(efd, deadline, sigmask, &timed_out);
	}

	finish_wait(&ctx->wait, &w.w);

	return ret;
}

/* ------------------------------------------------------------------ */
/* Submission.                                                         */

static void aio_remove_iocb(struct aio_kiocb *iocb)
{
	struct kioctx *ctx = iocb->ki_ctx;
	unsigned long flags;

	spin_lock_irqsave(&ctx->ctx_lock, flags);
	list_del(&iocb->ki_list);
	spin_unlock_irqrestore(&ctx->ctx_lock, flags);
}

static void aio_complete_rw(struct kiocb *kiocb, long res)
{
	struct aio_kiocb *iocb = container_of(kiocb, struct aio_kiocb, rw);

	if (!list_empty_careful(&iocb->ki_list))
		aio_remove_iocb(iocb);

	if (kiocb->ki_flags & IOCB_WRITE) {
		struct inode *inode = file_inode(kiocb->ki_filp);

		if (S_ISREG(inode->i_mode))
			kiocb_end_write(kiocb);
	}

	iocb->ki_res.res = res;
	iocb->ki_res.res2 = 0;
	iocb_put(iocb);
}

static int ioprio_check_cap(int ioprio)
{
	int cls = IOPRIO_PRIO_CLASS(ioprio);
	int level = IOPRIO_PRIO_LEVEL(ioprio);

	switch (cls) {
	case IOPRIO_CLASS_RT:
		/* CAP_SYS_ADMIN first: it is the one security modules expect */
		if (!capable(CAP_SYS_ADMIN) && !capable(CAP_SYS_NICE))
			return -EPERM;
		fallthrough;
	case IOPRIO_CLASS_BE:
		if (level >= IOPRIO_NR_LEVELS)
			return -EINVAL;
		break;
	case IOPRIO_CLASS_IDLE:
		break;
	case IOPRIO_CLASS_NONE:
		if (level)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static int kiocb_set_rw_flags(struct kiocb *ki, int flags, int rw_type)
{
	ki->ki_rw_flags = 0;
	if (unlikely(!flags))
		return 0;
	if (unlikely(flags & ~RWF_SUPPORTED))
		return -EOPNOTSUPP;
	if (unlikely((flags & RWF_APPEND) && (flags & RWF_NOAPPEND)))
		return -EINVAL;
	if (flags & RWF_NOWAIT) {
		if (!(ki->ki_filp->f_mode & FMODE_NOWAIT))
			return -EOPNOTSUPP;
		ki->ki_flags |= IOCB_NOIO;
	}
	if (flags & RWF_ATOMIC) {
		if (rw_type != WRITE)
			return -EOPNOTSUPP;
		if (!(ki->ki_filp->f_mode & FMODE_CAN_ATOMIC_WRITE))
			return -EOPNOTSUPP;
	}
	if (flags & RWF_HIPRI)
		ki->ki_flags |= IOCB_HIPRI;
	if (flags & RWF_DSYNC)
		ki->ki_flags |= IOCB_DSYNC;
	if (flags & RWF_SYNC)
		ki->ki_flags |= IOCB_SYNC | IOCB_DSYNC;
	if (flags & RWF_APPEND)
		ki->ki_flags |= IOCB_APPEND;
	if (flags & RWF_NOWAIT)
		ki->ki_flags |= IOCB_NOWAIT;
	ki->ki_rw_flags = flags & ~RWF_HIPRI;
	return 0;
}

static int aio_prep_rw(struct kiocb *req, const struct iocb *iocb, int rw_type)
{
	int ret;

	req->ki_complete = aio_complete_rw;
	req->private_ = NULL;
	req->ki_pos = iocb->aio_offset;
	req->ki_flags = req->ki_filp->f_iocb_flags | IOCB_AIO_RW;
	if (iocb->aio_flags & IOCB_FLAG_RESFD)
		req->ki_flags |= IOCB_EVENTFD;
	if (iocb->aio_flags & IOCB_FLAG_IOPRIO) {
		/*
		 * IOCB_FLAG_IOPRIO: aio_reqprio carries this request's I/O
		 * priority (scheduling class and level).
		 */
		ret = ioprio_check_cap(iocb->aio_reqprio);
		if (ret) {
			pr_debug("aio ioprio check cap error: %d\n", ret);
			return ret;
		}

		req->ki_ioprio = iocb->aio_reqprio;
	} else
		req->ki_ioprio = get_current_ioprio();

	ret = kiocb_set_rw_flags(req, iocb->aio_rw_flags, rw_type);
	if (unlikely(ret))
		return ret;

	req->ki_flags &= ~IOCB_HIPRI; /* aio never polls for completions */
	return 0;
}

/*
 * import_ubuf() (lib/iov_iter.c): one user buffer, capped at MAX_RW_COUNT,
 * as the iterator's single segment.
 */
static int import_ubuf(int rw, void __user *buf, size_t len, struct iov_iter *i)
{
	if (len > MAX_RW_COUNT)
		len = MAX_RW_COUNT;
	if (unlikely(!access_ok(buf, len)))
		return -EFAULT;

	iov_iter_ubuf(i, rw, buf, len);
	return 0;
}

/*
 * __import_iovec() (lib/iov_iter.c): copy the user's iovec array into
 * *iovp when it has room for fast_segs, else into a kmalloc'ed array left
 * in *iovp for the caller to kfree() (*iovp is NULL when nothing was
 * allocated). A negative length is -EINVAL; the total is capped at
 * MAX_RW_COUNT, and a segment whose buffer is not accessible, wherever it
 * is in the vector, is -EFAULT. The count is an unsigned int, as the
 * kernel's: aio_nbytes is truncated to it. A 32-bit task's vector is of
 * struct compat_iovec, widened as it is copied (a length above 2 GiB is
 * negative there, as the kernel's compat_ssize_t reads it).
 */
static ssize_t __import_iovec(int type, const struct iovec __user *uvec, unsigned nr_segs,
			      unsigned fast_segs, struct iovec **iovp, struct iov_iter *i,
			      bool compat)
{
	struct iovec *iov = *iovp;
	size_t total = 0;
	unsigned long seg;

	if (nr_segs > UIO_MAXIOV)
		return -EINVAL;
	if (nr_segs > fast_segs) {
		iov = (struct iovec *)kmalloc_array(nr_segs, sizeof(struct iovec), GFP_KERNEL);
		if (!iov)
			return -ENOMEM;
	}
	if (compat) {
		const struct compat_iovec __user *cvec = (const struct compat_iovec __user *)uvec;

		for (seg = 0; seg < nr_segs; seg++) {
			struct compat_iovec c;

			if (copy_from_user(&c, &cvec[seg], sizeof(c))) {
				if (iov != *iovp)
					kfree(iov);
				return -EFAULT;
			}
			iov[seg].iov_base = compat_ptr(c.iov_base);
			iov[seg].iov_len = (size_t)(ssize_t)(s32)c.iov_len;
		}
	} else if (nr_segs && copy_from_user(iov, uvec, nr_segs * sizeof(struct iovec))) {
		if (iov != *iovp)
			kfree(iov);
		return -EFAULT;
	}
	for (seg = 0; seg < nr_segs; seg++) {
		ssize_t len = iov[seg].iov_len;

		if (len < 0) {
			if (iov != *iovp)
				kfree(iov);
			return -EINVAL;
		}
		if (!access_ok(iov[seg].iov_base, len)) {
			if (iov != *iovp)
				kfree(iov);
			return -EFAULT;
		}
		if ((size_t)len > MAX_RW_COUNT - total) {
			len = MAX_RW_COUNT - total;
			iov[seg].iov_len = len;
		}
		total += len;
	}
	iov_iter_init(i, type, iov, nr_segs, total);
	*iovp = iov == *iovp ? NULL : iov;
	return total;
}

static ssize_t aio_setup_rw(int rw, const struct iocb *iocb, struct iovec **iovec, bool vectored,
			    bool compat, struct iov_iter *iter)
{
	void __user *buf = (void __user *)(uintptr_t)iocb->aio_buf;
	size_t len = iocb->aio_nbytes;

	if (!vectored) {
		ssize_t ret = import_ubuf(rw, buf, len, iter);
		*iovec = NULL;
		return ret;
	}

	return __import_iovec(rw, (const struct iovec __user *)buf, len, UIO_FASTIOV, iovec, iter,
			      compat);
}

static int rw_verify_area(int read_write, struct file *file, long long *ppos, size_t count)
{
	long long pos = *ppos;

	if (unlikely((ssize_t)count < 0))
		return -EINVAL;
	if (unlikely(pos < 0))
		return -EINVAL;
	if (unlikely((long long)(pos + count) < 0))
		return -EINVAL;
	return 0;
}

static inline void aio_rw_done(struct kiocb *req, ssize_t ret)
{
	switch (ret) {
	case -EIOCBQUEUED:
		break;
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
	case -ERESTART_RESTARTBLOCK:
		/*
		 * Restarting is not an option: other requests of the same
		 * io_submit may already be running. Report EINTR instead.
		 */
		ret = -EINTR;
		fallthrough;
	default:
		req->ki_complete(req, ret);
	}
}

/*
 * A host descriptor finds out only when it is read or written what the
 * kernel's checks find at submit time: a directory has no ->read_iter, and a
 * file may lack support for RWF bits that kiocb_set_rw_flags() let through.
 * Those become io_submit()'s error; every other result completes the request.
 */
static int aio_host_rw_done(struct kiocb *req, ssize_t ret)
{
	if (req->ki_filp->f_op == &host_file_operations && (ret == -EISDIR || ret == -EOPNOTSUPP))
		return ret == -EISDIR ? -EINVAL : -EOPNOTSUPP;
	aio_rw_done(req, ret);
	return 0;
}

static int aio_read(struct kiocb *req, const struct iocb *iocb, bool vectored, bool compat)
{
	struct iovec inline_vecs[UIO_FASTIOV], *iovec = inline_vecs;
	struct iov_iter iter;
	struct file *file;
	int ret;

	ret = aio_prep_rw(req, iocb, READ);
	if (ret)
		return ret;
	file = req->ki_filp;
	if (unlikely(!(file->f_mode & FMODE_READ)))
		return -EBADF;
	if (unlikely(!file->f_op->read_iter))
		return -EINVAL;

	ret = aio_setup_rw(ITER_DEST, iocb, &iovec, vectored, compat, &iter);
	if (ret < 0)
		return ret;
	ret = rw_verify_area(READ, file, &req->ki_pos, iov_iter_count(&iter));
	if (!ret)
		ret = aio_host_rw_done(req, file->f_op->read_iter(req, &iter));
	kfree(iovec);
	return ret;
}

static int aio_write(struct kiocb *req, const struct iocb *iocb, bool vectored, bool compat)
{
	struct iovec inline_vecs[UIO_FASTIOV], *iovec = inline_vecs;
	struct iov_iter iter;
	struct file *file;
	int ret;

	ret = aio_prep_rw(req, iocb, WRITE);
	if (ret)
		return ret;
	file = req->ki_filp;

	if (unlikely(!(file->f_mode & FMODE_WRITE)))
		return -EBADF;
	if (unlikely(!file->f_op->write_iter))
		return -EINVAL;

	ret = aio_setup_rw(ITER_SOURCE, iocb, &iovec, vectored, compat, &iter);
	if (ret < 0)
		return ret;
	ret = rw_verify_area(WRITE, file, &req->ki_pos, iov_iter_count(&iter));
	if (!ret) {
		if (S_ISREG(file_inode(file)->i_mode))
			kiocb_start_write(req);
		req->ki_flags |= IOCB_WRITE;
		ret = aio_host_rw_done(req, file->f_op->write_iter(req, &iter));
	}
	kfree(iovec);
	return ret;
}

static void aio_fsync_work(struct work_struct *work)
{
	struct aio_kiocb *iocb = container_of(work, struct aio_kiocb, fsync.work);
	const struct cred *old_cred = override_creds(iocb->fsync.creds);

	iocb->ki_res.res = vfs_fsync(iocb->fsync.file, iocb->fsync.datasync);
	revert_creds(old_cred);
	put_cred(iocb->fsync.creds);
	iocb_put(iocb);
}

static int aio_fsync(struct fsync_iocb *req, const struct iocb *iocb, bool datasync)
{
	if (unlikely(iocb->aio_buf || iocb->aio_offset || iocb->aio_nbytes || iocb->aio_rw_flags))
		return -EINVAL;

	if (unlikely(!req->file->f_op->fsync))
		return -EINVAL;

	req->creds = prepare_creds();
	if (!req->creds)
		return -ENOMEM;

	req->datasync = datasync;
	INIT_WORK(&req->work, aio_fsync_work);
	schedule_work(&req->work);
	return 0;
}

/* ---- POLL ---- */

static void aio_poll_put_work(struct work_struct *work)
{
	struct poll_iocb *req = container_of(work, struct poll_iocb, work);
	struct aio_kiocb *iocb = container_of(req, struct aio_kiocb, poll);

	iocb_put(iocb);
}

/*
 * Lock the wait queue the request sits on, if it still sits on one. A
 * ->poll() provider may free its queue early (wake_up_pollfree()), but
 * only after an RCU grace period: under rcu_read_lock() a non-NULL
 * req->head stays valid memory long enough to lock it and look whether
 * the entry is still queued.
 *
 * True: req->head->lock is held, req->wait is queued on it, and the RCU
 * read lock is held until poll_iocb_unlock_wq(). The RCU read lock covers
 * the case where the caller dequeues the last entry: from then on nothing
 * but RCU keeps the queue from being freed under the held lock.
 */
static bool poll_iocb_lock_wq(struct poll_iocb *req)
{
	wait_queue_head_t *head;

	rcu_read_lock();
	/* Pairs with the smp_store_release() of POLLFREE in aio_poll_wake(). */
	head = smp_load_acquire(&req->head);
	if (head) {
		spin_lock(&head->lock);
		if (!list_empty(&req->wait.entry))
			return true;
		spin_unlock(&head->lock);
	}
	rcu_read_unlock();
	return false;
}

static void poll_iocb_unlock_wq(struct poll_iocb *req)
{
	spin_unlock(&req->head->lock);
	rcu_read_unlock();
}

static void aio_poll_complete_work(struct work_struct *work)
{
	struct poll_iocb *req = container_of(work, struct poll_iocb, work);
	struct aio_kiocb *iocb = container_of(req, struct aio_kiocb, poll);
	struct poll_table_struct pt = { ._key = req->events };
	struct kioctx *ctx = iocb->ki_ctx;
	__poll_t mask = 0;

	if (!READ_ONCE(req->cancelled))
		mask = vfs_poll(req->file, &pt) & req->events;

	/*
	 * A ->ki_cancel caller takes the request off active_reqs right after
	 * the call, under ctx_lock; taking ctx_lock here orders us with it.
	 * For a cancelled request the unlink below repeats theirs, which costs
	 * less than a branch on the common path.
	 */
	spin_lock_irq(&ctx->ctx_lock);
	if (poll_iocb_lock_wq(req)) {
		if (!mask && !READ_ONCE(req->cancelled)) {
			/*
			 * Woken, but the events are not there (any more): wait
			 * again, or run once more if another wake-up came in
			 * while this work ran.
			 */
			if (req->work_need_resched) {
				schedule_work(&req->work);
				req->work_need_resched = false;
			} else {
				req->work_scheduled = false;
			}
			poll_iocb_unlock_wq(req);
			spin_unlock_irq(&ctx->ctx_lock);
			return;
		}
		list_del_init(&req->wait.entry);
		poll_iocb_unlock_wq(req);
	} /* else the queue went away with POLLFREE: complete now */
	list_del_init(&iocb->ki_list);
	iocb->ki_res.res = mangle_poll(mask);
	spin_unlock_irq(&ctx->ctx_lock);

	iocb_put(iocb);
}

/* Called with interrupts off (under ctx_lock). */
static int aio_poll_cancel(struct kiocb *iocb)
{
	struct aio_kiocb *aiocb = container_of(iocb, struct aio_kiocb, rw);
	struct poll_iocb *req = &aiocb->poll;

	if (poll_iocb_lock_wq(req)) {
		WRITE_ONCE(req->cancelled, true);
		if (!req->work_scheduled) {
			schedule_work(&aiocb->poll.work);
			req->work_scheduled = true;
		}
		poll_iocb_unlock_wq(req);
	} /* else POLLFREE cancelled it already */

	return 0;
}

static int aio_poll_wake(struct wait_queue_entry *wait, unsigned mode, int sync, void *key)
{
	struct poll_iocb *req = container_of(wait, struct poll_iocb, wait);
	struct aio_kiocb *iocb = container_of(req, struct aio_kiocb, poll);
	__poll_t mask = key_to_poll(key);
	unsigned long flags;

	/* A wake-up that names its events and none of ours: not for us. */
	if (mask && !(mask & req->events))
		return 0;

	/*
	 * Completing here, in the waker's context, needs the events (a wake-up
	 * without a key must go through vfs_poll() in the work), no work
	 * already scheduled, and ctx_lock free at once: the queue's lock is
	 * held, the reverse of the usual order, so only a trylock is allowed,
	 * and with irqsave since not every waker has interrupts off.
	 */
	if (mask && !req->work_scheduled && spin_trylock_irqsave(&iocb->ki_ctx->ctx_lock, flags)) {
		struct kioctx *ctx = iocb->ki_ctx;

		list_del_init(&req->wait.entry);
		list_del(&iocb->ki_list);
		iocb->ki_res.res = mangle_poll(mask);
		/*
		 * Signalling the request's eventfd under a provider's queue
		 * lock can come back through epoll to the same lock: leave the
		 * put, and the eventfd_signal() in it, to a work item.
		 */
		if (iocb->ki_eventfd) {
			iocb = NULL;
			INIT_WORK(&req->work, aio_poll_put_work);
			schedule_work(&req->work);
		}
		spin_unlock_irqrestore(&ctx->ctx_lock, flags);
		if (iocb)
			iocb_put(iocb);
	} else {
		/*
		 * Leave it to the work, and note a wake-up that comes while
		 * the work is pending or running. The entry stays queued:
		 * only vfs_poll() can tell whether the request is done, and a
		 * later wake-up must still find it. POLLFREE is the exception.
		 */
		if (req->work_scheduled) {
			req->work_need_resched = true;
		} else {
			schedule_work(&req->work);
			req->work_scheduled = true;
		}

		/*
		 * The queue is being freed and the request could not be
		 * completed here: take it off the queue, mark it cancelled so
		 * the work skips ->poll(), and cut every later path to the
		 * queue through req->head.
		 */
		if (mask & POLLFREE) {
			WRITE_ONCE(req->cancelled, true);
			list_del_init(&req->wait.entry);

			/*
			 * Last: with req->head NULL the work no longer takes
			 * the queue's lock, and may complete and free the
			 * request at once. Pairs with the smp_load_acquire()
			 * in poll_iocb_lock_wq().
			 */
			smp_store_release(&req->head, NULL);
		}
	}
	return 1;
}

struct aio_poll_table {
	struct poll_table_struct pt;
	struct aio_kiocb *iocb;
	bool queued;
	int error;
};

static void aio_poll_queue_proc(struct file *file, struct wait_queue_head *head,
				struct poll_table_struct *p)
{
	struct aio_poll_table *pt = container_of(p, struct aio_poll_table, pt);

	/* one request waits on one queue at most */
	if (unlikely(pt->queued)) {
		pt->error = -EINVAL;
		return;
	}

	pt->queued = true;
	pt->error = 0;
	pt->iocb->poll.head = head;
	add_wait_queue(head, &pt->iocb->poll.wait);
}

static int aio_poll(struct aio_kiocb *aiocb, const struct iocb *iocb)
{
	struct kioctx *ctx = aiocb->ki_ctx;
	struct poll_iocb *req = &aiocb->poll;
	struct aio_poll_table apt;
	bool cancel = false;
	__poll_t mask;

	/* the event mask lives in aio_buf and must fit in 16 bits */
	if ((u16)iocb->aio_buf != iocb->aio_buf)
		return -EINVAL;
	/* offset, length and rw flags mean nothing for poll: must be 0 */
	if (iocb->aio_offset || iocb->aio_nbytes || iocb->aio_rw_flags)
		return -EINVAL;

	INIT_WORK(&req->work, aio_poll_complete_work);
	req->events = demangle_poll(iocb->aio_buf) | EPOLLERR | EPOLLHUP;

	req->head = NULL;
	req->cancelled = false;
	req->work_scheduled = false;
	req->work_need_resched = false;

	apt.pt._qproc = aio_poll_queue_proc;
	apt.pt._key = req->events;
	apt.iocb = aiocb;
	apt.queued = false;
	apt.error = -EINVAL; /* what a file that cannot wait answers */

	/* an empty entry, so that list_empty() tells whether it is queued */
	INIT_LIST_HEAD(&req->wait.entry);
	init_waitqueue_func_entry(&req->wait, aio_poll_wake);

	mask = vfs_poll(req->file, &apt.pt) & req->events;
	spin_lock_irq(&ctx->ctx_lock);
	if (likely(apt.queued)) {
		bool on_queue = poll_iocb_lock_wq(req);

		if (!on_queue || req->work_scheduled) {
			/*
			 * aio_poll_wake() got there first: it completed the
			 * request, or scheduled the work that will.
			 */
			if (apt.error) /* a second queue was offered */
				cancel = true;
			apt.error = 0;
			mask = 0;
		}
		if (mask || apt.error) {
			/* Take it off the queue and complete it here. */
			list_del_init(&req->wait.entry);
		} else if (cancel) {
			/* Cancel it if the work has not completed it yet. */
			WRITE_ONCE(req->cancelled, true);
		} else if (on_queue) {
			/* Waiting: on active_reqs, where io_cancel finds it. */
			list_add_tail(&aiocb->ki_list, &ctx->active_reqs);
			aiocb->ki_cancel = aio_poll_cancel;
		}
		if (on_queue)
			poll_iocb_unlock_wq(req);
	}
	if (mask) { /* ready already: completed here, not by a wake-up */
		aiocb->ki_res.res = mangle_poll(mask);
		apt.error = 0;
	}
	spin_unlock_irq(&ctx->ctx_lock);
	if (mask)
		iocb_put(aiocb);
	return apt.error;
}

static __always_inline int __io_submit_one(struct kioctx *ctx, const struct iocb *iocb,
					   struct iocb __user *user_iocb, struct aio_kiocb *req,
					   bool compat)
{
	req->ki_filp = aio_fget(iocb->aio_fildes, &req->ki_hostfile);
	if (unlikely(!req->ki_filp))
		return -EBADF;

	if (iocb->aio_flags & IOCB_FLAG_RESFD) {
		struct eventfd_ctx *eventfd;
		/*
		 * IOCB_FLAG_RESFD: take a reference on the descriptor in
		 * aio_resfd right away. It has to be an eventfd; completing
		 * the request signals it (eventfd_signal()) once.
		 */
		eventfd = eventfd_ctx_fdget(iocb->aio_resfd);
		if (IS_ERR(eventfd))
			return PTR_ERR(eventfd);

		req->ki_eventfd = eventfd;
	}

	if (unlikely(put_user(KIOCB_KEY, &user_iocb->aio_key))) {
		pr_debug("EFAULT: aio_key\n");
		return -EFAULT;
	}

	req->ki_res.obj = (u64)(unsigned long)user_iocb;
	req->ki_res.data = iocb->aio_data;
	req->ki_res.res = 0;
	req->ki_res.res2 = 0;

	if (iocb->aio_lio_opcode == IOCB_CMD_FSYNC || iocb->aio_lio_opcode == IOCB_CMD_FDSYNC) {
		int ret = aio_host_fsync_prep(req->ki_filp);

		if (ret)
			return ret;
	}

	switch (iocb->aio_lio_opcode) {
	case IOCB_CMD_PREAD:
		return aio_read(&req->rw, iocb, false, compat);
	case IOCB_CMD_PWRITE:
		return aio_write(&req->rw, iocb, false, compat);
	case IOCB_CMD_PREADV:
		return aio_read(&req->rw, iocb, true, compat);
	case IOCB_CMD_PWRITEV:
		return aio_write(&req->rw, iocb, true, compat);
	case IOCB_CMD_FSYNC:
		return aio_fsync(&req->fsync, iocb, false);
	case IOCB_CMD_FDSYNC:
		return aio_fsync(&req->fsync, iocb, true);
	case IOCB_CMD_POLL:
		return aio_poll(req, iocb);
	default:
		pr_debug("invalid aio operation %d\n", iocb->aio_lio_opcode);
		return -EINVAL;
	}
}

/*
 * SubmitMode::kCtxLock: the ctx_lock sections that the retry-based
 * io_submit_one() of 3.3-3.9 put around every iocb. Four submitters on one
 * context queued on this lock: the "ioctx lock contention" that the 3.10
 * series removed. Out of line, and __io_submit_one() always inlined, so
 * that today's io_submit_one() keeps the shape it has in the kernel.
 */
static noinline int aio_ctx_lock_before_op(struct kioctx *ctx, struct aio_kiocb *req)
{
	/* A context that io_destroy() has marked gets no new work: -EINVAL. */
	spin_lock_irq(&ctx->ctx_lock);
	if (atomic_read(&ctx->dead)) {
		spin_unlock_irq(&ctx->ctx_lock);
		req->ki_filp = NULL; /* iocb_destroy() finds no file */
		return -EINVAL;
	}
	/* aio_run_iocb() let go of the lock for the operation itself... */
	spin_unlock_irq(&ctx->ctx_lock);
	return 0;
}

static noinline void aio_ctx_lock_after_op(struct aio_kiocb *req)
{
	struct kioctx *ctx = req->ki_ctx;
	bool last;

	/*
	 * ...and took it back afterwards, to requeue a kicked retry and to
	 * drain ctx->run_list. Neither exists any more; the lock round trip,
	 * which is what a sharing submitter paid, is kept.
	 */
	spin_lock_irq(&ctx->ctx_lock);
	spin_unlock_irq(&ctx->ctx_lock);

	/* Then aio_put_req() dropped the submit reference under ctx_lock. */
	spin_lock_irq(&ctx->ctx_lock);
	last = refcount_dec_and_test(&req->ki_refcnt);
	spin_unlock_irq(&ctx->ctx_lock);
	if (last) {
		aio_complete(req);
		iocb_destroy(req);
	}
}

/* io_submit_one() from __io_submit_one() on, in SubmitMode::kCtxLock. */
static noinline int io_submit_one_v39(struct kioctx *ctx, const struct iocb *iocb,
				      struct iocb __user *user_iocb, struct aio_kiocb *req,
				      bool compat)
{
	int err;

	err = aio_ctx_lock_before_op(ctx, req);
	if (likely(!err))
		err = __io_submit_one(ctx, iocb, user_iocb, req, compat);

	/* drop the submit path's reference, under ctx_lock */
	aio_ctx_lock_after_op(req);

	if (unlikely(err)) {
		iocb_destroy(req);
		put_reqs_available(ctx, 1);
	}
	return err;
}

#define aio_submit_v39 (aio_submit_mode == SubmitMode::kCtxLock)

static int io_submit_one(struct kioctx *ctx, struct iocb __user *user_iocb, bool compat)
{
	struct aio_kiocb *req;
	struct iocb iocb;
	int err;

	if (unlikely(copy_from_user(&iocb, user_iocb, sizeof(iocb))))
		return -EFAULT;

	/* reserved fields must be 0, leaving them free for future use */
	if (unlikely(iocb.aio_reserved2)) {
		pr_debug("EINVAL: reserve field set\n");
		return -EINVAL;
	}

	/* buffer address and length must fit the native types */
	if (unlikely((iocb.aio_buf != (unsigned long)iocb.aio_buf) ||
		     (iocb.aio_nbytes != (size_t)iocb.aio_nbytes) ||
		     ((ssize_t)iocb.aio_nbytes < 0))) {
		pr_debug("EINVAL: overflow check\n");
		return -EINVAL;
	}

	req = aio_get_req(ctx);
	if (unlikely(!req))
		return -EAGAIN;

	if (unlikely(aio_submit_v39))
		return io_submit_one_v39(ctx, &iocb, user_iocb, req, compat);

	err = __io_submit_one(ctx, &iocb, user_iocb, req, compat);

	/* drop the submit path's reference */
	iocb_put(req);

	/*
	 * On success the request has either completed already or will be
	 * completed asynchronously. On failure nobody else owns req: free
	 * it here and give its ring slot back.
	 */
	if (unlikely(err)) {
		iocb_destroy(req);
		put_reqs_available(ctx, 1);
	}
	return err;
}

/* ------------------------------------------------------------------ */
/* The system calls.                                                   */

/* sys_io_setup:
 *	Make a new AIO context with room for at least nr_events completions
 *	and store its handle in *ctxp, which has to hold 0 beforehand (it
 *	must not name a context that exists).
 *	Errors: -EINVAL when *ctxp is non-zero, or nr_events is 0 or beyond
 *	what the implementation can size; -EAGAIN when nr_events would take
 *	the system past aio_max_nr; -ENOMEM when memory for the context
 *	runs out; -EFAULT when ctxp is not a usable user pointer. A kernel
 *	built without AIO answers -ENOSYS.
 */
SYSCALL_DEFINE2(io_setup, unsigned, nr_events, aio_context_t __user *, ctxp)
{
	struct kioctx *ioctx = NULL;
	unsigned long ctx;
	long ret;

	ret = get_user(ctx, ctxp);
	if (unlikely(ret))
		goto out;

	ret = -EINVAL;
	if (unlikely(ctx || nr_events == 0)) {
		pr_debug("EINVAL: ctx %lu nr_events %u\n", ctx, nr_events);
		goto out;
	}

	ioctx = ioctx_alloc(nr_events);
	ret = PTR_ERR(ioctx);
	if (!IS_ERR(ioctx)) {
		ret = put_user(ioctx->user_id, ctxp);
		if (ret)
			kill_ioctx(current->mm, ioctx, NULL);
		percpu_ref_put(&ioctx->users);
	}

out:
	return ret;
}

COMPAT_SYSCALL_DEFINE2(io_setup, unsigned, nr_events, u32 __user *, ctx32p)
{
	struct kioctx *ioctx = NULL;
	unsigned long ctx;
	long ret;

	ret = get_user(ctx, ctx32p);
	if (unlikely(ret))
		goto out;

	ret = -EINVAL;
	if (unlikely(ctx || nr_events == 0)) {
		pr_debug("EINVAL: ctx %lu nr_events %u\n", ctx, nr_events);
		goto out;
	}

	ioctx = ioctx_alloc(nr_events);
	ret = PTR_ERR(ioctx);
	if (!IS_ERR(ioctx)) {
		/* the ring of a 32-bit task lies below 4 GiB: no bits are lost */
		ret = put_user((u32)ioctx->user_id, ctx32p);
		if (ret)
			kill_ioctx(current->mm, ioctx, NULL);
		percpu_ref_put(&ioctx->users);
	}

out:
	return ret;
}

/* sys_io_destroy:
 *	Tear down context @ctx: requests still outstanding are cancelled
 *	where possible, and the call sleeps until all of them are finished.
 *	-EINVAL if @ctx is not a live context of this process; a kernel
 *	built without AIO answers -ENOSYS.
 */
SYSCALL_DEFINE1(io_destroy, aio_context_t, ctx)
{
	struct kioctx *ioctx = lookup_ioctx(ctx);

	if (likely(NULL != ioctx)) {
		struct ctx_rq_wait wait;
		int ret;

		init_completion(&wait.comp);
		atomic_set(&wait.count, 1);

		/* kill_ioctx() stores &wait in ctx->rq_wait, and only for the
		 * caller that wins the dead flag; setting it from here would
		 * race when two threads destroy the same context at once.
		 */
		ret = kill_ioctx(current->mm, ioctx, &wait);
		percpu_ref_put(&ioctx->users);

		/* Do not return while I/O is still draining: those requests
		 * may go on touching the program's buffers after it believes
		 * the context is gone.
		 */
		if (!ret)
			wait_for_completion(&wait.comp);

		return ret;
	}
	pr_debug("EINVAL: invalid context id\n");
	return -EINVAL;
}

/* sys_io_submit:
 *	Start the requests described by the nr iocb pointers at iocbpp (nr
 *	is capped at the ring size) and return how many were accepted. The
 *	batch stops at the first iocb that fails; its error is returned
 *	only when nothing was accepted, and nr == 0 simply gives 0.
 *	That error is -EINVAL for a bad ctx_id, a negative nr, a malformed
 *	iocb or an opcode the file cannot do; -EFAULT for unreadable user
 *	memory; -EBADF for a bad descriptor in the iocb; -EAGAIN when no
 *	ring slot (or memory) is left for it. A kernel built without AIO
 *	answers -ENOSYS.
 */
SYSCALL_DEFINE3(io_submit, aio_context_t, ctx_id, long, nr, struct iocb __user *__user *, iocbpp)
{
	struct kioctx *ctx;
	long ret = 0;
	int i = 0;
	struct blk_plug plug;

	if (unlikely(nr < 0))
		return -EINVAL;

	ctx = lookup_ioctx(ctx_id);
	if (unlikely(!ctx)) {
		pr_debug("EINVAL: invalid context id\n");
		return -EINVAL;
	}

	if (nr > ctx->nr_events)
		nr = ctx->nr_events;

	if (nr > AIO_PLUG_THRESHOLD)
		blk_start_plug(&plug);
	for (i = 0; i < nr; i++) {
		struct iocb __user *user_iocb;

		if (unlikely(get_user(user_iocb, iocbpp + i))) {
			ret = -EFAULT;
			break;
		}

		ret = io_submit_one(ctx, user_iocb, false);
		if (ret)
			break;
	}
	if (nr > AIO_PLUG_THRESHOLD)
		blk_finish_plug(&plug);

	percpu_ref_put(&ctx->users);
	return i ? i : ret;
}

COMPAT_SYSCALL_DEFINE3(io_submit, compat_aio_context_t, ctx_id, int, nr, compat_uptr_t __user *,
		       iocbpp)
{
	struct kioctx *ctx;
	long ret = 0;
	int i = 0;
	struct blk_plug plug;

	if (unlikely(nr < 0))
		return -EINVAL;

	ctx = lookup_ioctx(ctx_id);
	if (unlikely(!ctx)) {
		pr_debug("EINVAL: invalid context id\n");
		return -EINVAL;
	}

	if (nr > ctx->nr_events)
		nr = ctx->nr_events;

	if (nr > AIO_PLUG_THRESHOLD)
		blk_start_plug(&plug);
	for (i = 0; i < nr; i++) {
		compat_uptr_t user_iocb;

		if (unlikely(get_user(user_iocb, iocbpp + i))) {
			ret = -EFAULT;
			break;
		}

		ret = io_submit_one(ctx, (struct iocb __user *)compat_ptr(user_iocb), true);
		if (ret)
			break;
	}
	if (nr > AIO_PLUG_THRESHOLD)
		blk_finish_plug(&plug);

	percpu_ref_put(&ctx->users);
	return i ? i : ret;
}

/* sys_io_cancel:
 *	Ask for an iocb, earlier handed to io_submit on this context, to be
 *	cancelled. The original interface copied a cancelled request's
 *	event to @result instead of the ring and returned 0; today @result
 *	is ignored, the event still arrives through the ring, and a
 *	cancellation that got started returns -EINPROGRESS.
 *	-EFAULT: the iocb cannot be read. -EINVAL: bad ctx_id, or the iocb
 *	is not a cancellable request in flight here. The ABI also names
 *	-EAGAIN (not cancelled) and -ENOSYS (kernel without AIO).
 */
SYSCALL_DEFINE3(io_cancel, aio_context_t, ctx_id, struct iocb __user *, iocb,
		struct io_event __user *, result)
{
	struct kioctx *ctx;
	struct aio_kiocb *kiocb;
	int ret = -EINVAL;
	u32 key;
	u64 obj = (u64)(unsigned long)iocb;

	if (unlikely(get_user(key, &iocb->aio_key)))
		return -EFAULT;
	if (unlikely(key != KIOCB_KEY))
		return -EINVAL;

	ctx = lookup_ioctx(ctx_id);
	if (unlikely(!ctx))
		return -EINVAL;

	spin_lock_irq(&ctx->ctx_lock);
	list_for_each_entry (kiocb, &ctx->active_reqs, ki_list) {
		if (kiocb->ki_res.obj == obj) {
			ret = kiocb->ki_cancel(&kiocb->rw);
			list_del_init(&kiocb->ki_list);
			break;
		}
	}
	spin_unlock_irq(&ctx->ctx_lock);

	if (!ret) {
		/*
		 * @result is left alone: the event reaches userspace through
		 * the ring like any other, and -EINPROGRESS tells the caller
		 * that the cancellation is under way.
		 */
		ret = -EINPROGRESS;
	}

	percpu_ref_put(&ctx->users);

	return ret;
}

static long do_io_getevents(aio_context_t ctx_id, long min_nr, long nr,
			    struct io_event __user *events, struct timespec64 *ts)
{
	ktime_t until = ts ? timespec64_to_ktime(*ts) : KTIME_MAX;
	struct kioctx *ioctx = lookup_ioctx(ctx_id);
	long ret = -EINVAL;

	if (likely(ioctx)) {
		if (likely(min_nr <= nr && min_nr >= 0))
			ret = read_events(ioctx, min_nr, nr, events, until);
		percpu_ref_put(&ioctx->users);
	}

	return ret;
}

/* io_getevents:
 *	Reap between min_nr and nr completions of context ctx_id into
 *	@events and return how many were copied. @timeout is a relative
 *	interval, NULL meaning no limit; if it runs out first, fewer than
 *	min_nr events (possibly none) are returned.
 *	-EINVAL: bad ctx_id, min_nr or nr out of range (0 <= min_nr <= nr
 *	is required), or, per the ABI, a timeout out of range. -EFAULT:
 *	@events or @timeout is not accessible. A kernel built without AIO
 *	answers -ENOSYS.
 */
SYSCALL_DEFINE5(io_getevents, aio_context_t, ctx_id, long, min_nr, long, nr,
		struct io_event __user *, events, struct __kernel_timespec __user *, timeout)
{
	struct timespec64 ts;
	int ret;

	if (timeout && unlikely(get_timespec64(&ts, timeout)))
		return -EFAULT;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &ts : NULL);
	if (!ret && signal_pending(current))
		ret = -EINTR;
	return ret;
}

SYSCALL_DEFINE6(io_pgetevents, aio_context_t, ctx_id, long, min_nr, long, nr,
		struct io_event __user *, events, struct __kernel_timespec __user *, timeout,
		const struct __aio_sigset __user *, usig)
{
	struct __aio_sigset ksig = {
		NULL,
	};
	struct timespec64 ts;
	bool interrupted;
	int ret;

	if (timeout && unlikely(get_timespec64(&ts, timeout)))
		return -EFAULT;

	if (usig && copy_from_user(&ksig, usig, sizeof(ksig)))
		return -EFAULT;

	ret = set_user_sigmask(ksig.sigmask, ksig.sigsetsize);
	if (ret)
		return ret;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &ts : NULL);

	interrupted = signal_pending(current);
	restore_saved_sigmask_unless(interrupted);
	if (interrupted && !ret)
		ret = -ERESTARTNOHAND;

	return ret;
}

SYSCALL_DEFINE6(io_pgetevents_time32, aio_context_t, ctx_id, long, min_nr, long, nr,
		struct io_event __user *, events, struct old_timespec32 __user *, timeout,
		const struct __aio_sigset __user *, usig)
{
	struct __aio_sigset ksig = {
		NULL,
	};
	struct timespec64 ts;
	bool interrupted;
	int ret;

	if (timeout && unlikely(get_old_timespec32(&ts, timeout)))
		return -EFAULT;

	if (usig && copy_from_user(&ksig, usig, sizeof(ksig)))
		return -EFAULT;

	ret = set_user_sigmask(ksig.sigmask, ksig.sigsetsize);
	if (ret)
		return ret;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &ts : NULL);

	interrupted = signal_pending(current);
	restore_saved_sigmask_unless(interrupted);
	if (interrupted && !ret)
		ret = -ERESTARTNOHAND;

	return ret;
}

SYSCALL_DEFINE5(io_getevents_time32, __u32, ctx_id, __s32, min_nr, __s32, nr,
		struct io_event __user *, events, struct old_timespec32 __user *, timeout)
{
	struct timespec64 t;
	int ret;

	if (timeout && get_old_timespec32(&t, timeout))
		return -EFAULT;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &t : NULL);
	if (!ret && signal_pending(current))
		ret = -EINTR;
	return ret;
}

struct __compat_aio_sigset {
	compat_uptr_t sigmask;
	compat_size_t sigsetsize;
};

COMPAT_SYSCALL_DEFINE6(io_pgetevents, compat_aio_context_t, ctx_id, compat_long_t, min_nr,
		       compat_long_t, nr, struct io_event __user *, events,
		       struct old_timespec32 __user *, timeout,
		       const struct __compat_aio_sigset __user *, usig)
{
	struct __compat_aio_sigset ksig = {
		0,
	};
	struct timespec64 t;
	bool interrupted;
	int ret;

	if (timeout && get_old_timespec32(&t, timeout))
		return -EFAULT;

	if (usig && copy_from_user(&ksig, usig, sizeof(ksig)))
		return -EFAULT;

	ret = set_compat_user_sigmask(compat_ptr(ksig.sigmask), ksig.sigsetsize);
	if (ret)
		return ret;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &t : NULL);

	interrupted = signal_pending(current);
	restore_saved_sigmask_unless(interrupted);
	if (interrupted && !ret)
		ret = -ERESTARTNOHAND;

	return ret;
}

COMPAT_SYSCALL_DEFINE6(io_pgetevents_time64, compat_aio_context_t, ctx_id, compat_long_t, min_nr,
		       compat_long_t, nr, struct io_event __user *, events,
		       struct __kernel_timespec __user *, timeout,
		       const struct __compat_aio_sigset __user *, usig)
{
	struct __compat_aio_sigset ksig = {
		0,
	};
	struct timespec64 t;
	bool interrupted;
	int ret;

	if (timeout && get_timespec64(&t, timeout))
		return -EFAULT;

	if (usig && copy_from_user(&ksig, usig, sizeof(ksig)))
		return -EFAULT;

	ret = set_compat_user_sigmask(compat_ptr(ksig.sigmask), ksig.sigsetsize);
	if (ret)
		return ret;

	ret = do_io_getevents(ctx_id, min_nr, nr, events, timeout ? &t : NULL);

	interrupted = signal_pending(current);
	restore_saved_sigmask_unless(interrupted);
	if (interrupted && !ret)
		ret = -ERESTARTNOHAND;

	return ret;
}

/*
 * The entry points of <uk/linux/aio.h>, with the host's struct timespec (the
 * layout of struct __kernel_timespec on 64-bit).
 */
static_assert(sizeof(struct timespec) == sizeof(struct __kernel_timespec));

/*
 * A context of the retry-based 2.6 engine (aio.engine=v26 when it was
 * made) is served by aio_v26.cc.
 */
extern "C" long ukern_io_setup(unsigned int nr_events, unsigned long *ctxp)
{
	aio_setup();
	if (uk::aio26::aio_engine == uk::aio26::Engine::kV26)
		return uk::aio26::sys_io_setup(nr_events, ctxp);
	return sys_io_setup(nr_events, ctxp);
}

extern "C" long ukern_io_destroy(unsigned long ctx)
{
	if (uk::aio26::owns(ctx))
		return uk::aio26::sys_io_destroy(ctx);
	return sys_io_destroy(ctx);
}

extern "C" long ukern_io_submit(unsigned long ctx_id, long nr, struct iocb **iocbpp)
{
	if (uk::aio26::owns(ctx_id))
		return uk::aio26::sys_io_submit(ctx_id, nr, iocbpp);
	return sys_io_submit(ctx_id, nr, iocbpp);
}

extern "C" long ukern_io_cancel(unsigned long ctx_id, struct iocb *iocb, struct io_event *result)
{
	if (uk::aio26::owns(ctx_id))
		return uk::aio26::sys_io_cancel(ctx_id, iocb, result);
	return sys_io_cancel(ctx_id, iocb, result);
}

extern "C" long ukern_io_getevents(unsigned long ctx_id, long min_nr, long nr,
				   struct io_event *events, struct timespec *timeout)
{
	long ret;

	if (uk::aio26::owns(ctx_id))
		return uk::aio26::sys_io_getevents(ctx_id, min_nr, nr, events, timeout);
	ret = sys_io_getevents(ctx_id, min_nr, nr, events, (struct __kernel_timespec *)timeout);
	uk::host_signal_delivered();
	return ret;
}

extern "C" long ukern_io_pgetevents(unsigned long ctx_id, long min_nr, long nr,
				    struct io_event *events, struct timespec *timeout,
				    const struct __aio_sigset *usig)
{
	long ret;

	if (uk::aio26::owns(ctx_id))
		return -ENOSYS; /* io_pgetevents came in 4.18 */
	ret = sys_io_pgetevents(ctx_id, min_nr, nr, events, (struct __kernel_timespec *)timeout,
				usig);
	/*
	 * Back to the program: the handler of the signal that interrupted
	 * the sleep has run already, so -ERESTARTNOHAND is -EINTR.
	 */
	uk::host_signal_delivered();
	if (ret == -ERESTARTNOHAND)
		ret = -EINTR;
	return ret;
}

/* ------------------------------------------------------------------ */
/* fork, tests.                                                        */

/*
 * mm_init() for the child: contexts are not inherited. The parent's are
 * leaked (their memory belongs to the parent's copy), as are the worker
 * and poller threads, which do not exist in the child.
 */
static void aio_fork_child(void)
{
	spin_lock_init(&uk::process_mm.ioctx_lock);
	RCU_INIT_POINTER(uk::process_mm.ioctx_table, NULL);
	INIT_HLIST_HEAD(&uk::process_mm.ioctx_list);
	INIT_RADIX_TREE(&uk::process_mm.ioctx_rtree, GFP_ATOMIC);
	spin_lock_init(&aio_nr_lock);
	aio_nr = 0;
	aio_wq_fork_child();
	aio_ring_fork_child();
}

namespace uk::aio
{

int ctx_info(unsigned long ctx_id, CtxInfo *info)
{
	struct kioctx *ctx = lookup_ioctx(ctx_id);
	int cpu;

	if (!ctx)
		return -EINVAL;
	info->id = ctx->id;
	info->nr_events = ctx->nr_events;
	info->max_reqs = ctx->max_reqs;
	info->req_batch = ctx->req_batch;
	/*
	 * One snapshot under completion_lock: aio_complete() publishes the
	 * tail, then moves completed_events into reqs_available
	 * (refill_reqs_available()) before it drops the lock, so a reaper may
	 * hold the last event while the counters are still moving.
	 */
	spin_lock_irq(&ctx->completion_lock);
	info->reqs_available_global = aio_reqs_mode == ReqsMode::kLocked
					      ? READ_ONCE(ctx->reqs_available_locked)
					      : atomic_read(&ctx->reqs_available);
	info->reqs_available_percpu = 0;
	for_each_possible_cpu (cpu)
		info->reqs_available_percpu +=
			READ_ONCE(per_cpu_ptr(ctx->cpu, cpu)->reqs_available);
	info->completed_events = ctx->completed_events;
	info->tail = ctx->tail;
	spin_unlock_irq(&ctx->completion_lock);
	info->user_id = ctx->user_id;
	info->reqs_in_flight = 0;
	percpu_ref_put(&ctx->users);
	return 0;
}

unsigned table_nr(void)
{
	struct kioctx_table *table;
	unsigned nr;

	rcu_read_lock();
	table = rcu_dereference(uk::process_mm.ioctx_table);
	nr = table ? table->nr : 0;
	rcu_read_unlock();
	return nr;
}

long nr_live_ctx(void)
{
	return kioctx_cachep ? (long)uk::slab_nr_allocated(kioctx_cachep) : 0;
}

long nr_ring_vmas(void)
{
	return aio_ring_vmas();
}

long ring_vmas_max(void)
{
	return aio_ring_vmas_max();
}

long nr_live_reqs(void)
{
	return kiocb_cachep ? (long)uk::slab_nr_allocated(kiocb_cachep) : 0;
}

void boot(void)
{
	aio_setup();
}

void quiesce(void)
{
	rcu_barrier();
	aio_wq_flush();
	flush_workqueue(system_wq);
	rcu_barrier();
	aio_wq_flush();
	flush_workqueue(system_wq);
}

/*
 * The process "exits": exit_mmap() takes the user ring mappings, whose
 * exit_aio() leaves alone, and exit_aio() kills every context.
 */
void reset_mm_for_test(void)
{
	struct kioctx_table *table;
	unsigned i;

	aio_setup();
	table = rcu_dereference_raw(uk::process_mm.ioctx_table);
	for (i = 0; table && i < table->nr; i++) {
		struct kioctx *ctx = rcu_dereference_protected(table->table[i], true);

		if (!ctx || !ctx->mmap_size)
			continue;
		mutex_lock(&ctx->ring_lock);
		if (aio_ring_mapped_at(ctx, ctx->mmap_base))
			vm_munmap(ctx->mmap_base, ctx->mmap_size);
		mutex_unlock(&ctx->ring_lock);
	}
	aio_host_exit();
	exit_aio(&uk::process_mm);
	quiesce();
}

} // namespace uk::aio
