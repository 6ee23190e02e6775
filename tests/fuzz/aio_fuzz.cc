// SPDX-License-Identifier: GPL-2.0-only
// fs/aio.c's system calls in sequences: at most one io_setup() per input,
// then io_submit() of iocbs with every field from the input,
// io_getevents(), io_pgetevents(), io_cancel() and io_destroy(), on the
// null file, a null_blk device, a host tmpfile, a host pipe's two ends, an
// eventfd, a directory and bad descriptors. User pointers come from
// classes: valid, misaligned, across the end of the mapping, unmapped
// (PROT_NONE), kernel range (above TASK_SIZE_MAX) and NULL; counts and
// timeouts from classes too (a call that may wait waits 100 us at most).
//
// Checks: each call returns success or one of its errors; every event is
// an iocb that was submitted and not yet reaped (none twice); at the end
// every submitted iocb has completed exactly once (polls still waiting are
// cancelled first, and their events reaped), the context's request count
// adds up (reqs_available + completed_events == nr_events - 1), and after
// io_destroy() no context, request or slab object is left (checked on
// every 64th input: LeakCheckDue()).
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <utility>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/err.h>

#include "fuzz_common.h"

namespace {

using uk::fuzz::Finding;
using uk::fuzz::Input;

constexpr size_t kPage = 4096;
constexpr int kIocbs = 64;
constexpr int kEvents = 4096;
constexpr int kIovecs = 32;
constexpr size_t kDataSize = 256 * 1024;
constexpr int kMaxOps = 48;
constexpr long kMaxInFlight = 512;

// The user memory: everything the calls are given lives in one mapping
// whose data area ends at a PROT_NONE page, plus a PROT_NONE page alone.
struct Arena {
  struct iocb iocbs[kIocbs];
  struct iocb *ptrs[kIocbs];
  struct iovec iov[kIovecs];
  struct io_event events[kEvents];
  struct timespec ts;
  uint64_t ts_pad[2];  // stays zero
  struct __aio_sigset usig;
  uint64_t sigmask;
  unsigned long ctx_slot;
  alignas(4096) unsigned char data[kDataSize];
};

struct Env {
  Arena *a = nullptr;
  unsigned char *guard = nullptr;     // the page after a->data
  unsigned char *unmapped = nullptr;  // a PROT_NONE page of its own
  int null_fd = -1, nullb_fd = -1, tmp_fd = -1, pipe_rd = -1, pipe_wr = -1;
  int efd = -1, dir_fd = -1;
  struct nullb_device *dev = nullptr;
};

Env &E() {
  static Env *env = [] {
    auto *e = new Env;
    size_t len = (sizeof(Arena) + kPage - 1) / kPage * kPage;
    auto *p = static_cast<unsigned char *>(
        mmap(nullptr, len + 2 * kPage, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) Finding("mmap of the arena failed");
    e->a = reinterpret_cast<Arena *>(p);
    e->guard = p + len;
    e->unmapped = p + len + kPage;
    // data ends where the arena's pages end only if Arena ends with it.
    static_assert(sizeof(Arena) % kPage == 0, "data must end at the guard");
    mprotect(e->guard, 2 * kPage, PROT_NONE);

    e->null_fd = open("/dev/null", O_RDWR);
    if (e->null_fd < 0 ||
        aio_register_file(e->null_fd, &aio_null_file_operations,
                          FMODE_READ | FMODE_WRITE, nullptr))
      Finding("the null file could not be set up");

    null_blk_reset_module_params();
    e->dev = nullb_group_make("fzaio");
    if (IS_ERR_OR_NULL(e->dev)) Finding("nullb_group_make(fzaio) failed");
    const char *attrs[][2] = {{"irqmode", "1"},         {"size", "4"},
                              {"blocksize", "512"},     {"memory_backed", "1"},
                              {"hw_queue_depth", "32"}, {"power", "1"}};
    for (auto &at : attrs)
      if (nullb_attr_store(e->dev, at[0], at[1]) < 0)
        Finding("null_blk attribute %s=%s failed", at[0], at[1]);
    e->nullb_fd = uk::aio_open_blkdev("/dev/ukern/fzaio", O_RDWR | O_DIRECT);
    if (e->nullb_fd < 0) Finding("aio_open_blkdev() gave %d", e->nullb_fd);

    e->tmp_fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
    if (e->tmp_fd < 0) Finding("no tmpfile in /tmp");
    int pfd[2];
    if (pipe2(pfd, O_NONBLOCK | O_CLOEXEC)) Finding("pipe2 failed");
    e->pipe_rd = pfd[0];
    e->pipe_wr = pfd[1];
    e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->dir_fd = open("/", O_RDONLY | O_DIRECTORY);
    if (e->efd < 0 || e->dir_fd < 0) Finding("eventfd or / failed");
    return e;
  }();
  return *env;
}

// The state that inputs could leave to the next: reset before each one.
void ResetFiles(Env &e) {
  char buf[4096];
  while (read(e.pipe_rd, buf, sizeof(buf)) > 0) {
  }
  uint64_t v;
  while (read(e.efd, &v, sizeof(v)) > 0) {
  }
  if (ftruncate(e.tmp_fd, 64 * 1024))
    Finding("ftruncate of the tmpfile failed");
}

enum PtrClass { kValid, kMisaligned, kAcrossEnd, kUnmapped, kKernel, kNull };

// A user pointer for an object of @size at @valid, by class.
uint64_t Ptr(Input &in, void *valid, size_t size, PtrClass *cls = nullptr) {
  Env &e = E();
  uint8_t c = in.u8();
  PtrClass k = static_cast<PtrClass>(c % 8 < 3 ? kValid : c % 8 - 2);
  if (cls) *cls = k;
  auto v = reinterpret_cast<uint64_t>(valid);
  switch (k) {
    case kValid:
      return v;
    case kMisaligned:
      return v + 1 + in.u8() % 7;
    case kAcrossEnd:
      // starts 1 .. size - 1 bytes before the guard page: crosses it
      return reinterpret_cast<uint64_t>(e.guard) - 1 -
             in.u8() % (size > 1 ? size - 1 : 1);
    case kUnmapped:
      return reinterpret_cast<uint64_t>(e.unmapped) + in.u8() % 64;
    case kKernel: {
      static const uint64_t kernel[] = {
          0xffff888000000000ULL, 0xffffffff81000000ULL, 0x0000800000000000ULL,
          0x00007ffffffff000ULL, 0xfffffffffffff000ULL, 0x8000000000000000ULL};
      return kernel[in.u8() % 6] - (in.u8() % 2 ? 8 : 0);
    }
    default:
      return 0;
  }
}

// Whether [p, p + len) lies in the arena's readable part (up to the guard).
bool InArena(uint64_t p, size_t len) {
  Env &e = E();
  auto lo = reinterpret_cast<uint64_t>(e.a);
  auto hi = reinterpret_cast<uint64_t>(e.guard);
  return p >= lo && p <= hi && len <= hi - p;
}

// Whether copying @len bytes from @p must fail: NULL and the first 64 KiB,
// the kernel half, the arena's guard page and the page of its own, or a
// range that starts in the arena and runs into the guard.
bool Faults(uint64_t p, size_t len) {
  Env &e = E();
  auto guard = reinterpret_cast<uint64_t>(e.guard);
  if (p < 0x10000 || p >= 0x00007ffffffff000ULL - len) return true;
  if (p >= guard && p < guard + 2 * kPage) return true;
  return p >= reinterpret_cast<uint64_t>(e.a) && p < guard && p + len > guard;
}

// Any address that is not the process's own memory: the kernel half, or the
// first 64 KiB (below mmap_min_addr). A raw 64-bit value from the input
// could name ukern's heap, which a real program cannot reach.
uint64_t WildPtr(Input &in) {
  uint64_t v = in.u64();
  return in.u8() % 2 ? v | (1ULL << 63) : v & 0xffff;
}

// A data buffer: the valid class is 512-aligned in the data area.
uint64_t DataPtr(Input &in) {
  Env &e = E();
  size_t off = (in.u16() % (kDataSize / 512)) * 512;
  return Ptr(in, e.a->data + off, 8);
}

uint64_t Length(Input &in) {
  switch (in.u8() % 8) {
    case 0:
      return 0;
    case 1:
      return 512;
    case 2:
      return 4096;
    case 3:
      return (in.u8() + 1) * 512;
    case 4:
      return in.u16();
    case 5:
      return ~0ULL - in.u8();
    case 6:
      return 1ULL << (in.u8() % 64);
    default:
      return in.u64();
  }
}

int64_t Offset(Input &in) {
  switch (in.u8() % 6) {
    case 0:
      return 0;
    case 1:
      return (in.u16() % 8192) * 512;
    case 2:
      return in.u16();
    case 3:
      return -static_cast<int64_t>(in.u8()) - 1;
    case 4:
      return static_cast<int64_t>((1ULL << 62) + in.u8() * 512);
    default:
      return static_cast<int64_t>(in.u64());
  }
}

int Fd(Input &in) {
  Env &e = E();
  switch (in.u8() % 12) {
    case 0:
    case 1:
      return e.null_fd;
    case 2:
    case 3:
      return e.nullb_fd;
    case 4:
      return e.tmp_fd;
    case 5:
      return e.pipe_rd;
    case 6:
      return e.pipe_wr;
    case 7:
      return e.efd;
    case 8:
      return e.dir_fd;
    case 9:
      return -1;
    case 10:
      return 1000;  // not open
    default:
      return static_cast<int>(in.u32());
  }
}

void FillIovecs(Input &in, int n) {
  Env &e = E();
  for (int i = 0; i < n && i < kIovecs; i++) {
    e.a->iov[i].iov_base = reinterpret_cast<void *>(DataPtr(in));
    e.a->iov[i].iov_len = in.u8() % 4 ? (in.u8() % 9) * 512 : Length(in);
  }
}

// Builds iocb @i from the input; records whether it is a poll.
void FillIocb(Input &in, int i) {
  Env &e = E();
  struct iocb *cb = &e.a->iocbs[i];
  static const uint16_t kOps[] = {
      IOCB_CMD_PREAD, IOCB_CMD_PWRITE, IOCB_CMD_PREADV, IOCB_CMD_PWRITEV,
      IOCB_CMD_FSYNC, IOCB_CMD_FDSYNC, IOCB_CMD_POLL,   IOCB_CMD_NOOP};
  memset(cb, 0, sizeof(*cb));
  uint8_t o = in.u8();
  cb->aio_lio_opcode = o < 240 ? kOps[o % 8] : in.u16();
  cb->aio_fildes = static_cast<uint32_t>(Fd(in));
  cb->aio_data = (static_cast<uint64_t>(i) << 32) | in.u16();
  uint8_t shape = in.u8();
  if (cb->aio_lio_opcode == IOCB_CMD_POLL && !(shape & 1)) {
    cb->aio_buf = in.u8() % 2 ? POLLIN : POLLOUT;
  } else if ((cb->aio_lio_opcode == IOCB_CMD_PREADV ||
              cb->aio_lio_opcode == IOCB_CMD_PWRITEV) &&
             !(shape & 1)) {
    int n = in.u8() % (kIovecs + 1);
    FillIovecs(in, n);
    cb->aio_buf = Ptr(in, e.a->iov, sizeof(struct iovec) * (n ? n : 1));
    cb->aio_nbytes = in.u8() % 8 ? n : Length(in);
  } else if ((cb->aio_lio_opcode == IOCB_CMD_FSYNC ||
              cb->aio_lio_opcode == IOCB_CMD_FDSYNC) &&
             !(shape & 1)) {
    // all zero, as fsync wants
  } else {
    cb->aio_buf = shape & 2 ? WildPtr(in) : DataPtr(in);
    cb->aio_nbytes = Length(in);
  }
  if (cb->aio_lio_opcode != IOCB_CMD_POLL || (shape & 4))
    cb->aio_offset = (shape & 8) ? Offset(in) : 0;
  if (shape & 16) {
    cb->aio_flags = in.u8() % 4
                        ? (in.u8() & (IOCB_FLAG_RESFD | IOCB_FLAG_IOPRIO))
                        : in.u32();
    cb->aio_resfd = static_cast<uint32_t>(in.u8() % 2 ? E().efd : Fd(in));
    cb->aio_reqprio = in.u16();
  }
  if (shape & 32) cb->aio_rw_flags = in.u8() % 2 ? (in.u8() & 0x7f) : in.u32();
  if (shape & 64) cb->aio_reserved2 = in.u64();
}

// UKERN_FUZZ_TRACE=1: each call and its result on stderr (to read a crash).
bool Tracing() {
  static const bool on = getenv("UKERN_FUZZ_TRACE") != nullptr;
  return on;
}
#define TRACE(...)                               \
  do {                                           \
    if (Tracing()) fprintf(stderr, __VA_ARGS__); \
  } while (0)

bool IsOneOf(long r, std::initializer_list<long> errs) {
  for (long e : errs)
    if (r == e) return true;
  return false;
}

// An iocb submitted and not yet reaped: (user pointer, aio_data) -> count.
using Outstanding = std::map<std::pair<uint64_t, uint64_t>, long>;

struct State {
  unsigned long ctx = 0;
  bool have_ctx = false;
  Outstanding out;
  std::map<std::pair<uint64_t, uint64_t>, bool> is_poll;
  long in_flight = 0;
  // A getevents whose copy faulted part-way has consumed events that the
  // program never saw (the kernel does the same): exactly-once is then
  // checked as at-most-once.
  bool lossy = false;
};

void TakeEvents(State &s, const unsigned char *buf, long n, const char *what) {
  for (long i = 0; i < n; i++) {
    struct io_event ev;
    memcpy(&ev, buf + i * sizeof(ev), sizeof(ev));
    auto key = std::make_pair(static_cast<uint64_t>(ev.obj), ev.data);
    auto it = s.out.find(key);
    if (it == s.out.end())
      Finding(
          "%s: an event for iocb %#llx data %#llx (res %lld) that is not "
          "outstanding",
          what, static_cast<unsigned long long>(ev.obj),
          static_cast<unsigned long long>(ev.data),
          static_cast<long long>(ev.res));
    if (--it->second == 0) s.out.erase(it);
    s.in_flight--;
  }
}

// io_getevents()/io_pgetevents() with arguments from the input.
void GetEvents(Input &in, State &s, bool pget) {
  Env &e = E();
  long min_nr, nr;
  switch (in.u8() % 6) {
    case 0:
      min_nr = 0, nr = in.u8();
      break;
    case 1:
      min_nr = 1, nr = 1 + in.u8();
      break;
    case 2:
      min_nr = in.u8(), nr = in.u8();
      break;
    case 3:
      min_nr = -static_cast<long>(in.u8()) - 1, nr = in.u8();
      break;
    case 4:
      min_nr = 0, nr = -static_cast<long>(in.u8()) - 1;
      break;
    default:
      min_nr = static_cast<long>(in.u64()), nr = static_cast<long>(in.u64());
      break;
  }
  PtrClass ecls;
  uint64_t ev = Ptr(in, e.a->events, sizeof(struct io_event) * 2, &ecls);
  if (ecls == kAcrossEnd)  // whole events only before the guard
    ev = reinterpret_cast<uint64_t>(e.guard) -
         sizeof(struct io_event) * (in.u8() % 4);
  // Timeouts stay short: 0, up to 100 us, or a bad pointer; no timeout, a
  // negative one or one past a second only when the call cannot wait.
  struct timespec *tsp = &e.a->ts;
  uint8_t t = in.u8();
  switch (t % 6) {
    case 0:
      e.a->ts = {0, 0};
      break;
    case 1:
      e.a->ts = {0, static_cast<long>(in.u16() % 100000)};
      break;
    case 2:
      // tv_nsec past a second is added, not rejected, as in the kernel
      e.a->ts = {0, (min_nr <= 0 ? 1000000000L : 0L) + in.u8()};
      break;
    case 3:
      // a negative timeout saturates (ktime_add_safe()): it never expires
      e.a->ts = {min_nr <= 0 ? -1 - static_cast<long>(in.u8()) : 0, 0};
      break;
    case 4:
      // A misaligned pointer reads a timespec shifted over ts and the zero
      // padding after it: a zero ts keeps that one zero too.
      tsp = reinterpret_cast<struct timespec *>(Ptr(in, &e.a->ts, 16));
      if (!tsp && min_nr > 0) tsp = &e.a->ts;  // no timeout: no wait
      e.a->ts = tsp == &e.a->ts ? timespec{0, 1000} : timespec{0, 0};
      break;
    default:
      tsp = min_nr <= 0 ? nullptr : &e.a->ts;
      e.a->ts = {0, 0};
      break;
  }
  long r;
  if (pget) {
    const struct __aio_sigset *usig = nullptr;
    uint8_t u = in.u8();
    if (u % 3) {
      e.a->usig.sigmask =
          u % 3 == 1
              ? nullptr
              : reinterpret_cast<const sigset_t *>(Ptr(in, &e.a->sigmask, 8));
      e.a->sigmask =
          in.u64() & ~(1ULL << (SIGSEGV - 1)) & ~(1ULL << (SIGBUS - 1));
      e.a->usig.sigsetsize = in.u8() % 4 ? 8 : in.u64();
      usig = reinterpret_cast<const struct __aio_sigset *>(
          Ptr(in, &e.a->usig, sizeof(e.a->usig)));
    }
    r = ukern_io_pgetevents(s.ctx, min_nr, nr,
                            reinterpret_cast<struct io_event *>(ev), tsp, usig);
  } else {
    r = ukern_io_getevents(s.ctx, min_nr, nr,
                           reinterpret_cast<struct io_event *>(ev), tsp);
  }
  const char *what = pget ? "io_pgetevents" : "io_getevents";
  TRACE("%s(min_nr %ld, nr %ld) = %ld\n", what, min_nr, nr, r);
  if (r < 0) {
    if (!IsOneOf(r, {-EINVAL, -EFAULT, -EINTR}))
      Finding("%s(min_nr %ld, nr %ld) gave %ld", what, min_nr, nr, r);
    if (r == -EFAULT && ecls == kAcrossEnd) s.lossy = true;
    return;
  }
  if (!s.have_ctx) Finding("%s on no context gave %ld", what, r);
  if (r > nr || (r > 0 && nr <= 0))
    Finding("%s(min_nr %ld, nr %ld) gave %ld events", what, min_nr, nr, r);
  if (r > 0 && (ecls == kUnmapped || ecls == kKernel || ecls == kNull))
    Finding("%s wrote %ld events to a bad pointer %#llx", what, r,
            static_cast<unsigned long long>(ev));
  if (r > 0)
    TakeEvents(s, reinterpret_cast<const unsigned char *>(ev), r, what);
}

void Submit(Input &in, State &s) {
  Env &e = E();
  long nr;
  switch (in.u8() % 6) {
    case 0:
      nr = 1;
      break;
    case 1:
    case 2:
      nr = 1 + in.u8() % 8;
      break;
    case 3:
      nr = 0;
      break;
    case 4:
      nr = -static_cast<long>(in.u8()) - 1;
      break;
    default:
      nr = static_cast<long>(in.u64());
      break;
  }
  // Past the iocbs filled, the array holds NULL: a larger nr stops there.
  int fill = static_cast<int>(nr > 0 && nr < kIocbs ? nr : (nr > 0 ? 8 : 0));
  for (int i = fill; i < kIocbs; i++) e.a->ptrs[i] = nullptr;
  int base = in.u8() % kIocbs;
  std::vector<std::pair<uint64_t, uint64_t>> keys(fill);
  std::vector<bool> poll(fill);
  for (int i = 0; i < fill; i++) {
    int slot = (base + i) % kIocbs;
    FillIocb(in, slot);
    PtrClass c;
    uint64_t p = Ptr(in, &e.a->iocbs[slot], sizeof(struct iocb), &c);
    e.a->ptrs[i] = reinterpret_cast<struct iocb *>(p);
    // A misaligned pointer makes the kernel read a shifted iocb: its key
    // is the pointer and whatever aio_data the shifted bytes hold.
    uint64_t data;
    if (c == kValid || c == kMisaligned) {
      memcpy(
          &data,
          reinterpret_cast<const void *>(p + offsetof(struct iocb, aio_data)),
          sizeof(data));
      uint16_t op;
      memcpy(&op,
             reinterpret_cast<const void *>(
                 p + offsetof(struct iocb, aio_lio_opcode)),
             sizeof(op));
      poll[i] = op == IOCB_CMD_POLL;
    } else {
      data = 0;
    }
    keys[i] = {p, data};
  }
  uint64_t pp = Ptr(in, e.a->ptrs, sizeof(void *) * (fill ? fill : 1));
  // A misaligned array, or one that runs into the guard page, hands the
  // kernel other pointers than ptrs[]: pointers made of the bytes of two
  // neighbours, or of the data area. Key what the kernel will read, and
  // stop nr before a pointer into memory outside the arena (ukern's own
  // heap, the sanitizer's shadow), which a real program could not name.
  if (pp != reinterpret_cast<uint64_t>(e.a->ptrs)) {
    for (int i = 0; i < fill; i++) {
      uint64_t at = pp + i * sizeof(void *);
      if (!InArena(at, sizeof(void *))) break;  // the kernel faults here
      uint64_t q;
      memcpy(&q, reinterpret_cast<const void *>(at), sizeof(q));
      if (InArena(q, sizeof(struct iocb))) {
        keys[i] = {q, 0};
        memcpy(
            &keys[i].second,
            reinterpret_cast<const void *>(q + offsetof(struct iocb, aio_data)),
            sizeof(keys[i].second));
        uint16_t op;
        memcpy(&op,
               reinterpret_cast<const void *>(
                   q + offsetof(struct iocb, aio_lio_opcode)),
               sizeof(op));
        poll[i] = op == IOCB_CMD_POLL;
      } else if (Faults(q, sizeof(struct iocb))) {
        keys[i] = {q, 0};
        poll[i] = false;
      } else {
        if (nr > i) nr = i;
        break;
      }
    }
  }
  // nr first: a count near LONG_MAX would overflow the sum.
  if (nr > 0 && nr < kIocbs && s.in_flight + nr > kMaxInFlight) nr = 0;
  long r = ukern_io_submit(s.ctx, nr, reinterpret_cast<struct iocb **>(pp));
  TRACE("io_submit(nr %ld) = %ld\n", nr, r);
  for (int i = 0; i < fill && Tracing(); i++) {
    const struct iocb *cb = &e.a->iocbs[(base + i) % kIocbs];
    TRACE(
        "  iocb %#llx: op %u fd %d buf %#llx nbytes %#llx off %lld flags %#x "
        "resfd %d prio %u rw_flags %#x\n",
        static_cast<unsigned long long>(keys[i].first), cb->aio_lio_opcode,
        static_cast<int>(cb->aio_fildes),
        static_cast<unsigned long long>(cb->aio_buf),
        static_cast<unsigned long long>(cb->aio_nbytes),
        static_cast<long long>(cb->aio_offset), cb->aio_flags,
        static_cast<int>(cb->aio_resfd), cb->aio_reqprio, cb->aio_rw_flags);
  }
  if (r < 0) {
    if (!IsOneOf(r, {-EINVAL, -EFAULT, -EAGAIN, -EBADF, -EOPNOTSUPP, -ENOMEM,
                     -EPERM}))
      Finding("io_submit(nr %ld) gave %ld", nr, r);
    return;
  }
  if (!s.have_ctx) Finding("io_submit on no context gave %ld", r);
  if (r > nr || r > fill)
    Finding("io_submit(nr %ld) gave %ld with %d iocbs filled", nr, r, fill);
  for (long i = 0; i < r; i++) {
    s.out[keys[i]]++;
    if (poll[i]) s.is_poll[keys[i]] = true;
    s.in_flight++;
  }
}

void Cancel(Input &in, State &s) {
  Env &e = E();
  int slot = in.u8() % kIocbs;
  uint64_t p;
  if (!s.out.empty() && in.u8() % 2) {
    auto it = s.out.begin();
    std::advance(it, in.u8() % s.out.size());
    p = it->first.first;
  } else {
    p = Ptr(in, &e.a->iocbs[slot], sizeof(struct iocb));
  }
  uint64_t res = Ptr(in, &e.a->events[kEvents - 1], sizeof(struct io_event));
  long r = ukern_io_cancel(s.ctx, reinterpret_cast<struct iocb *>(p),
                           reinterpret_cast<struct io_event *>(res));
  TRACE("io_cancel(%#llx) = %ld\n", static_cast<unsigned long long>(p), r);
  if (!IsOneOf(r, {-EINPROGRESS, -EINVAL, -EFAULT, -EAGAIN}))
    Finding("io_cancel gave %ld", r);
  if (r == -EINPROGRESS && !s.have_ctx)
    Finding("io_cancel on no context gave %ld", r);
}

// Reaps until nothing is outstanding (polls cancelled once the rest is in);
// a finding when an iocb's event does not come within 10 s.
void Drain(State &s) {
  Env &e = E();
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 10;
  bool cancelled = false;
  while (!s.out.empty()) {
    e.a->ts = {0, 1000000};
    long r = ukern_io_getevents(s.ctx, 1, kEvents, e.a->events, &e.a->ts);
    // A host signal (libFuzzer's SIGALRM, its check for slow inputs) ends
    // the wait with -EINTR, as a signal ends the kernel's: nothing reaped.
    if (r == -EINTR) r = 0;
    if (r < 0) Finding("draining: io_getevents gave %ld", r);
    TakeEvents(s, reinterpret_cast<const unsigned char *>(e.a->events), r,
               "draining");
    if (r > 0) continue;
    bool only_polls = true;
    for (auto &[key, n] : s.out) only_polls &= s.is_poll.count(key) > 0;
    if (only_polls && !cancelled) {
      for (auto &[key, n] : s.out)
        for (long i = 0; i < n; i++)
          (void)ukern_io_cancel(s.ctx,
                                reinterpret_cast<struct iocb *>(key.first),
                                &e.a->events[kEvents - 1]);
      cancelled = true;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > deadline.tv_sec ||
        (now.tv_sec == deadline.tv_sec && now.tv_nsec > deadline.tv_nsec)) {
      if (s.lossy) return;
      auto &[key, n] = *s.out.begin();
      Finding("%zu iocbs never completed, e.g. %#llx data %#llx (poll %d)",
              s.out.size(), static_cast<unsigned long long>(key.first),
              static_cast<unsigned long long>(key.second),
              static_cast<int>(s.is_poll.count(key)));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Env &e = E();
  static uk::fuzz::Counts base = [&e] {
    // The first context and the first block device read make what stays
    // for the process (the context table, the caches, the bio_set's
    // mempool reserve). Writing the whole memory-backed device gives it
    // all its storage pages now: a later input's write is then no new
    // allocation, so what the device keeps is never counted as a leak.
    unsigned long ctx = 0;
    struct iocb cb = {};
    struct iocb *cbs[1] = {&cb};
    struct io_event ev[1];
    if (ukern_io_setup(1, &ctx)) Finding("the warm-up context failed");
    for (long long off = 0; off < (4LL << 20); off += kDataSize) {
      cb.aio_lio_opcode = IOCB_CMD_PWRITE;
      cb.aio_fildes = static_cast<uint32_t>(e.nullb_fd);
      cb.aio_buf = reinterpret_cast<uint64_t>(e.a->data);
      cb.aio_nbytes = kDataSize;
      cb.aio_offset = off;
      if (ukern_io_submit(ctx, 1, cbs) != 1 ||
          ukern_io_getevents(ctx, 1, 1, ev, nullptr) != 1 ||
          ev[0].res != static_cast<long long>(kDataSize))
        Finding("the warm-up write at %lld failed", off);
    }
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_nbytes = 512;
    cb.aio_offset = 0;
    if (ukern_io_submit(ctx, 1, cbs) != 1 ||
        ukern_io_getevents(ctx, 1, 1, ev, nullptr) != 1 ||
        ukern_io_destroy(ctx))
      Finding("the warm-up context failed");
    uk::fuzz::Settle(true);
    (void)uk::fuzz::CacheDiff();
    return uk::fuzz::Count();
  }();
  Input in(data, size);
  State s;

  ResetFiles(e);
  // io_setup: nr_events and the context pointer by class.
  uint8_t c = in.u8();
  if (c % 4) {
    unsigned nr_events;
    switch (in.u8() % 6) {
      case 0:
        nr_events = 0;
        break;
      case 1:
        nr_events = 1 + in.u8() % 8;
        break;
      case 2:
        nr_events = 1 + in.u8();
        break;
      case 3:
        nr_events = 0x10000000U / 32 + in.u8() % 2;
        break;
      case 4:
        nr_events = 65536 + in.u8();
        break;
      default:
        nr_events = in.u32();
        break;
    }
    e.a->ctx_slot = in.u8() % 8 ? 0 : in.u64();
    unsigned long before = e.a->ctx_slot;
    PtrClass cls;
    uint64_t p = Ptr(in, &e.a->ctx_slot, 8, &cls);
    long r = ukern_io_setup(nr_events, reinterpret_cast<unsigned long *>(p));
    TRACE("io_setup(%u) = %ld\n", nr_events, r);
    if (r == 0) {
      if (cls != kValid && cls != kMisaligned)
        Finding("io_setup wrote a context to a bad pointer %#llx",
                static_cast<unsigned long long>(p));
      if (before != 0 && cls == kValid)
        Finding("io_setup over a non-zero *ctxp succeeded");
      memcpy(&s.ctx, reinterpret_cast<const void *>(p), sizeof(s.ctx));
      s.have_ctx = true;
    } else if (!IsOneOf(r, {-EINVAL, -EAGAIN, -EFAULT, -ENOMEM})) {
      Finding("io_setup(%u) gave %ld", nr_events, r);
    }
  }
  if (!s.have_ctx) s.ctx = c % 2 ? WildPtr(in) : 0;

  for (int ops = 0; ops < kMaxOps && !in.empty(); ops++) {
    switch (in.u8() % 8) {
      case 0:
      case 1:
      case 2:
        Submit(in, s);
        break;
      case 3:
      case 4:
        GetEvents(in, s, false);
        break;
      case 5:
        GetEvents(in, s, true);
        break;
      case 6:
        Cancel(in, s);
        break;
      default: {
        // io_destroy of another id: the context stays.
        unsigned long id = in.u8() % 2 ? s.ctx + 1 + in.u8() : WildPtr(in);
        if (id == s.ctx) break;
        long r = ukern_io_destroy(id);
        if (r != -EINVAL)
          Finding("io_destroy(%#lx) of no context gave %ld", id, r);
        break;
      }
    }
  }

  if (s.have_ctx) {
    Drain(s);
    uk::aio::CtxInfo info;
    if (uk::aio::ctx_info(s.ctx, &info)) Finding("ctx_info failed");
    // Every ring slot but one is either available (globally or in a CPU's
    // batch) or held by a completed event not yet refilled.
    unsigned avail = info.reqs_available_global + info.reqs_available_percpu +
                     info.completed_events;
    if (!s.lossy && avail != info.nr_events - 1)
      Finding(
          "reqs_available %u + per-CPU %u + completed %u != nr_events %u - 1",
          info.reqs_available_global, info.reqs_available_percpu,
          info.completed_events, info.nr_events);
    long r = ukern_io_destroy(s.ctx);
    if (r != 0) Finding("io_destroy of the live context gave %ld", r);
    r = ukern_io_destroy(s.ctx);
    if (r != -EINVAL) Finding("a second io_destroy gave %ld", r);
  }
  if (uk::fuzz::LeakCheckDue()) {
    uk::fuzz::Settle(true);
    uk::fuzz::CheckNoLeak("the input", base, uk::fuzz::Count());
  }
  return 0;
}
