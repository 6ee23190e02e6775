// SPDX-License-Identifier: GPL-2.0-only
//
// RCU grace periods, call_rcu() and the reader registry (the API of
// kernel/rcu/tree.c and include/linux/rcupdate.h; the algorithm of
// liburcu's memb flavour). The read-side fast paths live in
// <uk/linux/rcupdate.h>; docs/rcu.md describes the design.
//
// Reader word: nesting count in the low RCU_NEST_BITS bits, the global
// grace-period counter (rcu_gp_ctr, a multiple of RCU_GP_CTR_INC) above
// them, copied in by the outermost rcu_read_lock(). A grace period:
//
//   rcu_smp_mb_master()          all earlier updates visible to new readers
//   rcu_gp_ctr += RCU_GP_CTR_INC readers that start from now on are "new"
//   wait until no registered reader is inside a section whose snapshot is
//   older than the new counter value
//   rcu_smp_mb_master()          readers' loads done before we return
//
// liburcu flips a single phase bit and therefore needs two waits per grace
// period; our counter is 48 bits wide and never wraps in practice, so one
// wait suffices, and the counter doubles as the cookie of the polled API.
//
// Callbacks: call_rcu() pushes onto a lock-free per-CPU list. One thread
// ("rcuc") takes all lists, waits for a grace period, then invokes each
// CPU's callbacks in that CPU's softirq context (uk::run_in_softirq), as
// RCU_SOFTIRQ would. rcu_barrier() waits for the callback batch that starts
// after it.
//
// ThreadSanitizer does not see membarrier() or fences: each outermost
// rcu_read_unlock() does __tsan_release(&reader), the end of every grace
// period __tsan_acquire()s every reader (and the readers that exited), and
// call_rcu() releases on the rcu_head that the callback thread acquires
// just before invoking it.

#include <linux/futex.h>
#include <linux/membarrier.h>
#define KBUILD_MODNAME "rcu"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>

#include <uk/linux/kernel.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/printk.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>
#include <uk/shim/cpu.h>

namespace uk {

constinit thread_local RcuReader rcu_reader
    __attribute__((tls_model("initial-exec")));
unsigned long rcu_gp_ctr = RCU_GP_CTR_INC;
unsigned long rcu_gp_ctr_reader = RCU_GP_CTR_INC + 1;
int rcu_gp_futex;
bool rcu_has_membarrier;

namespace {

// ---- basics ----

long sys_membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

long futex_wait_int(int *word, int expected) {
  return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr,
                 nullptr, 0);
}

long futex_wake_int(int *word, int n) {
  return syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
}

template <typename T>
void atomic_max(T *p, T v) {
  T cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (cur < v &&
         !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
  }
}

// The writer's half of the barrier pairing (liburcu smp_mb_master): with
// membarrier every running thread of the process executes a full barrier,
// which upgrades the compiler barriers of the readers' fast paths; without
// it, readers carry RCU_READER_SLOW and fence in rcu_read_lock_slow() and
// rcu_read_unlock_slow().
void rcu_smp_mb_master() {
  smp_mb();
  if (__atomic_load_n(&rcu_has_membarrier, __ATOMIC_RELAXED)) {
    if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
      // rcu_init() registered the process, so a failure here is a broken
      // invariant; the readers depend on this barrier, hence abort.
      fprintf(stderr, "ukern: BUG: membarrier() failed after registration\n");
      abort();
    }
  }
  smp_mb();
}

void rcu_atfork_child();

// rcu.membarrier=0 (UKERN_CMDLINE) keeps readers on full barriers: read
// once, when RCU first starts.
bool rcu_membarrier = true;
// clang-format off
module_param_named(membarrier, rcu_membarrier, bool, 0444);
MODULE_PARM_DESC(membarrier, "Readers use compiler barriers and the writer sys_membarrier() (if the host has it); N: full barriers in the readers");
// clang-format on

