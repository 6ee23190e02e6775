// SPDX-License-Identifier: GPL-2.0-only
//
// Per-CPU counters over restartable sequences (rseq(2)).
//
// On x86 the kernel's this_cpu_add() is one non-atomic `add` to the CPU's
// copy: nothing can run on that CPU between its load and its store. The
// user-space equivalent is a restartable sequence: the thread reads the host
// CPU number the kernel keeps in its rseq area, and adds to that CPU's copy;
// if it is preempted, migrated or signalled before the add commits, the
// kernel moves it to the abort handler, which starts over.
//
// That is exclusive only with respect to other threads running on the same
// *host* CPU. A thread that holds virtual CPU k (preempt_disable() and the
// like) may run on any host CPU, so ordinary per-CPU data, which sections
// index by virtual CPU, keeps its atomic this_cpu_*() operations. Counters
// that are only ever changed by this_cpu_add()/sub() and read as a sum over
// the possible CPUs (percpu_ref's) can instead be indexed by host CPU at
// every add, from any context: they live in the counter half of the per-CPU
// area (__GFP_PCPU_COUNTER, see <uk/linux/percpu.h>), where this_cpu_add()
// takes the path below.
#ifndef UK_SHIM_RSEQ_H_
#define UK_SHIM_RSEQ_H_

#include <sys/rseq.h>

#include <cstddef>
#include <cstdint>

#include <uk/shim/cpu.h>

namespace uk {

// NR_CPUS while counters may be updated with rseq, else 0: glibc registered
// an rseq area, and every host CPU number is below nr_cpu_ids, so a sum over
// the possible CPUs covers every copy an add can touch. An add on a host CPU
// at or above this limit takes the atomic path, so 0 turns rseq off.
// Refreshed by set_nr_cpu_ids(); only changes while no counter is being
// updated.
extern unsigned int rseq_counter_cpus __uk_hidden;

// log2 of the per-CPU unit size (PERCPU_UNIT_SHIFT).
inline constexpr int kRseqUnitShift = 24;

// Adds `v` to the host CPU's copy of the per-CPU long whose unit-0 address
// is `p`. Falls back to an atomic add on the current CPU's copy when rseq is
// off (rseq_counter_cpus == 0) or the thread has no rseq area (cpu_id < 0).
__attribute__((always_inline)) inline void rseq_percpu_add(long *p, long v) {
#if defined(__x86_64__)
  // The rseq area sits at a fixed offset from the thread pointer: address
  // it through %fs, as the kernel addresses per-CPU data through %gs.
  const long area = __rseq_offset;
restart:
  // The descriptor (struct rseq_cs: version, flags, start_ip,
  // post_commit_offset, abort_ip) goes to a data section; the abort handler,
  // preceded by the signature glibc registered, to a cold text section.
  asm goto(
      ".pushsection __uk_rseq_cs, \"aw\"\n\t"
      ".balign 32\n"
      ".Luk_rseq_cs_%=:\n\t"
      ".long 0, 0\n\t"
      ".quad .Luk_rseq_start_%=, .Luk_rseq_commit_%= - .Luk_rseq_start_%=, "
      ".Luk_rseq_abort_%=\n\t"
      ".popsection\n\t"
      "leaq .Luk_rseq_cs_%=(%%rip), %%rax\n\t"
      "movq %%rax, %%fs:%c[cs_off](%[area])\n"
      ".Luk_rseq_start_%=:\n\t"
      "movl %%fs:%c[cpu_off](%[area]), %%eax\n\t"
      "cmpl %[limit], %%eax\n\t"
      "jae %l[slow]\n\t"
      "shlq %[shift], %%rax\n\t"
      "addq %[v], (%[p], %%rax)\n"
      ".Luk_rseq_commit_%=:\n\t"
      ".pushsection __uk_rseq_failure, \"ax\"\n\t"
      // ud1 with the signature as its displacement: never executed.
      ".byte 0x0f, 0xb9, 0x3d\n\t"
      ".long %c[sig]\n"
      ".Luk_rseq_abort_%=:\n\t"
      "jmp %l[restart]\n\t"
      ".popsection"
      :
      : [area] "r"(area), [cs_off] "i"(offsetof(struct rseq, rseq_cs)),
        [cpu_off] "i"(offsetof(struct rseq, cpu_id)),
        [limit] "m"(rseq_counter_cpus), [v] "er"(v), [p] "r"(p),
        [shift] "i"(kRseqUnitShift), [sig] "i"(RSEQ_SIG)
      : "rax", "memory", "cc"
      : slow, restart);
  return;
slow:
#endif
  __atomic_fetch_add(
      reinterpret_cast<long *>(
          reinterpret_cast<char *>(p) +
          (static_cast<size_t>(current_cpu()) << kRseqUnitShift)),
      v, __ATOMIC_RELAXED);
}

}  // namespace uk

#endif  // UK_SHIM_RSEQ_H_
