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

class PercpuAllocator {
 public:
  void *Alloc(size_t size, size_t align) {
    std::lock_guard<std::mutex> g(mu_);
    if (base_ == nullptr && !Map()) return nullptr;
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
      if (start + block > kUnitSize) return nullptr;  // unit exhausted
      off = start;
      top_ = start + block;
      ScanForLeaks();
    }
    sizes_[off] = block;
    in_use_ += block;
    return base_ + off;
  }

  void Free(void *ptr) {
    std::lock_guard<std::mutex> g(mu_);
    size_t off = static_cast<char *>(ptr) - base_;
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
    constexpr size_t kStep = size_t{64} << 10;
    size_t want = (top_ + kStep - 1) & ~(kStep - 1);
    if (want <= scanned_) return;
    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
      __lsan_register_root_region(base_ + cpu * kUnitSize + scanned_,
                                  want - scanned_);
    scanned_ = want;
#endif
  }

  bool Map() {
    void *p = mmap(nullptr, kUnitSize * NR_CPUS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      perror("ukern: percpu area");
      return false;
    }
    base_ = static_cast<char *>(p);
    return true;
  }

  std::mutex mu_;
  char *base_ = nullptr;
  size_t top_ = 0;
  size_t scanned_ = 0;  // bytes of each unit registered with LeakSanitizer
  size_t in_use_ = 0;
  std::map<size_t, std::vector<size_t>> free_;
  std::unordered_map<size_t, size_t> sizes_;
};

PercpuAllocator &allocator() {
  static PercpuAllocator *a = new PercpuAllocator;  // never destroyed
  return *a;
}

}  // namespace

void *percpu_alloc(size_t size, size_t align, gfp_t gfp) {
  if (gfp != 0 && should_failslab_percpu(size, gfp)) return nullptr;
  return allocator().Alloc(size, align);
}

void percpu_free(void *ptr) {
  if (ptr != nullptr) allocator().Free(ptr);
}

size_t percpu_bytes_in_use() { return allocator().InUse(); }

}  // namespace uk
