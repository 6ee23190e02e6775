// SPDX-License-Identifier: GPL-2.0-only
// The virtual CPU model: see <uk/shim/cpu.h>.
// Module name of the core parameter below (/sys/module/kernel/parameters).
#define KBUILD_MODNAME "kernel"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <uk/linux/bottom_half.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/kernel.h>
#include <uk/linux/kstrtox.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/smp.h>
#include <uk/shim/futex.h>
#include <uk/shim/rseq.h>

unsigned int nr_cpu_ids = 1;
struct cpumask __cpu_online_mask = {{1UL}};
struct cpumask __cpu_possible_mask = {{1UL}};

namespace uk {

constinit thread_local ThreadCpu tls_cpu
    __attribute__((tls_model("initial-exec")));
int host_to_vcpu[1024];
unsigned int vcpu_identity_limit = 1;
std::atomic<uint64_t> offline_cpus{0};
constinit CpuState cpu_state[NR_CPUS];
SchedHook sched_hook = nullptr;
#ifdef UKERN_EXPLORE
LockHook lock_hook = nullptr;
#endif
SchedBlockHook sched_block_hook = nullptr;
unsigned int rseq_counter_cpus = 0;

long rseq_cpu_id_offset = 4;  // see cpu.h

namespace {
// Priority 101 runs this ahead of our other constructors, some of which may
// already take CPUs.
__attribute__((constructor(101))) void init_rseq_cpu_id_offset() {
  rseq_cpu_id_offset = __rseq_offset + offsetof(struct rseq, cpu_id);
}
}  // namespace

int host_vcpu_slow() {
  int h = host_cpu();
  if (h >= 0 && h < 1024)
    return __atomic_load_n(&host_to_vcpu[h], __ATOMIC_RELAXED);
  return static_cast<int>(cpumask_first(cpu_online_mask));
}

namespace {

// Interrupt work raised while the CPU had interrupts (bottom halves) off;
// cpu_state[cpu].has_pending says whether there is any.
struct alignas(64) CpuSlot {
  std::mutex pending_lock;
  std::vector<std::function<void()>> pending_hardirq;
  std::vector<std::function<void()>> pending_softirq;
};

// Never destroyed: detached threads (ksoftirqd, workers) may still raise
// interrupt work while exit() runs static destructors.
union CpuSlots {
  CpuSlots() : slot() {}
  ~CpuSlots() {}
  CpuSlot slot[NR_CPUS];
} cpu_slots_storage;
#define cpu_slots cpu_slots_storage.slot

unsigned int host_cpu_count() {
  long n = sysconf(_SC_NPROCESSORS_CONF);
  return n > 0 ? static_cast<unsigned int>(n) : 1;
}

// The core parameter nr_cpus (UKERN_CMDLINE="nr_cpus=4"): 0 until given.
// It may be parsed before or after cpu_init runs (libukern_aio.so parses in
// its constructor), so each applies it.
unsigned int nr_cpus_param;
bool cpu_init_done;

struct CpuInit {
  CpuInit() {
    set_nr_cpu_ids(nr_cpus_param != 0 ? nr_cpus_param : host_cpu_count());
    cpu_init_done = true;
  }
} cpu_init;

int param_set_nr_cpus(const char *val, const struct kernel_param *kp) {
  unsigned int n;
  int ret = kstrtouint(val, 0, &n);
  if (ret != 0) return ret;
  if (n < 1 || n > NR_CPUS) {
    pr_err("nr_cpus: %u is not in 1..%d\n", n, NR_CPUS);
    return -EINVAL;
  }
  nr_cpus_param = n;
  if (cpu_init_done) set_nr_cpu_ids(n);
  return 0;
}

int param_get_nr_cpus(char *buffer, const struct kernel_param *kp) {
  return snprintf(buffer, PAGE_SIZE, "%u\n", nr_cpu_ids);
}

const struct kernel_param_ops nr_cpus_ops = {
    .flags = 0,
    .set = param_set_nr_cpus,
    .get = param_get_nr_cpus,
    .free = nullptr,
};
// clang-format off
__module_param_call("", nr_cpus, &nr_cpus_ops, &nr_cpus_param, 0444, -1, 0);
__MODULE_PARM_TYPE(nr_cpus, "uint");
MODULE_PARM_DESC(nr_cpus, "Virtual CPUs (nr_cpu_ids), 1..64. Default: the host's CPU count");
// clang-format on

bool try_take(CpuState &s, uint32_t bits) {
  uint32_t w = s.word.load(std::memory_order_relaxed);
  while (!(w & bits)) {
    if (s.word.compare_exchange_weak(w, w | bits, std::memory_order_acquire,
                                     std::memory_order_relaxed))
      return true;
  }
  return false;
}

// Waits until none of `bits` is set on `s`, then sets them. With `cpu` >= 0
// (a pinned task's CPU, whose word `s` is), it gives up and returns false
// once that CPU is offline: cpu_mark_offline() wakes the word's sleepers.
bool take(CpuState &s, uint32_t bits, int cpu = -1) {
  if (unlikely(sched_block_hook != nullptr)) {
    while (!try_take(s, bits)) {
      if (cpu >= 0 && !cpu_online(cpu)) return false;
      sched_block_hook("cpu", &s.word, bits);
    }
    return true;
  }
  for (int spin = 0;; spin++) {
    if (try_take(s, bits)) return true;
    if (cpu >= 0 && !cpu_online(cpu)) return false;
    if (spin < 200) {
      cpu_pause();
      continue;
    }
    uint32_t w = s.word.load(std::memory_order_relaxed);
    if (!(w & bits)) continue;
    if (!(w & kCpuWaiters) &&
        !s.word.compare_exchange_weak(w, w | kCpuWaiters,
                                      std::memory_order_relaxed))
      continue;
    // Read after the word: a CAS that came after cpu_mark_offline()'s wake
    // read from its release, and the fence makes the mask change visible.
    if (cpu >= 0) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!cpu_online(cpu)) return false;
    }
    futex_wait(&s.word, w | kCpuWaiters);
  }
}

