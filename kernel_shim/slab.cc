// SPDX-License-Identifier: GPL-2.0-only
// kmalloc and kmem_cache over jemalloc or the system allocator.
//
// Counters are per thread: each thread owns one slot per cache and is its
// only writer, so allocation adds no shared-cacheline traffic; readers sum
// the live threads' slots plus what exited threads left behind.
//
// Like SLUB's per-CPU freelists, each thread keeps a small magazine of free
// objects per cache, so a kmem_cache_alloc() after a kmem_cache_free() does
// not reach the allocator. Magazines are flushed at kmem_cache_destroy()
// and thread exit. Sanitizer builds have none: every object goes back to the
// allocator at once, so use-after-free is caught.
#include <malloc.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#ifdef UKERN_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <uk/linux/fault-inject.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>

struct kmem_cache {
	std::string name;
	unsigned int object_size;
	unsigned int align;
	slab_flags_t flags;
	void (*ctor)(void *);
	int index; /* counter slot */
};

namespace uk
{
namespace
{

constexpr int kMaxCaches = 512;
constexpr int kKmallocSlot = 0;

// 64 objects: about what SLUB serves from a CPU's slab and partial list
// before it needs the page allocator, and enough for an io_submit() batch
// of 32 kiocbs plus their bios without a trip to the backend.
#ifdef UKERN_SANITIZER
constexpr int kMagSize = 0;
#else
constexpr int kMagSize = 64;
#endif

struct Magazine {
	int n;
	void *obj[kMagSize > 0 ? kMagSize : 1];
};

struct Counters {
	long freed[kMaxCaches];
	long total[kMaxCaches];
	Magazine mag[kMagSize > 0 ? kMaxCaches : 1];
};

class CounterRegistry
{
      public:
	std::mutex mu;
	std::vector<Counters *> threads;
	struct {
		long freed[kMaxCaches];
		long total[kMaxCaches];
	} exited{};
	bool used[kMaxCaches] = { true }; // slot 0: kmalloc

	int Claim()
	{
		std::lock_guard<std::mutex> g(mu);
		for (int i = 1; i < kMaxCaches; i++) {
			if (!used[i]) {
				used[i] = true;
				for (Counters *c : threads) {
					__atomic_store_n(&c->freed[i], 0, __ATOMIC_RELAXED);
					__atomic_store_n(&c->total[i], 0, __ATOMIC_RELAXED);
				}
				exited.freed[i] = exited.total[i] = 0;
				return i;
			}
		}
		return -1;
	}

	void Release(int i)
	{
		std::lock_guard<std::mutex> g(mu);
		used[i] = false;
	}