void rcu_init() {
  bool use = rcu_membarrier;
  if (use) {
    long cmds = sys_membarrier(MEMBARRIER_CMD_QUERY);
    use = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
          sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }
  __atomic_store_n(&rcu_has_membarrier, use, __ATOMIC_SEQ_CST);
  pthread_atfork(nullptr, nullptr, rcu_atfork_child);
}

std::once_flag init_once;

inline void rcu_init_once() { std::call_once(init_once, rcu_init); }

// ---- reader registry ----

std::mutex registry_lock;  // guards registry and nr_registered
RcuReader *registry;       // doubly linked through RcuReader::next/prev
int nr_registered;
#ifdef UK_TSAN
char retired_sync;  // readers that exited release onto this
#endif

void registry_link(RcuReader *r) {
  r->prev = nullptr;
  r->next = registry;
  if (registry) registry->prev = r;
  registry = r;
  nr_registered++;
}

void registry_unlink(RcuReader *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    registry = r->next;
  if (r->next) r->next->prev = r->prev;
  r->next = r->prev = nullptr;
  nr_registered--;
}

void rcu_unregister_reader() {
  RcuReader &r = rcu_reader_self();
  if (!r.registered) return;
  WARN(r.ctr & RCU_NEST_MASK,
       "ukern: thread exits inside an RCU read-side critical section\n");
#ifdef UK_TSAN
  __tsan_release(&retired_sync);
#endif
  std::lock_guard<std::mutex> g(registry_lock);
  registry_unlink(&r);
  r.registered = false;
  // Idle, and back on the slow path should the thread's last destructors
  // read under RCU: they register it again.
  __atomic_store_n(&r.ctr, RCU_READER_SLOW, __ATOMIC_RELAXED);
}

struct ReaderExitHook {
  ReaderExitHook() {}
  ~ReaderExitHook() { rcu_unregister_reader(); }
};

// ---- grace periods ----

std::mutex gp_lock;  // one grace period at a time (liburcu rcu_gp_lock)
unsigned long gp_completed = RCU_GP_CTR_INC;

// Spins (cheap rescans) before a writer sleeps: hosts have few cores and
// many threads, so yield early rather than burn the reader's CPU.
constexpr int kActiveAttempts = 8;
constexpr int kYieldAttempts = 16;

// True if some registered reader (`skip` excepted) is in a critical section
// whose snapshot is older than grace period `gp`. Caller holds registry_lock.
bool readers_busy(unsigned long gp, const RcuReader *skip) {
  for (RcuReader *r = registry; r; r = r->next) {
    if (r == skip) continue;
    unsigned long c = __atomic_load_n(&r->ctr, __ATOMIC_RELAXED);
    if ((c & RCU_NEST_MASK) && (c & ~(RCU_NEST_MASK | RCU_READER_SLOW)) < gp)
      return true;
  }
  return false;
}

void wait_for_readers(unsigned long gp) {
  // synchronize_rcu() inside a reader already WARNed; do not wait for it.
  const RcuReader *skip = rcu_read_lock_held() ? &rcu_reader_self() : nullptr;
  for (int attempt = 0;; attempt++) {
    {
      std::lock_guard<std::mutex> g(registry_lock);
      if (!readers_busy(gp, skip)) {
        __atomic_store_n(&rcu_gp_futex, 0, __ATOMIC_RELAXED);
#ifdef UK_TSAN
        // The grace period is over: everything the readers did inside
        // their sections happens before what the updater does next.
        for (RcuReader *r = registry; r; r = r->next) __tsan_acquire(r);
        __tsan_acquire(&retired_sync);
#endif
        return;
      }
    }
#ifdef UKERN_EXPLORE
    // A task of the explorer waits for the readers without leaving its
    // control: every cpu_relax() is a scheduling point that lets them run,
    // where a host yield or futex sleep would stop the schedule.
    if (uk::sched_hook != nullptr) {
      cpu_relax();
      continue;
    }
#endif
    if (attempt < kActiveAttempts) {
      for (int i = 0; i < 64; i++) cpu_relax();
      continue;
    }
    if (attempt < kYieldAttempts) {
      sched_yield();
      continue;
    }
    // Announce that we sleep, then look again: the store of -1 and the
    // readers' ctr loads are ordered by a master barrier that pairs with
    // the slave barrier between a reader's unlock store and its load of
    // rcu_gp_futex in __rcu_read_unlock().
    __atomic_store_n(&rcu_gp_futex, -1, __ATOMIC_RELAXED);
    rcu_smp_mb_master();
    bool busy;
    {
      std::lock_guard<std::mutex> g(registry_lock);
      busy = readers_busy(gp, skip);
    }
    if (!busy) continue;  // the next pass returns
    if (__atomic_load_n(&rcu_gp_futex, __ATOMIC_RELAXED) == -1)
      futex_wait_int(&rcu_gp_futex, -1);
  }
}

