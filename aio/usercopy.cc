// SPDX-License-Identifier: GPL-2.0-only
//
// copy_from_user()/copy_to_user() for the user-mode port: a `rep movsb`
// whose faults are fixed up, the way the kernel's exception table does it.
// A SIGSEGV/SIGBUS raised at the one copying instruction resumes at the
// fixup label with %rcx = bytes left; any other fault goes to the handler
// that was installed before ours (or the default action).
#include "usercopy.h"

#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include <mutex>

#include <uk/linux/types.h>

extern "C" {
unsigned long uk_raw_copy_user(void *dst, const void *src, unsigned long n);
extern const char uk_raw_copy_user_insn[];
extern const char uk_raw_copy_user_ld[];
extern const char uk_raw_copy_user_st[];
extern const char uk_raw_copy_user_ld4[];
extern const char uk_raw_copy_user_st4[];
extern const char uk_raw_copy_user_fixup[];
/* The linker's bounds of the exception table (none: both null). */
extern const uk_exception_table_entry __start___uk_ex_table[] __attribute__((weak));
extern const uk_exception_table_entry __stop___uk_ex_table[] __attribute__((weak));
}

#if defined(__x86_64__)
/*
 * Up to kBlockMax bytes, blocks of 32 bytes are moved with four plain
 * load/store pairs of 8 bytes, then words with one pair, then one 4-byte
 * mov (put_user of a u32 is on the submit path); the tail and longer copies
 * use rep movsb (slow to start for a few bytes). Every instruction that may
 * fault has an exception table entry: the ones of the first pair and of
 * the word, 4-byte and rep movsb steps resume at the fixup, which returns
 * %rcx, the bytes not copied; those of the k-th pair of a block resume k
 * steps of 8 bytes earlier in a chain that first takes off the 8 * k bytes
 * the block already moved.
 */
#define UK_COPY_BLOCK_MAX "2048"
asm(".text\n"
    ".globl uk_raw_copy_user\n"
    ".type uk_raw_copy_user,@function\n"
    "uk_raw_copy_user:\n"
    "	movq %rdx, %rcx\n"
    "	cmpq $" UK_COPY_BLOCK_MAX ", %rcx\n"
    "	ja 3f\n"
    "4:	cmpq $32, %rcx\n"
    "	jb 1f\n"
    "10:	movq (%rsi), %rax\n"
    "11:	movq %rax, (%rdi)\n"
    "12:	movq 8(%rsi), %rax\n"
    "13:	movq %rax, 8(%rdi)\n"
    "14:	movq 16(%rsi), %rax\n"
    "15:	movq %rax, 16(%rdi)\n"
    "16:	movq 24(%rsi), %rax\n"
    "17:	movq %rax, 24(%rdi)\n"
    "	addq $32, %rsi\n"
    "	addq $32, %rdi\n"
    "	subq $32, %rcx\n"
    "	jmp 4b\n"
    "1:	cmpq $8, %rcx\n"
    "	jb 2f\n"
    ".globl uk_raw_copy_user_ld\n"
    "uk_raw_copy_user_ld:\n"
    "	movq (%rsi), %rax\n"
    ".globl uk_raw_copy_user_st\n"
    "uk_raw_copy_user_st:\n"
    "	movq %rax, (%rdi)\n"
    "	addq $8, %rsi\n"
    "	addq $8, %rdi\n"
    "	subq $8, %rcx\n"
    "	jmp 1b\n"
    "2:	cmpq $4, %rcx\n"
    "	jb 3f\n"
    ".globl uk_raw_copy_user_ld4\n"
    "uk_raw_copy_user_ld4:\n"
    "	movl (%rsi), %eax\n"
    ".globl uk_raw_copy_user_st4\n"
    "uk_raw_copy_user_st4:\n"
    "	movl %eax, (%rdi)\n"
    "	addq $4, %rsi\n"
    "	addq $4, %rdi\n"
    "	subq $4, %rcx\n"
    "3:	testq %rcx, %rcx\n"
    "	jz uk_raw_copy_user_fixup\n"
    ".globl uk_raw_copy_user_insn\n"
    "uk_raw_copy_user_insn:\n"
    "	rep movsb\n"
    ".globl uk_raw_copy_user_fixup\n"
    "uk_raw_copy_user_fixup:\n"
    "	movq %rcx, %rax\n"
    "	ret\n"
    "24:	subq $8, %rcx\n"
    "23:	subq $8, %rcx\n"
    "22:	subq $8, %rcx\n"
    "	jmp uk_raw_copy_user_fixup\n"
    ".size uk_raw_copy_user, .-uk_raw_copy_user\n"
    /* The exception table entries of the block pairs (_UK_ASM_EXTABLE()). */
    ".pushsection __uk_ex_table,\"a\"\n"
    "	.balign 4\n"
    "	.long 10b - .\n"
    "	.long uk_raw_copy_user_fixup - .\n"
    "	.long 11b - .\n"
    "	.long uk_raw_copy_user_fixup - .\n"
    "	.long 12b - .\n"
    "	.long 22b - .\n"
    "	.long 13b - .\n"
    "	.long 22b - .\n"
    "	.long 14b - .\n"
    "	.long 23b - .\n"
    "	.long 15b - .\n"
    "	.long 23b - .\n"
    "	.long 16b - .\n"
    "	.long 24b - .\n"
    "	.long 17b - .\n"
    "	.long 24b - .\n"
    ".popsection\n");
