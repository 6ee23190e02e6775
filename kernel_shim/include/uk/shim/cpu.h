// SPDX-License-Identifier: GPL-2.0-only
//
// The CPU model behind smp_processor_id(), preempt_disable(),
// local_irq_save(), local_bh_disable() and interrupt context.
//
// Each virtual CPU has one state word:
//   kOwned  a task holds the CPU (preempt_disable/get_cpu, or any of the
//           sections below); the other tasks that want this CPU wait.
//   kBh     bottom halves are off on the CPU, or a softirq is running there.
//   kIrq    interrupts are off on the CPU, or a hardirq is running there.
//   kWaiters somebody sleeps on the word (futex).
// A task that disables preemption takes kOwned; disabling bottom halves adds
// kBh; disabling interrupts adds kIrq. Interrupt work for CPU k takes only kBh
// (softirq) or kIrq (hardirq), so it runs in the middle of a preempt-disabled
// section, but never inside one where CPU k has bottom halves or interrupts
// off: the kernel's rules, with the CPU lock standing in for the hardware,
// as PREEMPT_RT's local locks do.
//
// Outside such sections a thread's CPU is the host CPU it runs on (or the
// CPU a test pinned it to), so single this_cpu_*() operations are atomic
// read-modify-writes on that CPU's slot.
#ifndef UK_SHIM_CPU_H_
#define UK_SHIM_CPU_H_

#include <sched.h>
#include <sys/rseq.h>

#include <atomic>
#include <cstdint>
#include <functional>

#include <uk/linux/compiler.h>

#define NR_CPUS 64
#define CONFIG_NR_CPUS NR_CPUS

extern unsigned int nr_cpu_ids __uk_hidden;

namespace uk {

inline constexpr uint32_t kCpuOwned = 1u << 0;
inline constexpr uint32_t kCpuBh = 1u << 1;
inline constexpr uint32_t kCpuIrq = 1u << 2;
inline constexpr uint32_t kCpuWaiters = 1u << 3;

// Per-thread view of the CPU it runs on. Kept small and at a fixed TLS
// offset: every preempt/irq operation touches it.
struct ThreadCpu {
  int cpu = -1;       // virtual CPU whose bits this thread holds, or -1
  int pinned = -1;    // CPU set by pin_thread_to_cpu(), or -1
  int sticky = -1;    // CPU kept while holding spinlocks (migrate-off)
  uint32_t held = 0;  // kCpu* bits held in cpu_word(cpu)
  uint32_t preempt_count = 0;  // the kernel's preempt_count() layout
  uint32_t pdepth = 0;         // owning preempt_disable() nesting
  uint32_t bh_depth = 0;       // local_bh_disable() nesting
  uint32_t lock_depth = 0;     // spinlocks held (migrate_disable() nesting)
  bool irqs_off = false;       // local_irq_disable() state
  bool in_irq_ctx = false;     // running interrupt work (hardirq or softirq)
};

extern constinit thread_local ThreadCpu tls_cpu
    __attribute__((tls_model("initial-exec")));

// One per virtual CPU: the state word (kCpu* bits) and whether interrupt
// work waits for the CPU to unmask it.
struct alignas(64) CpuState {
  std::atomic<uint32_t> word{0};
  std::atomic<bool> has_pending{false};
};

extern constinit CpuState cpu_state[NR_CPUS] __uk_hidden;

void cpu_wake_waiters(CpuState &s);

// Drops `bits` from the CPU's word and wakes anybody asleep on it. The AND
// and a waiter's CAS that sets kCpuWaiters are RMWs of one word: if the CAS
// came first the load below sees kCpuWaiters; if it came later it failed,
// because it expected some of `bits` still set, and the waiter retries.
inline void cpu_state_give(CpuState &s, uint32_t bits) {
  s.word.fetch_and(~bits, std::memory_order_release);
  if (unlikely(s.word.load(std::memory_order_relaxed) & kCpuWaiters))
    cpu_wake_waiters(s);
}

// Host CPU number -> virtual CPU, refreshed by set_nr_cpu_ids() and by CPU
// hotplug: every entry names an online CPU.
extern int host_to_vcpu[1024] __uk_hidden;

// Host CPUs below this number run as the virtual CPU of the same number: the
// first offline CPU, or nr_cpu_ids when all are online (CPU hotplug).
extern unsigned int vcpu_identity_limit __uk_hidden;

// Bit n set: virtual CPU n is offline (remove_cpu(), <uk/linux/cpu.h>). One
// word, as NR_CPUS is 64; cpu_online_mask holds the complement.
extern std::atomic<uint64_t> offline_cpus __uk_hidden;

// The host CPU this thread runs on: the cpu_id the kernel keeps in the
// thread's rseq area, which glibc (2.35+) registers for every thread. That
// is one load (0.3 ns) where sched_getcpu() goes through the vDSO (4 ns);
// without rseq (registration failed or disabled) cpu_id is negative and
// sched_getcpu() answers.
inline int rseq_cpu_id() {
  const struct rseq *rs = reinterpret_cast<const struct rseq *>(
      static_cast<const char *>(__builtin_thread_pointer()) + __rseq_offset);
  return static_cast<int>(__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED));
}