// One full grace period. Caller holds gp_lock.
void rcu_gp_run() {
  // Pairs with the slave barrier after the reader's ctr store in
  // __rcu_read_lock(): a reader whose store we miss below sees every
  // update made before this point.
  rcu_smp_mb_master();
  unsigned long gp =
      __atomic_load_n(&rcu_gp_ctr, __ATOMIC_RELAXED) + RCU_GP_CTR_INC;
  __atomic_store_n(&rcu_gp_ctr_reader, gp + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&rcu_gp_ctr, gp, __ATOMIC_SEQ_CST);
  smp_mb();
  wait_for_readers(gp);
  // Pairs with the slave barrier before the reader's unlock store in
  // __rcu_read_unlock(): the readers' loads are done before we free.
  rcu_smp_mb_master();
  // Pairs with the acquire in poll_state_synchronize_rcu().
  __atomic_store_n(&gp_completed, gp, __ATOMIC_RELEASE);
}

// Waits until grace period `target` (a cookie from get_state) is over,
// running it ourselves unless another updater already has.
void rcu_wait_gp(unsigned long target) {
  std::unique_lock<std::mutex> g(gp_lock, std::defer_lock);
#ifdef UKERN_EXPLORE
  // A task of the explorer may find the lock held by another task that it
  // parked inside the grace period (at its smp_mb() or its reader wait):
  // spin at scheduling points until that task has run and let go.
  if (uk::sched_hook != nullptr) {
    while (!g.try_lock()) cpu_relax();
  }
#endif
  if (!g.owns_lock()) g.lock();
  while (__atomic_load_n(&gp_completed, __ATOMIC_ACQUIRE) < target)
    rcu_gp_run();
}

// ---- callbacks ----

struct alignas(64) CbQueue {
  struct rcu_head *head;  // LIFO, pushed by call_rcu()
};
CbQueue cb_queues[NR_CPUS];

long cb_pending;                 // queued and not yet returned
unsigned long cb_batch_started;  // written by the callback thread only
unsigned long cb_batch_done;     // batches fully invoked
uint32_t cb_done_seq;            // futex word: bumped after each batch
int cb_barrier_waiters;
unsigned long cb_barrier_target;  // run batches until done reaches it
unsigned long cb_poll_target;     // start_poll_synchronize_rcu() cookies
bool cb_sleeping;
uint32_t cb_wake_seq;  // futex word the callback thread sleeps on
bool cb_thread_started;
std::mutex cb_start_lock;
thread_local bool in_cb_thread;

// Callbacks per softirq invocation, like the kernel's blimit batches.
constexpr int kCbBatchLimit = 256;

bool cb_more_work() {
  for (int cpu = 0; cpu < NR_CPUS; cpu++)
    if (__atomic_load_n(&cb_queues[cpu].head, __ATOMIC_SEQ_CST)) return true;
  if (__atomic_load_n(&cb_barrier_target, __ATOMIC_SEQ_CST) >
      __atomic_load_n(&cb_batch_done, __ATOMIC_RELAXED))
    return true;
  return __atomic_load_n(&cb_poll_target, __ATOMIC_SEQ_CST) >
         __atomic_load_n(&gp_completed, __ATOMIC_ACQUIRE);
}