// Picks the CPU a task context takes: its pinned CPU, else the one it runs
// on if free, else any free one (the scheduler would have put it there).
// A pinned task whose CPU is offline is placed as an unpinned one. An
// offline CPU stays owned (cpu_mark_offline()), so try_take() never gets it.
int pick_and_take(ThreadCpu &t, uint32_t bits) {
  if (t.pinned >= 0 && cpu_online(t.pinned) &&
      take(cpu_state[t.pinned], bits, t.pinned))
    return t.pinned;
  int first = host_vcpu();
  if (try_take(cpu_state[first], bits)) return first;
  for (unsigned int i = 1; i < nr_cpu_ids; i++) {
    int c = (first + i) % nr_cpu_ids;
    if (try_take(cpu_state[c], bits)) return c;
  }
  for (;;) {
    if (!cpu_online(first))
      first = static_cast<int>(cpumask_first(cpu_online_mask));
    if (take(cpu_state[first], bits, first)) return first;
  }
}

// Maps every host CPU to an online virtual CPU: itself when it is one,
// else the online CPUs in turn.
void rebuild_host_map() {
  unsigned int n = nr_cpu_ids;
  unsigned int online[NR_CPUS], nr_online = 0, limit = n;

  for (unsigned int c = 0; c < n; c++) {
    if (cpu_online(c))
      online[nr_online++] = c;
    else if (limit == n)
      limit = c;
  }
  for (int h = 0; h < 1024; h++) {
    unsigned int v = static_cast<unsigned int>(h) < n && cpu_online(h)
                         ? h
                         : online[h % nr_online];
    __atomic_store_n(&host_to_vcpu[h], static_cast<int>(v), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&vcpu_identity_limit, limit, __ATOMIC_RELAXED);
}

void run_pending(int cpu);

}  // namespace

void set_nr_cpu_ids(unsigned int n) {
  if (n < 1) n = 1;
  if (n > NR_CPUS) n = NR_CPUS;
  WARN_ON(offline_cpus.load(std::memory_order_relaxed) != 0);
  nr_cpu_ids = n;
  bitmap_zero(cpumask_bits(&__cpu_online_mask), NR_CPUS);
  bitmap_set(cpumask_bits(&__cpu_online_mask), 0, n);
  bitmap_zero(cpumask_bits(&__cpu_possible_mask), NR_CPUS);
  bitmap_set(cpumask_bits(&__cpu_possible_mask), 0, n);
  rebuild_host_map();
  // Counter adds index copies by host CPU: every host CPU must be a
  // possible CPU, or sums over the possible CPUs would miss some copies.
  rseq_counter_cpus = __rseq_size > 0 && host_cpu_count() <= n ? NR_CPUS : 0;
}