	// Objects ever allocated (total) or live ones (allocated - freed).
	long Sum(int i, bool total)
	{
		std::lock_guard<std::mutex> g(mu);
		long s = exited.total[i] - (total ? 0 : exited.freed[i]);
		for (Counters *c : threads) {
			s += __atomic_load_n(&c->total[i], __ATOMIC_RELAXED);
			if (!total)
				s -= __atomic_load_n(&c->freed[i], __ATOMIC_RELAXED);
		}
		return s;
	}
};

CounterRegistry &registry()
{
	static CounterRegistry *r = new CounterRegistry; // outlives every thread
	return *r;
}

void backend_free(void *p, size_t size);

// The size backend_free() is told for an object of @s (0: unknown).
inline size_t free_size(const struct kmem_cache *s)
{
	return s->align > 16 ? 0 : s->object_size;
}

// Magazines hold objects of caches that no longer exist only until the
// destroy that flushes them; caches are looked up here for the flush.
struct kmem_cache *cache_by_slot[kMaxCaches];

// Empties @c's magazine for @slot. Called with the registry lock held, by
// the owning thread at exit or by kmem_cache_destroy() (when, by the
// kernel's rules, no thread uses the cache any more).
void flush_magazine(Counters *c, int slot)
{
	Magazine &m = c->mag[slot];
	for (int i = 0; i < m.n; i++)
		backend_free(m.obj[i], free_size(cache_by_slot[slot]));
	m.n = 0;
}

// Counters for every cache slot, in fresh anonymous pages: a thread's
// magazines become resident only for the caches it uses (sizeof(Counters)
// is about 270 KiB, most of it magazines of caches a thread never touches).
Counters *alloc_counters()
{
	void *p = mmap(nullptr, sizeof(Counters), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort(); // no memory for this thread's slab counters
	return static_cast<Counters *>(p);
}

struct ThreadCounters {
	Counters *c;
	ThreadCounters() : c(alloc_counters())
	{
		CounterRegistry &r = registry();
		std::lock_guard<std::mutex> g(r.mu);
		r.threads.push_back(c);
	}
	~ThreadCounters();
};

/*
 * Trivial TLS: no guard on the fast path. Initial-exec, as tls_cpu: in
 * libukern_aio.so the default model reads it through __tls_get_addr() on
 * every allocation and free.
 */
thread_local Counters *tls_ctr __attribute__((tls_model("initial-exec")));
thread_local bool tls_ctr_dead __attribute__((tls_model("initial-exec")));

ThreadCounters::~ThreadCounters()
{
	CounterRegistry &r = registry();
	std::lock_guard<std::mutex> g(r.mu);
	for (int i = 0; i < kMaxCaches; i++) {
		r.exited.freed[i] += c->freed[i];
		r.exited.total[i] += c->total[i];
		if (kMagSize > 0 && c->mag[i].n)
			flush_magazine(c, i);
	}
	for (size_t i = 0; i < r.threads.size(); i++) {
		if (r.threads[i] == c) {
			r.threads[i] = r.threads.back();
			r.threads.pop_back();
			break;
		}
	}
	munmap(c, sizeof(Counters));
	tls_ctr = nullptr;
	tls_ctr_dead = true;
}

noinline Counters *counters_slow()
{
	if (tls_ctr_dead)
		return nullptr; // called from a later TLS destructor
	static thread_local ThreadCounters holder;
	tls_ctr = holder.c;
	return tls_ctr;
}

inline Counters *counters()
{
	Counters *c = tls_ctr;
	return likely(c != nullptr) ? c : counters_slow();
}

inline void count(Counters *c, int slot, long delta)
{
	if (unlikely(c == nullptr)) { // thread exiting: straight to the totals
		CounterRegistry &r = registry();
		std::lock_guard<std::mutex> g(r.mu);
		if (delta > 0)
			r.exited.total[slot] += delta;
		else
			r.exited.freed[slot] -= delta;
		return;
	}
	// One update per call: allocations go to total[], frees to freed[]
	// (live = total - freed), so alloc and free do not chain on one word.
	long *w = delta > 0 ? &c->total[slot] : &c->freed[slot];
	__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + (delta > 0 ? delta : -delta),
			 __ATOMIC_RELAXED);
}

inline void count(int slot, long delta)
{
	count(counters(), slot, delta);
}

inline void *backend_alloc(size_t size, size_t align, bool zero)
{
#ifdef UKERN_JEMALLOC
	// malloc()/calloc() are jemalloc's inlined fast paths; mallocx() is not.
	if (likely(align <= 16))
		return zero ? calloc(1, size) : malloc(size);
	return mallocx(size, MALLOCX_ALIGN(align) | (zero ? MALLOCX_ZERO : 0));
#else
	void *p;
	if (align > 16) {
		if (posix_memalign(&p, align, size) != 0)
			return nullptr;
		if (zero)
			memset(p, 0, size);
	} else {
		p = zero ? calloc(1, size) : malloc(size);
	}
	return p;
#endif
}

void backend_free(void *p, size_t size)
{
#ifdef UKERN_JEMALLOC
	// sdallocx() has a sized fast path; free() is the fast unsized one.
	if (size)
		sdallocx(p, size, 0);
	else
		free(p);
#else
	(void)size;
	free(p);
#endif
}

inline size_t backend_usable(const void *p)
{
#ifdef UKERN_JEMALLOC
	return sallocx(const_cast<void *>(p), 0);
#else
	return malloc_usable_size(const_cast<void *>(p));
#endif
}

inline void check_gfp(gfp_t flags)
{
	// Only the context test is inline; the report is might_sleep()'s.
	if (gfpflags_allow_blocking(flags) && unlikely(preempt_count() != 0 || irqs_disabled()))
		might_sleep();
}

// failslab armed at all? (the cheap test before the out-of-line one)
inline bool failslab_armed()
{
	return unlikely(
		(atomic_read(&failslab.times) != 0 && READ_ONCE(failslab.probability) != 0) ||
		fail_nth_armed());
}

} // namespace

long slab_nr_allocated(struct kmem_cache *s)
{
	return registry().Sum(s->index, false);
}
long slab_nr_tallocated(struct kmem_cache *s)
{
	return registry().Sum(s->index, true);
}
long kmalloc_nr_allocated()
{
	return registry().Sum(kKmallocSlot, false);
}
const char *kmem_cache_name(struct kmem_cache *s)
{
	return s->name.c_str();
}

void slab_for_each_cache(void (*fn)(const char *name, long live, void *arg), void *arg)
{
	for (int i = 0; i < kMaxCaches; i++) {
		struct kmem_cache *s = __atomic_load_n(&cache_by_slot[i], __ATOMIC_ACQUIRE);

		if (i == kKmallocSlot)
			fn("kmalloc", registry().Sum(i, false), arg);
		else if (s)
			fn(s->name.c_str(), registry().Sum(i, false), arg);
	}
}

long slab_total_allocated()
{
	CounterRegistry &r = registry();
	std::lock_guard<std::mutex> g(r.mu);
	long s = 0;

	for (int i = 0; i < kMaxCaches; i++)
		s += r.exited.total[i] - r.exited.freed[i];
	for (Counters *c : r.threads)
		for (int i = 0; i < kMaxCaches; i++)
			s += __atomic_load_n(&c->total[i], __ATOMIC_RELAXED) -
			     __atomic_load_n(&c->freed[i], __ATOMIC_RELAXED);
	return s;
}

void slab_flush_thread(void)
{
	Counters *c = tls_ctr;

	if (c == nullptr)
		return;
	if (kMagSize > 0) {
		CounterRegistry &r = registry();
		std::lock_guard<std::mutex> g(r.mu);
		for (int i = 0; i < kMaxCaches; i++)
			if (c->mag[i].n)
				flush_magazine(c, i);
	}
	// The next allocation takes the slow path, as a new thread's first
	// does; counters_slow() finds the same counters again.
	tls_ctr = nullptr;
}

} // namespace uk

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
				     slab_flags_t flags, void (*ctor)(void *))
{
	struct kmem_cache *s;
	int index = uk::registry().Claim();

	if (index < 0) {
		if (flags & SLAB_PANIC)
			BUG();
		return NULL;
	}
	if (flags & SLAB_HWCACHE_ALIGN)
		align = max(align, (unsigned int)L1_CACHE_BYTES);
	if (align == 0)
		align = sizeof(void *);
	s = new kmem_cache{ name, size ? size : 1, align, flags, ctor, index };
	__atomic_store_n(&uk::cache_by_slot[index], s, __ATOMIC_RELEASE);
	return s;
}