void cb_wake(bool force) {
  if (!force && !__atomic_load_n(&cb_sleeping, __ATOMIC_SEQ_CST)) return;
  if (__atomic_exchange_n(&cb_sleeping, false, __ATOMIC_SEQ_CST)) {
    __atomic_fetch_add(&cb_wake_seq, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &cb_wake_seq, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
            0);
  }
}

void cb_invoke(int cpu, struct rcu_head *list) {
  while (list) {
    long n = 0;
    run_in_softirq(cpu, [&] {
      while (list && n < kCbBatchLimit) {
        struct rcu_head *head = list;
        list = head->next;
#ifdef UK_TSAN
        __tsan_acquire(head);
#endif
        unsigned long off = reinterpret_cast<unsigned long>(head->func);
        if (__is_kvfree_rcu_offset(off))
          kvfree(reinterpret_cast<char *>(head) - off);
        else
          head->func(head);
        n++;
      }
    });
    // Pairs with the acquire in rcu_barrier()'s fast path.
    __atomic_fetch_sub(&cb_pending, n, __ATOMIC_RELEASE);
  }
}

void cb_thread_main() {
  pthread_setname_np(pthread_self(), "rcuc");
  in_cb_thread = true;
  struct rcu_head *lists[NR_CPUS];
  for (;;) {
    unsigned long batch = cb_batch_started + 1;
    __atomic_store_n(&cb_batch_started, batch, __ATOMIC_SEQ_CST);
    bool any = false;
    for (int cpu = 0; cpu < NR_CPUS; cpu++) {
      lists[cpu] =
          __atomic_exchange_n(&cb_queues[cpu].head, nullptr, __ATOMIC_SEQ_CST);
      any |= lists[cpu] != nullptr;
    }
    if (any) {
      rcu_wait_gp(get_state_synchronize_rcu());
      for (int cpu = 0; cpu < NR_CPUS; cpu++) {
        // Pushed LIFO: reverse so callbacks run in call_rcu() order.
        struct rcu_head *fifo = nullptr, *h = lists[cpu];
        while (h) {
          struct rcu_head *next = h->next;
          h->next = fifo;
          fifo = h;
          h = next;
        }
        if (fifo) cb_invoke(cpu, fifo);
      }
    } else {
      unsigned long poll = __atomic_load_n(&cb_poll_target, __ATOMIC_SEQ_CST);
      if (poll > __atomic_load_n(&gp_completed, __ATOMIC_ACQUIRE))
        rcu_wait_gp(poll);
    }
    __atomic_store_n(&cb_batch_done, batch, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&cb_done_seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&cb_barrier_waiters, __ATOMIC_SEQ_CST) > 0)
      syscall(SYS_futex, &cb_done_seq, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
              nullptr, 0);
    if (any) continue;
    // Sleep until call_rcu(), rcu_barrier() or a poll request wakes us.
    uint32_t seq = __atomic_load_n(&cb_wake_seq, __ATOMIC_SEQ_CST);
    __atomic_store_n(&cb_sleeping, true, __ATOMIC_SEQ_CST);
    if (cb_more_work()) {
      __atomic_store_n(&cb_sleeping, false, __ATOMIC_SEQ_CST);
      continue;
    }
    syscall(SYS_futex, &cb_wake_seq, FUTEX_WAIT_PRIVATE, seq, nullptr, nullptr,
            0);
  }
}

void cb_thread_ensure() {
  if (likely(__atomic_load_n(&cb_thread_started, __ATOMIC_ACQUIRE))) return;
  std::lock_guard<std::mutex> g(cb_start_lock);
  if (cb_thread_started) return;
  rcu_init_once();
  std::thread(cb_thread_main).detach();
  __atomic_store_n(&cb_thread_started, true, __ATOMIC_RELEASE);
}

// fork() child: the thread that called fork() is the only one left. Drop the
// reader words of the threads that did not come along, the callback thread,
// and any lock one of those threads may have been holding.
void rcu_atfork_child() {
  new (&registry_lock) std::mutex;
  new (&gp_lock) std::mutex;
  new (&cb_start_lock) std::mutex;
  registry = nullptr;
  nr_registered = 0;
  if (rcu_reader_self().registered) registry_link(&rcu_reader_self());
  rcu_gp_futex = 0;
  cb_sleeping = false;
  cb_barrier_waiters = 0;
  cb_thread_started = false;
  if (rcu_has_membarrier &&
      sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    rcu_has_membarrier = false;
    rcu_reader_self().ctr |= RCU_READER_SLOW;  // fence from now on
  }
}

}  // namespace