void cpu_mark_offline(unsigned int cpu) {
  CpuState &s = cpu_state[cpu];

  // stop_machine()'s part: wait until no task and no interrupt holds the
  // CPU, then take it out of the online mask while holding it.
  take(s, kCpuOwned | kCpuBh | kCpuIrq);
  offline_cpus.fetch_or(1ULL << cpu, std::memory_order_relaxed);
  cpumask_clear_cpu(cpu, &__cpu_online_mask);
  rebuild_host_map();
  // Wakes the word's sleepers with nothing given back yet. The release of
  // the RMW pairs with the fence in take(): a pinned task asleep on the
  // word wakes, or sees the CPU offline before it sleeps, and goes
  // elsewhere.
  cpu_state_give(s, 0);
}

void cpu_mark_dead(unsigned int cpu) {
  CpuState &s = cpu_state[cpu];

  // Interrupt work queued for the CPU may run in its context from now on;
  // tasks never do, as kCpuOwned stays set.
  cpu_state_give(s, kCpuBh | kCpuIrq);
  if (s.has_pending.load(std::memory_order_acquire)) run_pending(cpu);
}

void cpu_mark_online(unsigned int cpu) {
  cpumask_set_cpu(cpu, &__cpu_online_mask);
  offline_cpus.fetch_and(~(1ULL << cpu), std::memory_order_relaxed);
  rebuild_host_map();
  cpu_state_give(cpu_state[cpu], kCpuOwned);
}

void cpu_wake_waiters(CpuState &s) {
  s.word.fetch_and(~kCpuWaiters, std::memory_order_relaxed);
  futex_wake(&s.word);
}

void pin_thread_to_cpu(int cpu) {
  ThreadCpu &t = tls_cpu;
  BUG_ON(t.held != 0);
  BUG_ON(cpu >= static_cast<int>(nr_cpu_ids));
  t.pinned = cpu;
}

void cpu_acquire(uint32_t bits) {
  ThreadCpu &t = tls_cpu;
  sched_point("cpu_acquire");
  uint32_t want = bits & ~t.held;
  if (!want) return;
  const bool first = t.held == 0;
  if (t.cpu < 0) {
    t.cpu = pick_and_take(t, want);
  } else {
    take(cpu_state[t.cpu], want);
  }
  t.held |= want;
  // Consolidated RCU (v4.20+): a section with preemption, bottom halves or
  // interrupts off is a read-side critical section, so a grace period that
  // starts inside it waits for its end. percpu_ref_kill() and others rely
  // on it: their call_rcu() callback must not run before they unlock.
  if (first) __rcu_read_lock();
}

void cpu_release(uint32_t bits) {
  ThreadCpu &t = tls_cpu;
  uint32_t drop = bits & t.held;
  if (!drop) return;
  int cpu = t.cpu;
  t.held &= ~drop;
  if (!t.held) t.cpu = -1;
  cpu_state_give(cpu_state[cpu], drop);
  if (!t.held) __rcu_read_unlock();  // the section cpu_acquire() began
  if (cpu_state[cpu].has_pending.load(std::memory_order_acquire) &&
      !t.irqs_off && t.bh_depth == 0 && !t.in_irq_ctx)
    run_pending(cpu);
}

void irq_restore_slow() {
  ThreadCpu &t = tls_cpu;
  if (t.preempt_count & HARDIRQ_MASK) return;  // stays off in hardirq
  int cpu = t.cpu;
  t.irqs_off = false;
  uint32_t drop = kCpuIrq;
  if (!t.in_irq_ctx && t.pdepth == 0 && t.bh_depth == 0) drop |= kCpuOwned;
  cpu_release(drop);
  if (cpu >= 0 && cpu_state[cpu].has_pending.load(std::memory_order_acquire) &&
      !t.in_irq_ctx && t.bh_depth == 0)
    run_pending(cpu);
}

void local_bh_disable_slow() {
  ThreadCpu &t = tls_cpu;
  t.preempt_count += SOFTIRQ_DISABLE_OFFSET;
  if (t.bh_depth++ == 0 && !(t.held & kCpuBh))
    cpu_acquire(kCpuBh | (t.in_irq_ctx ? 0 : kCpuOwned));
}

void local_bh_enable_slow() {
  ThreadCpu &t = tls_cpu;
  if (t.bh_depth == 0) preempt_underflow("local_bh_enable");
  t.preempt_count -= SOFTIRQ_DISABLE_OFFSET;
  if (--t.bh_depth > 0 || (t.preempt_count & SOFTIRQ_OFFSET)) return;
  int cpu = t.cpu;
  uint32_t drop = kCpuBh;
  if (!t.in_irq_ctx && t.pdepth == 0 && !t.irqs_off) drop |= kCpuOwned;
  cpu_release(drop);
  if (cpu >= 0 && !t.irqs_off && !t.in_irq_ctx &&
      cpu_state[cpu].has_pending.load(std::memory_order_acquire))
    run_pending(cpu);
}