inline int host_cpu() {
  int h = rseq_cpu_id();
  return likely(h >= 0) ? h : sched_getcpu();
}

// host_vcpu() when the rseq cpu_id is not below nr_cpu_ids: a bigger host
// CPU number, or no rseq (negative). It re-reads the id through glibc's own
// __rseq_offset, so it is right even before rseq_cpu_id_offset is set.
int host_vcpu_slow();

// glibc's __rseq_offset + offsetof(struct rseq, cpu_id), copied into our
// image at start-up. Reading __rseq_offset goes through the GOT: one
// dependent load more on every this_cpu_*() and smp_processor_id().
// Before the copy it is 4: %fs:0 holds the TCB's self pointer, so the load
// reads that pointer's high half (a user address >> 32), which is above
// nr_cpu_ids for PIE and mmap addresses and sends the caller to the slow
// path. Where it is not (a non-PIE heap), the id is a wrong but valid CPU,
// which a preemptible caller cannot tell from a migration.
extern long rseq_cpu_id_offset __uk_hidden;

inline int host_vcpu() {
  int h;
#if defined(__x86_64__)
  // The rseq area at a fixed offset from the thread pointer, read through
  // %fs as the kernel reads cpu_number through %gs.
  asm volatile("movl %%fs:(%1), %0" : "=r"(h) : "r"(rseq_cpu_id_offset));
#else
  h = rseq_cpu_id();
#endif
  // host_to_vcpu[] is the identity below vcpu_identity_limit, and a negative
  // cpu_id (no rseq) is above it as unsigned: one compare for the common case.
  if (likely(static_cast<unsigned int>(h) <
             __atomic_load_n(&vcpu_identity_limit, __ATOMIC_RELAXED)))
    return h;
  return host_vcpu_slow();
}

inline int current_cpu() {
  const ThreadCpu &t = tls_cpu;
  // Common case first: no CPU held, not migrate-disabled, not pinned (all
  // three negative, so their AND is too).
  if (likely((t.cpu & t.sticky & t.pinned) < 0)) return host_vcpu();
  if (t.cpu >= 0) return t.cpu;
  if (t.sticky >= 0) return t.sticky;
  // A thread pinned to an offline CPU runs elsewhere, as the scheduler
  // breaks the affinity of a task whose only CPU went down.
  if (t.pinned >= 0 &&
      !((offline_cpus.load(std::memory_order_relaxed) >> t.pinned) & 1))
    return t.pinned;
  return host_vcpu();
}

// Slow paths (cpu.cc).
void cpu_acquire(uint32_t bits);  // take `bits` on this thread's CPU
void cpu_release(uint32_t bits);  // drop `bits`; may run pending irqs
void irq_restore_slow();          // local_irq_enable() bookkeeping
void preempt_underflow(const char *what);

// Sets the number of virtual CPUs (1..NR_CPUS), all of them online. Call
// while no thread holds a CPU and every CPU is online; per-CPU data stays
// valid (areas exist for all NR_CPUS).
void set_nr_cpu_ids(unsigned int n);

// CPU hotplug's part of the model (kernel_shim/cpu.cc calls them under the
// hotplug lock). cpu_mark_offline() waits until no task and no interrupt
// holds `cpu`, takes it out of cpu_online_mask and keeps it, so that
// nothing runs there while the DEAD callbacks run; cpu_mark_dead() then
// lets interrupt work in again, and the CPU stays owned, so no task takes
// it until cpu_mark_online() puts it back.
void cpu_mark_offline(unsigned int cpu);
void cpu_mark_dead(unsigned int cpu);
void cpu_mark_online(unsigned int cpu);

// Pins the calling thread to virtual CPU `cpu` (-1 unpins). A thread that
// holds a CPU cannot be re-pinned until it lets go.
void pin_thread_to_cpu(int cpu);

// Runs `fn` in hardirq (or softirq) context on virtual CPU `cpu` from the
// calling thread: waits until the CPU's interrupts (or bottom halves) are
// on, then runs `fn` with the CPU's kIrq (kBh) bit held, preempt_count()'s
// HARDIRQ (SOFTIRQ) bits set and smp_processor_id() == cpu. When the caller
// itself holds `cpu` with interrupts enabled, the interrupt nests inside the
// caller's section, as a real one would; with interrupts off it is queued
// and runs at local_irq_enable()/restore().
void run_in_hardirq(int cpu, const std::function<void()> &fn);
void run_in_softirq(int cpu, const std::function<void()> &fn);

// Hook for deterministic schedulers and interrupt injection: called at shim
// scheduling points (locks, waits). Empty unless a test installs one.
using SchedHook = void (*)(const char *where);
extern SchedHook sched_hook __uk_hidden;
inline void sched_point(const char *where) {
  if (unlikely(sched_hook != nullptr)) sched_hook(where);
}

// Blocking for the same schedulers: where a task would spin or sleep until
// (*word & mask) == 0 (a lock word, a CPU word, a sleeping task's state), it
// calls this hook instead when one is installed and retries when it returns.
// Only the slow paths call it, so it costs nothing when uncontended.
using SchedBlockHook = void (*)(const char *where, const void *word,
                                uint32_t mask);
extern SchedBlockHook sched_block_hook __uk_hidden;

}  // namespace uk

#endif  // UK_SHIM_CPU_H_
