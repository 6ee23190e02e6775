// SPDX-License-Identifier: GPL-2.0-only
// The page allocator: alloc_pages(), __get_free_pages() and their frees.
//
// Kernel memory is never faulted in on first use: the pages the buddy
// allocator hands out are RAM. A page that the host maps on its first store
// costs a host page fault per 4 KiB instead, so the pages here come from
// chunks of 2 MiB (one transparent huge page; advised with MADV_HUGEPAGE
// when page_alloc.thp is set) that are backed in one call
// (MADV_POPULATE_WRITE) when they are mapped.
// Freed pages go back to a pool and stay backed, up to a limit
// (page_alloc.pool_mb); past it they are returned to the host with
// MADV_DONTNEED and backed again in bulk when they are handed out next.
//
// Like the kernel's per-CPU page lists (pcp->high, pcp->batch), each thread
// keeps up to 64 free order-0 pages and refills or drains 32 at a time, so
// one allocation or free of a page touches only thread-local words.
//
// Sanitizer builds have no pool: each block is an aligned allocation of the
// system allocator and goes back to it when freed, so ASan reports
// use-after-free and out-of-bounds accesses on pages as on any object.
#define KBUILD_MODNAME "page_alloc"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <uk/linux/errno.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/gfp.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/kernel.h>
#include <uk/linux/moduleparam.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static unsigned int reserve_mb;
static int page_alloc_set_reserve(const char *val, const struct kernel_param *kp);

static const struct kernel_param_ops page_alloc_reserve_ops = {
	.flags = 0,
	.set = page_alloc_set_reserve,
	.get = param_get_uint,
	.free = NULL,
};

module_param_cb(reserve_mb, &page_alloc_reserve_ops, &reserve_mb, 0444);
__MODULE_PARM_TYPE(reserve_mb, "uint");
MODULE_PARM_DESC(reserve_mb, "MiB of pages mapped and backed when the command line is parsed");

static unsigned int pool_mb = 64;
module_param(pool_mb, uint, 0644);
MODULE_PARM_DESC(pool_mb, "MiB of free pages kept backed in the pool; more go back to the host");

static bool thp;
module_param(thp, bool, 0644);
MODULE_PARM_DESC(thp, "Advise chunks for transparent huge pages (MADV_HUGEPAGE)");