void preempt_underflow(const char *what) {
  fprintf(stderr, "ukern: BUG: %s without a matching disable\n", what);
  abort();
}

namespace {

// Runs `fn` in interrupt context on `cpu`: `bit` is kCpuIrq (hardirq) or
// kCpuBh (softirq). The thread's own CPU state is set aside meanwhile.
void run_irq_ctx(int cpu, uint32_t bit, const std::function<void()> &fn) {
  ThreadCpu &t = tls_cpu;
  ThreadCpu saved = t;
  CpuState &s = cpu_state[cpu];
  take(s, bit);
  t.cpu = cpu;
  t.held = bit;
  t.in_irq_ctx = true;
  t.pdepth = 0;
  t.bh_depth = 0;
  t.lock_depth = 0;
  // Nested on the caller's own CPU, the interrupt sees the caller's count;
  // on another CPU (an IPI) it starts from that CPU's task context: the
  // caller's softirq/hardirq bits belong to a different CPU.
  const uint32_t base = saved.cpu == cpu ? saved.preempt_count : 0;
  if (bit == kCpuIrq) {
    t.preempt_count = base + HARDIRQ_OFFSET;
    t.irqs_off = true;
  } else {
    t.preempt_count = base + SOFTIRQ_OFFSET;
    t.irqs_off = false;
  }
  // Interrupt handlers are RCU readers too (see cpu_acquire()).
  __rcu_read_lock();
  fn();
  __rcu_read_unlock();
  if (t.held != bit || t.irqs_off != (bit == kCpuIrq) || t.pdepth || t.bh_depth)
    WARN(1,
         "ukern: interrupt handler on CPU %d returned with unbalanced state\n",
         cpu);
  cpu_state_give(s, t.held);
  t = saved;
  // irq_exit(): work this handler raised for the CPU (a softirq, say) runs
  // now, unless the context we return to masks it.
  bool masked = t.cpu == cpu && (t.in_irq_ctx || (t.held & (kCpuIrq | kCpuBh)));
  if (!masked && s.has_pending.load(std::memory_order_acquire))
    run_pending(cpu);
}

void queue_pending(int cpu, bool hard, const std::function<void()> &fn) {
  CpuSlot &s = cpu_slots[cpu];
  std::lock_guard<std::mutex> g(s.pending_lock);
  (hard ? s.pending_hardirq : s.pending_softirq).push_back(fn);
  cpu_state[cpu].has_pending.store(true, std::memory_order_release);
}

void run_pending(int cpu) {
  CpuSlot &s = cpu_slots[cpu];
  for (;;) {
    std::vector<std::function<void()>> hard, soft;
    {
      std::lock_guard<std::mutex> g(s.pending_lock);
      hard.swap(s.pending_hardirq);
      soft.swap(s.pending_softirq);
      cpu_state[cpu].has_pending.store(false, std::memory_order_relaxed);
    }
    if (hard.empty() && soft.empty()) return;
    for (auto &fn : hard) run_irq_ctx(cpu, kCpuIrq, fn);
    for (auto &fn : soft) run_irq_ctx(cpu, kCpuBh, fn);
  }
}

}  // namespace

void cpu_run_pending(int cpu) { run_pending(cpu); }

void run_in_hardirq(int cpu, const std::function<void()> &fn) {
  ThreadCpu &t = tls_cpu;
  if (t.cpu == cpu && (t.held & kCpuIrq)) {
    queue_pending(cpu, true, fn);
    return;
  }
  run_irq_ctx(cpu, kCpuIrq, fn);
}

void run_in_softirq(int cpu, const std::function<void()> &fn) {
  ThreadCpu &t = tls_cpu;
  if (t.cpu == cpu && (t.held & (kCpuIrq | kCpuBh))) {
    queue_pending(cpu, false, fn);
    return;
  }
  run_irq_ctx(cpu, kCpuBh, fn);
}

}  // namespace uk

int smp_call_function_single(int cpu, smp_call_func_t func, void *info,
                             int wait) {
  if (cpu < 0 || static_cast<unsigned int>(cpu) >= nr_cpu_ids ||
      !cpu_online(cpu))
    return -ENXIO;
  // The IPI is delivered synchronously from the caller's thread; with
  // !wait the caller still sees it done, which is a legal timing.
  uk::run_in_hardirq(cpu, [func, info] { func(info); });
  return 0;
}