namespace {

void rcu_register_reader() {
  rcu_init_once();
  thread_local ReaderExitHook exit_hook;
  (void)&exit_hook;
  RcuReader &r = rcu_reader_self();
  std::lock_guard<std::mutex> g(registry_lock);
  if (r.registered) return;
  registry_link(&r);
  r.registered = true;
  // With membarrier the fast paths serve this thread from now on.
  unsigned long c = __atomic_load_n(&r.ctr, __ATOMIC_RELAXED);
  if (__atomic_load_n(&rcu_has_membarrier, __ATOMIC_RELAXED))
    c &= ~RCU_READER_SLOW;
  __atomic_store_n(&r.ctr, c, __ATOMIC_RELAXED);
}

}  // namespace

void rcu_unregister_thread() { rcu_unregister_reader(); }

// The outermost rcu_read_lock() of a thread that is not registered yet, or
// of any thread without membarrier; and nested ones under RCU_READER_SLOW.
void rcu_read_lock_slow() {
  RcuReader &r = rcu_reader_self();
  if (unlikely(!r.registered)) rcu_register_reader();
  unsigned long c = __atomic_load_n(&r.ctr, __ATOMIC_RELAXED);
  if (c & RCU_NEST_MASK) {
    __atomic_store_n(&r.ctr, c + 1, __ATOMIC_RELAXED);
    return;
  }
  unsigned long slow = c & RCU_READER_SLOW;
  __atomic_store_n(&r.ctr,
                   __atomic_load_n(&rcu_gp_ctr_reader, __ATOMIC_RELAXED) | slow,
                   __ATOMIC_RELAXED);
  // Pairs with the first rcu_smp_mb_master() of a grace period.
  if (slow)
    smp_mb();
  else
    barrier();
}

// The outermost rcu_read_unlock() without membarrier, nested ones under
// RCU_READER_SLOW, and unbalanced ones.
void rcu_read_unlock_slow() {
  RcuReader &r = rcu_reader_self();
  unsigned long c = __atomic_load_n(&r.ctr, __ATOMIC_RELAXED);
  if (WARN(!(c & RCU_NEST_MASK),
           "ukern: rcu_read_unlock() without rcu_read_lock()\n"))
    return;
  if ((c & RCU_NEST_MASK) > 1) {
    __atomic_store_n(&r.ctr, c - 1, __ATOMIC_RELAXED);
    return;
  }
  // Pairs with the last rcu_smp_mb_master() of a grace period.
  smp_mb();
#ifdef UK_TSAN
  __tsan_release(&r);
#endif
  __atomic_store_n(&r.ctr, c & RCU_READER_SLOW, __ATOMIC_RELAXED);
  // Pairs with the rcu_smp_mb_master() a writer issues before it sleeps.
  smp_mb();
  if (__atomic_load_n(&rcu_gp_futex, __ATOMIC_RELAXED) == -1) rcu_wake_up_gp();
}

void rcu_wake_up_gp() {
  if (__atomic_load_n(&rcu_gp_futex, __ATOMIC_RELAXED) == -1) {
    __atomic_store_n(&rcu_gp_futex, 0, __ATOMIC_RELAXED);
    futex_wake_int(&rcu_gp_futex, 1);
  }
}

int rcu_nr_registered_readers() {
  std::lock_guard<std::mutex> g(registry_lock);
  return nr_registered;
}

}  // namespace uk

using namespace uk;

unsigned long get_state_synchronize_rcu(void) {
  rcu_init_once();
  // Updates before this call are ordered before the counter read, so any
  // grace period that starts after it covers them.
  smp_mb();
  return __atomic_load_n(&rcu_gp_ctr, __ATOMIC_SEQ_CST) + RCU_GP_CTR_INC;
}