namespace uk
{
namespace
{

std::atomic<long> mapped_bytes;

inline void check_gfp(gfp_t flags)
{
	if (gfpflags_allow_blocking(flags) && unlikely(preempt_count() != 0 || irqs_disabled()))
		might_sleep();
}

inline bool page_alloc_should_fail(gfp_t gfp, unsigned int order)
{
	if (likely((atomic_read(&failslab.times) == 0 || READ_ONCE(failslab.probability) == 0) &&
		   !fail_nth_armed()))
		return false;
	return should_failslab_cache("page_alloc", PAGE_SIZE << order, gfp);
}

#ifdef UKERN_SANITIZER

std::atomic<long> nr_allocated;

void *block_alloc(unsigned int order)
{
	void *p = aligned_alloc(PAGE_SIZE, PAGE_SIZE << order);

	if (p)
		nr_allocated.fetch_add(1L << order, std::memory_order_relaxed);
	return p;
}

void block_free(void *p, unsigned int order)
{
	nr_allocated.fetch_sub(1L << order, std::memory_order_relaxed);
	free(p);
}

long sum_allocated()
{
	return nr_allocated.load(std::memory_order_relaxed);
}

long nr_pooled()
{
	return 0;
}

#else /* !UKERN_SANITIZER */

constexpr unsigned int kChunkOrder = 9; // 2 MiB: one transparent huge page on x86-64
constexpr size_t kChunkSize = PAGE_SIZE << kChunkOrder;
constexpr int kPcpHigh = 64;
constexpr int kPcpBatch = 32;

// A thread's free order-0 pages and its allocation counts. Only the owner
// writes them; counts are read by page_alloc_nr_allocated() under the zone
// lock, hence the relaxed atomic accesses.
struct Pcp {
	int count;
	void *pages[kPcpHigh];
	long nr_alloc;
	long nr_free;
	bool registered;
	bool dead;
};

// Trivial TLS: no guard on the fast path; initial-exec, as the slab's
// counters, so that libukern_aio.so reads it without __tls_get_addr().
thread_local Pcp tls_pcp __attribute__((tls_model("initial-exec")));

struct Zone {
	std::mutex lock;
	// Free blocks of each order up to a chunk: backed, and given back to the host.
	std::vector<void *> free_area[kChunkOrder + 1];
	std::vector<void *> released[kChunkOrder + 1];
	long nr_pooled; // pages in free_area[]
	// The part of the newest mapping not yet carved into blocks.
	char *bump;
	size_t bump_left;
	std::vector<Pcp *> threads;
	long exited_alloc; // counts of exited threads
	long exited_free;
};

Zone &zone()
{
	static Zone *z = new Zone(); // outlives every thread
	return *z;
}

inline void count_add(long *w, long n)
{
	__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

// Backs [p, p + len) now: one call for the whole range, or a store per page
// where the host lacks MADV_POPULATE_WRITE (before 5.14). Only memory that
// holds no data is populated.
void populate(void *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += PAGE_SIZE)
		static_cast<volatile char *>(p)[off] = 0;
}

// @len bytes (a multiple of kChunkSize) aligned to kChunkSize, advised for
// huge pages and backed.
char *map_chunks(size_t len)
{
	size_t raw_len = len + kChunkSize;
	void *raw =
		mmap(nullptr, raw_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t start, end;

	if (raw == MAP_FAILED)
		return nullptr;
	start = ALIGN(reinterpret_cast<uintptr_t>(raw), kChunkSize);
	end = start + len;
	if (start != reinterpret_cast<uintptr_t>(raw))
		munmap(raw, start - reinterpret_cast<uintptr_t>(raw));
	if (reinterpret_cast<uintptr_t>(raw) + raw_len != end)
		munmap(reinterpret_cast<void *>(end),
		       reinterpret_cast<uintptr_t>(raw) + raw_len - end);
	if (READ_ONCE(thp))
		madvise(reinterpret_cast<void *>(start), len,
			MADV_HUGEPAGE); // hosts without THP refuse
	populate(reinterpret_cast<void *>(start), len);
	mapped_bytes.fetch_add(static_cast<long>(len), std::memory_order_relaxed);
	return reinterpret_cast<char *>(start);
}

// The rest of the bump region goes to the order-0 free list.
void retire_bump_locked(Zone &z)
{
	for (; z.bump_left; z.bump += PAGE_SIZE, z.bump_left -= PAGE_SIZE) {
		z.free_area[0].push_back(z.bump);
		z.nr_pooled++;
	}
}

// Maps and backs @mb MiB more for the pool. 0 or -ENOMEM.
int reserve(unsigned int mb)
{
	size_t len = ALIGN(static_cast<size_t>(mb) << 20, kChunkSize);
	Zone &z = zone();
	char *p;

	if (!len)
		return 0;
	p = map_chunks(len);
	if (!p)
		return -ENOMEM;
	std::lock_guard<std::mutex> g(z.lock);
	retire_bump_locked(z);
	z.bump = p;
	z.bump_left = len;
	return 0;
}

void *take_locked(Zone &z, unsigned int order)
{
	size_t size = PAGE_SIZE << order;
	void *p;

	if (!z.free_area[order].empty()) {
		p = z.free_area[order].back();
		z.free_area[order].pop_back();
		z.nr_pooled -= 1L << order;
		return p;
	}
	if (!z.released[order].empty()) {
		p = z.released[order].back();
		z.released[order].pop_back();
		populate(p, size);
		return p;
	}
	if (z.bump_left < size) {
		char *c = map_chunks(kChunkSize);

		if (!c)
			return nullptr;
		retire_bump_locked(z);
		z.bump = c;
		z.bump_left = kChunkSize;
	}
	p = z.bump;
	z.bump += size;
	z.bump_left -= size;
	return p;
}

void give_locked(Zone &z, void *p, unsigned int order)
{
	if (z.nr_pooled + (1L << order) > static_cast<long>(READ_ONCE(pool_mb))
						  << (20 - PAGE_SHIFT)) {
		madvise(p, PAGE_SIZE << order, MADV_DONTNEED);
		z.released[order].push_back(p);
		return;
	}
	z.free_area[order].push_back(p);
	z.nr_pooled += 1L << order;
}

// At thread exit: the thread's pages go back to the zone, its counts to
// the zone's totals.
struct PcpHolder {
	~PcpHolder()
	{
		Zone &z = zone();
		Pcp &c = tls_pcp;
		std::lock_guard<std::mutex> g(z.lock);

		while (c.count)
			give_locked(z, c.pages[--c.count], 0);
		z.exited_alloc += c.nr_alloc;
		z.exited_free += c.nr_free;
		for (size_t i = 0; i < z.threads.size(); i++) {
			if (z.threads[i] == &c) {
				z.threads[i] = z.threads.back();
				z.threads.pop_back();
				break;
			}
		}
		c.registered = false;
		c.dead = true;
	}
};

// The calling thread's list, set up on its first use; NULL once the thread
// is exiting (its list is gone).
Pcp *pcp_slow()
{
	Pcp &c = tls_pcp;

	if (c.dead)
		return nullptr;
	if (!c.registered) {
		static thread_local PcpHolder holder;
		Zone &z = zone();
		std::lock_guard<std::mutex> g(z.lock);

		(void)holder;
		z.threads.push_back(&c);
		c.registered = true;
	}
	return &c;
}

noinline void *alloc_order0_slow()
{
	Zone &z = zone();
	Pcp *c = pcp_slow();
	std::lock_guard<std::mutex> g(z.lock);
	void *p = take_locked(z, 0);

	if (!p)
		return nullptr;
	if (!c) {
		z.exited_alloc++;
		return p;
	}
	while (c->count < kPcpBatch) {
		void *q = take_locked(z, 0);

		if (!q)
			break;
		c->pages[c->count++] = q;
	}
	count_add(&c->nr_alloc, 1);
	return p;
}

noinline void free_order0_slow(void *p)
{
	Zone &z = zone();
	Pcp *c = pcp_slow();
	std::lock_guard<std::mutex> g(z.lock);

	if (!c) {
		give_locked(z, p, 0);
		z.exited_free++;
		return;
	}
	while (c->count > kPcpHigh - kPcpBatch)
		give_locked(z, c->pages[--c->count], 0);
	c->pages[c->count++] = p;
	count_add(&c->nr_free, 1);
}

void *block_alloc(unsigned int order)
{
	Pcp &c = tls_pcp;
	void *p;

	if (likely(order == 0)) {
		if (likely(c.count > 0)) {
			count_add(&c.nr_alloc, 1);
			return c.pages[--c.count];
		}
		return alloc_order0_slow();
	}
	if (order > kChunkOrder) {
		p = map_chunks(PAGE_SIZE << order);
	} else {
		Zone &z = zone();
		std::lock_guard<std::mutex> g(z.lock);

		p = take_locked(z, order);
	}
	if (p) {
		Pcp *pc = pcp_slow();

		if (pc) {
			count_add(&pc->nr_alloc, 1L << order);
		} else {
			std::lock_guard<std::mutex> g(zone().lock);
			zone().exited_alloc += 1L << order;
		}
	}
	return p;
}

void block_free(void *p, unsigned int order)
{
	Pcp &c = tls_pcp;
	Pcp *pc;

	if (likely(order == 0)) {
		if (likely(c.registered && c.count < kPcpHigh)) {
			c.pages[c.count++] = p;
			count_add(&c.nr_free, 1);
			return;
		}
		free_order0_slow(p);
		return;
	}
	pc = pcp_slow();
	if (order > kChunkOrder) {
		munmap(p, PAGE_SIZE << order);
		mapped_bytes.fetch_sub(static_cast<long>(PAGE_SIZE << order),
				       std::memory_order_relaxed);
	} else {
		std::lock_guard<std::mutex> g(zone().lock);
		give_locked(zone(), p, order);
	}
	if (pc) {
		count_add(&pc->nr_free, 1L << order);
	} else {
		std::lock_guard<std::mutex> g(zone().lock);
		zone().exited_free += 1L << order;
	}
}

long sum_allocated()
{
	Zone &z = zone();
	std::lock_guard<std::mutex> g(z.lock);
	long n = z.exited_alloc - z.exited_free;

	for (Pcp *c : z.threads)
		n += __atomic_load_n(&c->nr_alloc, __ATOMIC_RELAXED) -
		     __atomic_load_n(&c->nr_free, __ATOMIC_RELAXED);
	return n;
}

long nr_pooled()
{
	Zone &z = zone();
	std::lock_guard<std::mutex> g(z.lock);

	return z.nr_pooled;
}

#endif /* UKERN_SANITIZER */

} // namespace

// Sanitizer builds have no pool to fill: the value is only recorded.
int page_alloc_reserve(unsigned int mb)
{
#ifdef UKERN_SANITIZER
	(void)mb;
	return 0;
#else
	return reserve(mb);
#endif
}

long page_alloc_nr_allocated()
{
	return sum_allocated();
}

long page_alloc_nr_pooled()
{
	return nr_pooled();
}

long page_alloc_mapped_bytes()
{
	return mapped_bytes.load(std::memory_order_relaxed);
}

} // namespace uk

static int page_alloc_set_reserve(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	if (ret)
		return ret;
	return uk::page_alloc_reserve(reserve_mb);
}

struct page *alloc_pages(gfp_t gfp, unsigned int order)
{
	void *p;