void kmem_cache_destroy(struct kmem_cache *s)
{
	long live;

	if (!s)
		return;
	live = uk::registry().Sum(s->index, false);
	if (live != 0) {
		pr_err("kmem_cache_destroy %s: Slab cache still has objects (%ld)\n",
		       s->name.c_str(), live);
		WARN_ON(1);
	}
	{
		uk::CounterRegistry &r = uk::registry();
		std::lock_guard<std::mutex> g(r.mu);

		if (uk::kMagSize > 0)
			for (uk::Counters *c : r.threads)
				uk::flush_magazine(c, s->index);
	}
	uk::registry().Release(s->index);
	delete s;
}

static noinline uk::any_ptr kmem_cache_alloc_slow(struct kmem_cache *s, gfp_t flags)
{
	uk::Counters *c;
	void *p;

	uk::check_gfp(flags);
	if (uk::failslab_armed() &&
	    uk::should_failslab_cache(s->name.c_str(), s->object_size, flags))
		return uk::any_ptr{ nullptr };
	c = uk::counters();
	if (uk::kMagSize > 0 && likely(c && c->mag[s->index].n > 0)) {
		p = c->mag[s->index].obj[--c->mag[s->index].n];
		if (flags & __GFP_ZERO)
			memset(p, 0, s->object_size);
	} else {
		p = uk::backend_alloc(s->object_size, s->align, flags & __GFP_ZERO);
		if (unlikely(!p))
			return uk::any_ptr{ nullptr };
	}
	if (s->ctor)
		s->ctor(p);
	uk::count(c, s->index, 1);
	return uk::any_ptr{ p };
}

/*
 * The fast path: a plain allocation (no ctor, no zeroing, failslab off, no
 * context to complain about) served from this thread's magazine. It
 * touches only thread-local words, like SLUB's per-CPU freelist pop.
 */
uk::any_ptr kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
	uk::Counters *c = uk::tls_ctr;

	if (uk::kMagSize > 0 && likely(c != nullptr) && !(flags & __GFP_ZERO) && !s->ctor &&
	    !uk::failslab_armed() &&
	    !(gfpflags_allow_blocking(flags) && (preempt_count() != 0 || irqs_disabled()))) {
		uk::Magazine &m = c->mag[s->index];

		if (likely(m.n > 0)) {
			uk::count(c, s->index, 1);
			return uk::any_ptr{ m.obj[--m.n] };
		}
	}
	return kmem_cache_alloc_slow(s, flags);
}