bool poll_state_synchronize_rcu(unsigned long oldstate) {
  if (oldstate <= __atomic_load_n(&gp_completed, __ATOMIC_ACQUIRE)) {
    smp_mb();  // the caller's frees come after the grace period
    return true;
  }
  return false;
}

unsigned long start_poll_synchronize_rcu(void) {
  unsigned long s = get_state_synchronize_rcu();
  atomic_max(&cb_poll_target, s);
  cb_thread_ensure();
  cb_wake(true);
  return s;
}

void synchronize_rcu(void) {
  might_sleep();
  WARN(rcu_read_lock_held(),
       "ukern: Illegal synchronize_rcu() in RCU read-side critical section\n");
  rcu_wait_gp(get_state_synchronize_rcu());
  smp_mb();
}

void synchronize_rcu_expedited(void) { synchronize_rcu(); }

void cond_synchronize_rcu(unsigned long oldstate) {
  if (!poll_state_synchronize_rcu(oldstate)) synchronize_rcu();
}

void (*uk::call_rcu_hook)(struct rcu_head *head);

void call_rcu(struct rcu_head *head, rcu_callback_t func) {
  head->func = func;
  if (unlikely(uk::call_rcu_hook != nullptr)) {
    uk::call_rcu_hook(head);
    return;
  }
#ifdef UK_TSAN
  // Everything the caller did to the object happens before the callback.
  __tsan_release(head);
#endif
  __atomic_fetch_add(&cb_pending, 1, __ATOMIC_RELAXED);
  unsigned int cpu = raw_smp_processor_id();
  CbQueue &q = cb_queues[cpu < NR_CPUS ? cpu : 0];
  struct rcu_head *old = __atomic_load_n(&q.head, __ATOMIC_RELAXED);
  do {
    head->next = old;
  } while (!__atomic_compare_exchange_n(&q.head, &old, head, true,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  cb_thread_ensure();
  // The push above and the load of cb_sleeping are seq_cst: pairs with the
  // callback thread's store of cb_sleeping and its re-check of the queues.
  cb_wake(false);
}

void call_rcu_hurry(struct rcu_head *head, rcu_callback_t func) {
  call_rcu(head, func);
}

void rcu_barrier(void) {
  might_sleep();
  if (WARN(in_cb_thread, "ukern: rcu_barrier() from an RCU callback\n")) return;
  if (WARN(rcu_read_lock_held(),
           "ukern: Illegal rcu_barrier() in RCU read-side critical section\n"))
    return;
  smp_mb();
  // Pairs with the release in cb_invoke(): no callback left means every
  // callback queued before us has returned.
  if (__atomic_load_n(&cb_pending, __ATOMIC_ACQUIRE) == 0) return;
  // Every callback queued before this point is taken by the batch after
  // the one the thread has started (or by an earlier one): wait for it.
  unsigned long target =
      __atomic_load_n(&cb_batch_started, __ATOMIC_SEQ_CST) + 1;
  atomic_max(&cb_barrier_target, target);
  __atomic_fetch_add(&cb_barrier_waiters, 1, __ATOMIC_SEQ_CST);
  cb_thread_ensure();
  cb_wake(true);
  for (;;) {
    uint32_t seq = __atomic_load_n(&cb_done_seq, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&cb_batch_done, __ATOMIC_SEQ_CST) >= target) break;
    syscall(SYS_futex, &cb_done_seq, FUTEX_WAIT_PRIVATE, seq, nullptr, nullptr,
            0);
  }
  __atomic_fetch_sub(&cb_barrier_waiters, 1, __ATOMIC_SEQ_CST);
}

void kvfree_call_rcu(struct rcu_head *head, void *ptr) {
  if (!head) {
    // kfree_rcu_mightsleep(): no rcu_head to queue, so wait here.
    might_sleep();
    synchronize_rcu();
    kvfree(ptr);
    return;
  }
  unsigned long off = reinterpret_cast<char *>(head) - static_cast<char *>(ptr);
  call_rcu(head, reinterpret_cast<rcu_callback_t>(off));
}
