// SPDX-License-Identifier: GPL-2.0-only
// kmalloc and kmem_cache over jemalloc or the system allocator.
//
// Counters are per thread: each thread owns one slot per cache and is its
// only writer, so allocation adds no shared-cacheline traffic; readers sum
// the live threads' slots plus what exited threads left behind.
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#ifdef UKERN_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <uk/linux/fault-inject.h>
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

namespace uk {
namespace {

constexpr int kMaxCaches = 512;
constexpr int kKmallocSlot = 0;

struct Counters {
  long live[kMaxCaches];
  long total[kMaxCaches];
};

class CounterRegistry {
 public:
  std::mutex mu;
  std::vector<Counters *> threads;
  Counters exited{};
  bool used[kMaxCaches] = {true};  // slot 0: kmalloc

  int Claim() {
    std::lock_guard<std::mutex> g(mu);
    for (int i = 1; i < kMaxCaches; i++) {
      if (!used[i]) {
        used[i] = true;
        for (Counters *c : threads) {
          __atomic_store_n(&c->live[i], 0, __ATOMIC_RELAXED);
          __atomic_store_n(&c->total[i], 0, __ATOMIC_RELAXED);
        }
        exited.live[i] = exited.total[i] = 0;
        return i;
      }
    }
    return -1;
  }

  void Release(int i) {
    std::lock_guard<std::mutex> g(mu);
    used[i] = false;
  }

  long Sum(int i, bool total) {
    std::lock_guard<std::mutex> g(mu);
    long s = total ? exited.total[i] : exited.live[i];
    for (Counters *c : threads)
      s += __atomic_load_n(total ? &c->total[i] : &c->live[i], __ATOMIC_RELAXED);
    return s;
  }
};

CounterRegistry &registry() {
  static CounterRegistry *r = new CounterRegistry;  // outlives every thread
  return *r;
}

struct ThreadCounters {
  Counters c{};
  ThreadCounters() {
    CounterRegistry &r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    r.threads.push_back(&c);
  }
  ~ThreadCounters() {
    CounterRegistry &r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    for (int i = 0; i < kMaxCaches; i++) {
      r.exited.live[i] += c.live[i];
      r.exited.total[i] += c.total[i];
    }
    for (size_t i = 0; i < r.threads.size(); i++) {
      if (r.threads[i] == &c) {
        r.threads[i] = r.threads.back();
        r.threads.pop_back();
        break;
      }
    }
  }
};

thread_local ThreadCounters tls_counters;

inline void count(int slot, long delta) {
  Counters &c = tls_counters.c;
  __atomic_store_n(&c.live[slot], __atomic_load_n(&c.live[slot], __ATOMIC_RELAXED) + delta,
                   __ATOMIC_RELAXED);
  if (delta > 0)
    __atomic_store_n(&c.total[slot],
                     __atomic_load_n(&c.total[slot], __ATOMIC_RELAXED) + delta,
                     __ATOMIC_RELAXED);
}

inline void *backend_alloc(size_t size, size_t align, bool zero) {
#ifdef UKERN_JEMALLOC
  int flags = zero ? MALLOCX_ZERO : 0;
  if (align > 16) flags |= MALLOCX_ALIGN(align);
  return mallocx(size, flags);
#else
  void *p;
  if (align > 16) {
    if (posix_memalign(&p, align, size) != 0) return nullptr;
    if (zero) memset(p, 0, size);
  } else {
    p = zero ? calloc(1, size) : malloc(size);
  }
  return p;
#endif
}

inline void backend_free(void *p, size_t size) {
#ifdef UKERN_JEMALLOC
  if (size)
    sdallocx(p, size, 0);
  else
    dallocx(p, 0);
#else
  (void)size;
  free(p);
#endif
}

inline size_t backend_usable(const void *p) {
#ifdef UKERN_JEMALLOC
  return sallocx(const_cast<void *>(p), 0);
#else
  return malloc_usable_size(const_cast<void *>(p));
#endif
}

inline void check_gfp(gfp_t flags) {
  if (gfpflags_allow_blocking(flags)) might_sleep();
}

}  // namespace

long slab_nr_allocated(struct kmem_cache *s) { return registry().Sum(s->index, false); }
long slab_nr_tallocated(struct kmem_cache *s) { return registry().Sum(s->index, true); }
long kmalloc_nr_allocated() { return registry().Sum(kKmallocSlot, false); }
const char *kmem_cache_name(struct kmem_cache *s) { return s->name.c_str(); }

long slab_total_allocated() {
  long s = 0;
  for (int i = 0; i < kMaxCaches; i++) s += registry().Sum(i, false);
  return s;
}

}  // namespace uk

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
	uk::registry().Release(s->index);
	delete s;
}

uk::any_ptr kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
	void *p;

	uk::check_gfp(flags);
	if (unlikely(uk::should_failslab_cache(s->name.c_str(), s->object_size, flags)))
		return uk::any_ptr{ nullptr };
	p = uk::backend_alloc(s->object_size, s->align, flags & __GFP_ZERO);
	if (unlikely(!p))
		return uk::any_ptr{ nullptr };
	if (s->ctor)
		s->ctor(p);
	uk::count(s->index, 1);
	return uk::any_ptr{ p };
}

void kmem_cache_free(struct kmem_cache *s, void *objp)
{
	if (unlikely(!objp))
		return;
	uk::count(s->index, -1);
	uk::backend_free(objp, s->align > 16 ? 0 : s->object_size);
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
	if (unlikely(uk::should_failslab_cache("kmalloc", size, flags)))
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