#undef UK_COPY_BLOCK_MAX
#else
#error "usercopy: only x86-64 is implemented"
#endif

namespace uk::aio
{
namespace
{

struct sigaction old_segv, old_bus;
std::once_flag install_once;

void chain(int sig, siginfo_t *info, void *uc)
{
	struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;

	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, info, uc);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* Default action: restore it and let the fault happen again. */
	signal(sig, SIG_DFL);
}

void fault_handler(int sig, siginfo_t *info, void *ucv)
{
	auto *uc = static_cast<ucontext_t *>(ucv);
	greg_t &rip = uc->uc_mcontext.gregs[REG_RIP];

	if (rip == (greg_t)uk_raw_copy_user_insn || rip == (greg_t)uk_raw_copy_user_ld ||
	    rip == (greg_t)uk_raw_copy_user_st || rip == (greg_t)uk_raw_copy_user_ld4 ||
	    rip == (greg_t)uk_raw_copy_user_st4) {
		rip = (greg_t)uk_raw_copy_user_fixup;
		return;
	}
	/* fixup_exception(): the inline get_user()/put_user() accesses. */
	for (const uk_exception_table_entry *e = __start___uk_ex_table; e < __stop___uk_ex_table;
	     e++) {
		if (rip == (greg_t)((const char *)&e->insn + e->insn)) {
			rip = (greg_t)((const char *)&e->fixup + e->fixup);
			return;
		}
	}
	chain(sig, info, ucv);
}

} // namespace

void usercopy_init()
{
	std::call_once(install_once, [] {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = fault_handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, &old_segv);
		sigaction(SIGBUS, &sa, &old_bus);
	});
}

} // namespace uk::aio

unsigned long copy_from_user(void *to, const void *from, unsigned long n)
{
	unsigned long res;

	if (!access_ok(from, n))
		return n;
	instrument_copy_from_user_before(to, from, n);
	res = uk_raw_copy_user(to, from, n);
	instrument_copy_from_user_after(to, from, n, res);
	return res;
}

unsigned long copy_to_user(void *to, const void *from, unsigned long n)
{
	unsigned long res;

	if (!access_ok(to, n))
		return n;
	instrument_copy_to_user(to, from, n);
	res = uk_raw_copy_user(to, from, n);
	instrument_copy_to_user_after(to, from, n, res);
	return res;
}

/* One probe per page, from @uaddr up to @size bytes; stops at the first fault. */
template <bool kWrite> static size_t fault_in(char *uaddr, size_t size)
{
	unsigned long start = (unsigned long)uaddr;
	unsigned long end, p;

	if (!size)
		return 0;
	if (!access_ok(uaddr, size))
		return size;
	end = start + size;
	for (p = start; p < end; p = (p | (PAGE_SIZE - 1)) + 1) {
		char c;

		if (get_user(c, (const char *)p))
			return end - p;
		if (kWrite && put_user(c, (char *)p))
			return end - p;
	}
	return 0;
}

size_t fault_in_readable(const char *uaddr, size_t size)
{
	return fault_in<false>(const_cast<char *>(uaddr), size);
}

size_t fault_in_writeable(char *uaddr, size_t size)
{
	return fault_in<true>(uaddr, size);
}

/*
 * The kernel's exception table holds from boot on: a user access faults
 * safely even in a program's first system call. The handler goes in before
 * main() for the same reason; installed at the first io_setup() only,
 * io_getevents() or io_submit() on a made-up context id (which read the
 * ring header at that address) crashed the program instead of returning
 * -EINVAL.
 */
__attribute__((constructor)) static void usercopy_install_at_load(void)
{
	uk::aio::usercopy_init();
}