	uk::check_gfp(gfp);
	if (unlikely(order > MAX_PAGE_ORDER)) {
		WARN_ON_ONCE(!(gfp & __GFP_NOWARN));
		return NULL;
	}
	if (unlikely(uk::page_alloc_should_fail(gfp, order)))
		return NULL;
	p = uk::block_alloc(order);
	if (unlikely(!p))
		return NULL;
	if (gfp & __GFP_ZERO)
		memset(p, 0, PAGE_SIZE << order);
	return static_cast<struct page *>(p);
}

unsigned long __get_free_pages(gfp_t gfp_mask, unsigned int order)
{
	return reinterpret_cast<unsigned long>(alloc_pages(gfp_mask & ~__GFP_HIGHMEM, order));
}

unsigned long get_zeroed_page(gfp_t gfp_mask)
{
	return __get_free_pages(gfp_mask | __GFP_ZERO, 0);
}

void __free_pages(struct page *page, unsigned int order)
{
	if (unlikely(!page))
		return;
	uk::block_free(page, order);
}

void free_pages(unsigned long addr, unsigned int order)
{
	if (addr != 0) {
		VM_BUG_ON(!IS_ALIGNED(addr, PAGE_SIZE));
		__free_pages(reinterpret_cast<struct page *>(addr), order);
	}
}