static noinline void kmem_cache_free_slow(struct kmem_cache *s, void *objp)
{
	uk::Counters *c = uk::counters();

	uk::count(c, s->index, -1);
	if (uk::kMagSize > 0 && likely(c && c->mag[s->index].n < uk::kMagSize)) {
		c->mag[s->index].obj[c->mag[s->index].n++] = objp;
		return;
	}
	uk::backend_free(objp, uk::free_size(s));
}

void kmem_cache_free(struct kmem_cache *s, void *objp)
{
	uk::Counters *c = uk::tls_ctr;

	if (unlikely(!objp))
		return;
	if (uk::kMagSize > 0 && likely(c != nullptr)) {
		uk::Magazine &m = c->mag[s->index];

		if (likely(m.n < uk::kMagSize)) {
			m.obj[m.n++] = objp;
			uk::count(c, s->index, -1);
			return;
		}
	}
	kmem_cache_free_slow(s, objp);
}

int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t flags, size_t size, void **p)
{
	size_t i;

	for (i = 0; i < size; i++) {
		p[i] = kmem_cache_alloc(s, flags);
		if (!p[i]) {
			kmem_cache_free_bulk(s, i, p);
			return 0;
		}
	}
	return (int)size;
}

void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p)
{
	for (size_t i = 0; i < size; i++)
		kmem_cache_free(s, p[i]);
}

unsigned int kmem_cache_size(struct kmem_cache *s)
{
	return s->object_size;
}

int kmem_cache_shrink(struct kmem_cache *s)
{
	return 0;
}

uk::any_ptr __kmalloc(size_t size, gfp_t flags)
{
	void *p;

	uk::check_gfp(flags);
	if (unlikely(size > KMALLOC_MAX_SIZE)) {
		if (!(flags & __GFP_NOWARN))
			WARN_ON_ONCE(1);
		return uk::any_ptr{ nullptr };
	}
	if (unlikely(!size))
		return uk::any_ptr{ ZERO_SIZE_PTR };
	if (uk::failslab_armed() && uk::should_failslab_cache("kmalloc", size, flags))
		return uk::any_ptr{ nullptr };
	p = uk::backend_alloc(size, ARCH_KMALLOC_MINALIGN, flags & __GFP_ZERO);
	if (likely(p))
		uk::count(uk::kKmallocSlot, 1);
	return uk::any_ptr{ p };
}

void kfree(const void *objp)
{
	if (unlikely(ZERO_OR_NULL_PTR(objp)))
		return;
	uk::count(uk::kKmallocSlot, -1);
	uk::backend_free(const_cast<void *>(objp), 0);
}

void kfree_sensitive(const void *objp)
{
	if (ZERO_OR_NULL_PTR(objp))
		return;
	memset(const_cast<void *>(objp), 0, uk::backend_usable(objp));
	kfree(objp);
}

size_t ksize(const void *objp)
{
	if (ZERO_OR_NULL_PTR(objp))
		return 0;
	return uk::backend_usable(objp);
}

void mem_dump_obj(void *object)
{
	if (ZERO_OR_NULL_PTR(object)) {
		pr_cont(" %s pointer.\n", object ? "zero-size" : "NULL");
		return;
	}
	pr_cont(" slab object %p of %zu usable bytes.\n", object, ksize(object));
}

uk::any_ptr krealloc(const void *p, size_t new_size, gfp_t flags)
{
	void *n;
	size_t old;

	if (!new_size) {
		kfree(p);
		return uk::any_ptr{ ZERO_SIZE_PTR };
	}
	old = ksize(p);
	if (p && !ZERO_OR_NULL_PTR(p) && new_size <= old)
		return uk::any_ptr{ const_cast<void *>(p) };
	n = __kmalloc(new_size, flags & ~__GFP_ZERO);
	if (!n)
		return uk::any_ptr{ nullptr };
	if (old)
		memcpy(n, p, old);
	if (flags & __GFP_ZERO)
		memset((char *)n + old, 0, new_size - old);
	kfree(p);
	return uk::any_ptr{ n };
}

char *kstrdup(const char *s, gfp_t gfp)
{
	return s ? kstrndup(s, strlen(s), gfp) : NULL;
}

char *kstrndup(const char *s, size_t max, gfp_t gfp)
{
	size_t len;
	char *buf;

	if (!s)
		return NULL;
	len = strnlen(s, max);
	buf = kmalloc(len + 1, gfp);
	if (buf) {
		memcpy(buf, s, len);
		buf[len] = '\0';
	}
	return buf;
}

uk::any_ptr kmemdup(const void *src, size_t len, gfp_t gfp)
{
	void *p = kmalloc(len, gfp);

	if (p)
		memcpy(p, src, len);
	return uk::any_ptr{ p };
}
