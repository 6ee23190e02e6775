// SPDX-License-Identifier: GPL-2.0-only
// mm/percpu.c in miniature: a unit allocator over one reserved mapping.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <uk/linux/kernel.h>
#include <uk/linux/percpu.h>
#include <uk/linux/fault-inject.h>

#ifdef UK_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace uk {
namespace {

constexpr size_t kUnitSize = size_t{1} << PERCPU_UNIT_SHIFT;
constexpr size_t kMinClass = 8;
constexpr size_t kMaxClass = 4096;  // larger blocks: exact-size free lists

// The whole per-CPU area: NR_CPUS units. Its start is a multiple of its
// size, which lets a single bit of a unit-0 address (PERCPU_COUNTER_BIT)
// say which arena the address belongs to.
char *MapArea() {
  const size_t area = kUnitSize * NR_CPUS;
  void *p = mmap(nullptr, area * 2, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    perror("ukern: percpu area");
    return nullptr;  // every allocation fails with NULL, as before
  }
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + area - 1) & ~(area - 1);
  if (aligned > start) munmap(p, aligned - start);
  uintptr_t end = start + area * 2;
  if (end > aligned + area)
    munmap(reinterpret_cast<void *>(aligned + area), end - aligned - area);
  return reinterpret_cast<char *>(aligned);
}

char *Area() {
  static char *base = MapArea();
  return base;
}

// Hands out blocks of one arena: offsets [first, limit) of every unit.
class PercpuAllocator {
 public:
  PercpuAllocator(size_t first, size_t limit, bool scan)
      : top_(first), limit_(limit), scan_(scan), scanned_(first) {}

  void *Alloc(size_t size, size_t align) {
    std::lock_guard<std::mutex> g(mu_);
    char *base = Area();
    if (base == nullptr) return nullptr;
    if (size == 0) size = 1;
    if (align == 0) align = 1;
    size_t block = BlockSize(size, align);
    size_t off;
    auto &list = free_[block];
    // A freed block of the right size class may still be too weakly
    // aligned for this request (it was carved for a smaller alignment).
    auto fit = list.end();
    for (auto it = list.end(); it != list.begin();) {
      --it;
      if ((*it & (align - 1)) == 0) {
        fit = it;
        break;
      }
    }
    if (fit != list.end()) {
      off = *fit;
      *fit = list.back();
      list.pop_back();
    } else {
      size_t a = block <= kMaxClass ? std::min<size_t>(block, 64) : 64;
      if (align > a) a = align;
      size_t start = (top_ + a - 1) & ~(a - 1);
      if (start + block > limit_) return nullptr;  // arena exhausted
      off = start;
      top_ = start + block;
      ScanForLeaks();
    }
    sizes_[off] = block;
    in_use_ += block;
    return base + off;
  }

  void Free(void *ptr) {
    std::lock_guard<std::mutex> g(mu_);
    size_t off = static_cast<char *>(ptr) - Area();
    auto it = sizes_.find(off);
    BUG_ON(it == sizes_.end());  // not a percpu pointer, or freed twice
    size_t block = it->second;
    sizes_.erase(it);
    // Freed copies are zeroed on every CPU that ever existed, so that a
    // later allocation of the block starts zeroed everywhere.
    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
      memset(percpu_cpu_addr(ptr, cpu), 0, block);
    free_[block].push_back(off);
    in_use_ -= block;
  }

  size_t InUse() {
    std::lock_guard<std::mutex> g(mu_);
    return in_use_;
  }

 private:
  static size_t BlockSize(size_t size, size_t align) {
    size_t s = size < kMinClass ? kMinClass : size;
    if (s <= kMaxClass) {
      size_t c = kMinClass;
      while (c < s) c <<= 1;
      return c < align ? align : c;
    }
    return (s + 63) & ~size_t{63};
  }

  // LeakSanitizer scans the heap, globals, stacks and TLS, not anonymous
  // mappings: objects referenced only from per-CPU data (radix-tree preload
  // pools, say) would be reported as leaked. Register the used part of every
  // unit as a root region, in 64 KiB steps.
  void ScanForLeaks() {
#ifdef UK_ASAN
    if (!scan_) return;
    constexpr size_t kStep = size_t{64} << 10;
    size_t want = (top_ + kStep - 1) & ~(kStep - 1);
    if (want <= scanned_) return;
    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
      __lsan_register_root_region(Area() + cpu * kUnitSize + scanned_,
                                  want - scanned_);
    scanned_ = want;
#endif
  }

  std::mutex mu_;
  size_t top_;
  const size_t limit_;
  // Used under ASan only.
  [[maybe_unused]] const bool scan_;  // register the used part with LSan
  [[maybe_unused]] size_t scanned_;   // end of the part registered so far
  size_t in_use_ = 0;
  std::map<size_t, std::vector<size_t>> free_;
  std::unordered_map<size_t, size_t> sizes_;
};

constexpr size_t kCounterStart = PERCPU_COUNTER_BIT;
static_assert(kCounterStart < kUnitSize);

// Ordinary per-CPU data in the low half of each unit; counters (which hold
// no pointers, so LeakSanitizer need not scan them) in the high half.
PercpuAllocator &allocator(bool counter) {
  static PercpuAllocator *data =  // never destroyed
      new PercpuAllocator(0, kCounterStart, /*scan=*/true);
  static PercpuAllocator *counters =
      new PercpuAllocator(kCounterStart, kUnitSize, /*scan=*/false);
  return counter ? *counters : *data;
}

bool IsCounter(const void *ptr) {
  return reinterpret_cast<uintptr_t>(ptr) & PERCPU_COUNTER_BIT;
}

}  // namespace

void *percpu_alloc(size_t size, size_t align, gfp_t gfp) {
  if ((gfp & ~__GFP_PCPU_COUNTER) != 0 && should_failslab_percpu(size, gfp))
    return nullptr;
  return allocator(gfp & __GFP_PCPU_COUNTER).Alloc(size, align);
}

void percpu_free(void *ptr) {
  if (ptr != nullptr) allocator(IsCounter(ptr)).Free(ptr);
}

size_t percpu_bytes_in_use() {
  return allocator(false).InUse() + allocator(true).InUse();
}

}  // namespace uk
