/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-memory access for the aio port (arch/x86/include/asm/uaccess.h):
 * access_ok() against the x86-64 TASK_SIZE_MAX, and copies that return the
 * number of bytes NOT copied (0 on success) instead of crashing. Every
 * access is asm, so each one calls the <uk/linux/instrumented.h> checks that
 * let ASan and TSan see it.
 */
#ifndef UK_AIO_USERCOPY_H
#define UK_AIO_USERCOPY_H

#include <linux/time_types.h>
#include <stddef.h>
#include <stdint.h>

#include <uk/linux/compat.h>
#include <uk/linux/compiler.h>
#include <uk/linux/errno.h>
#include <uk/linux/instrumented.h>
#include <uk/linux/time64.h>

#define __user
#define TASK_SIZE_MAX 0x00007ffffffff000UL

namespace uk::aio
{
void usercopy_init();
}

static inline bool access_ok(const void *addr, unsigned long size)
{
	unsigned long a = (unsigned long)addr;

	return size <= TASK_SIZE_MAX && a <= TASK_SIZE_MAX - size;
}

unsigned long copy_from_user(void *to, const void __user *from, unsigned long n);
unsigned long copy_to_user(void __user *to, const void *from, unsigned long n);

/*
 * fault_in_readable()/fault_in_writeable() (mm/gup.c): touch every page of
 * the range with a fault-safe access and return how many bytes at the end
 * could not be reached (0: all of it). Direct I/O calls them where the
 * kernel pins the user pages (bio_iov_iter_get_pages()), so a buffer that
 * runs into an unmapped or read-only page fails with -EFAULT before any bio
 * is built. The writeable probe reads each byte it touches and stores the
 * same value back.
 */
size_t fault_in_readable(const char __user *uaddr, size_t size);
size_t fault_in_writeable(char __user *uaddr, size_t size);

/*
 * get_timespec64() (kernel/time/time.c): a struct __kernel_timespec from user
 * memory, unvalidated. Only 64-bit callers exist here, so there is no compat
 * padding to clear.
 */
static inline int get_timespec64(struct timespec64 *ts, const struct __kernel_timespec __user *uts)
{
	struct __kernel_timespec kts;

	if (copy_from_user(&kts, uts, sizeof(kts)))
		return -EFAULT;
	ts->tv_sec = kts.tv_sec;
	ts->tv_nsec = kts.tv_nsec;
	return 0;
}

/*
 * get_old_timespec32() (kernel/time/time.c): a 32-bit task's struct
 * old_timespec32, widened, unvalidated.
 */
static inline int get_old_timespec32(struct timespec64 *ts, const void __user *uts)
{
	struct old_timespec32 ts32;

	if (copy_from_user(&ts32, uts, sizeof(ts32)))
		return -EFAULT;
	ts->tv_sec = ts32.tv_sec;
	ts->tv_nsec = ts32.tv_nsec;
	return 0;
}

/*
 * The exception table (arch/x86/include/asm/extable.h): for each user
 * access that may fault, the instruction and where to resume, as offsets
 * from the entry's fields. The SIGSEGV/SIGBUS handler (usercopy.cc) looks
 * the faulting address up in it.
 */
struct uk_exception_table_entry {
	int insn, fixup;
};

#define _UK_ASM_EXTABLE(from, to)            \
	".pushsection __uk_ex_table,\"a\"\n" \
	"	.balign 4\n"                       \
	"	.long " #from " - .\n"       \
	"	.long " #to " - .\n"         \
	".popsection\n"

/*
 * One mov from or to user memory (itype: the size suffix, rtype: the
 * register operand modifier); a fault resumes at 3, which sets -EFAULT
 * (and, for a load, a zero value) and goes on after the access.
 */
#define __uk_get_user_asm(x, addr, err, itype, rtype)            \
	asm volatile("1:	mov" itype " %2, %" rtype "1\n"  \
		     "2:\n"                                      \
		     ".pushsection .text.unlikely,\"ax\"\n"      \
		     "3:	movl %3, %0\n"                          \
		     "	xor" itype " %" rtype "1, %" rtype "1\n" \
		     "	jmp 2b\n"                                 \
		     ".popsection\n" _UK_ASM_EXTABLE(1b, 3b)     \
		     : "=r"(err), "=q"(x)                        \
		     : "m"(*(const volatile char *)(addr)), "i"(-EFAULT), "0"(err))

#define __uk_put_user_asm(x, addr, err, itype, rtype)                                \
	asm volatile("1:	mov" itype " %" rtype "1, %2\n"                      \
		     "2:\n"                                                          \
		     ".pushsection .text.unlikely,\"ax\"\n"                          \
		     "3:	movl %3, %0\n"                                              \
		     "	jmp 2b\n"                                                     \
		     ".popsection\n" _UK_ASM_EXTABLE(1b, 3b)                         \
		     : "=r"(err)                                                     \
		     : "q"(x), "m"(*(volatile char *)(addr)), "i"(-EFAULT), "0"(err) \
		     : "memory")

/*
 * get_user()/put_user(): one inline access with an exception-table entry,
 * as the kernel's (after access_ok()); 0 or -EFAULT, and a failed
 * get_user() stores zero in @x.
 */
#define get_user(x, ptr)                                                                \
	({                                                                              \
		__typeof__(ptr) __gu_p = (ptr);                                         \
		unsigned long __gu_val = 0;                                             \
		int __gu_err = 0;                                                       \
		static_assert(sizeof(*__gu_p) == 1 || sizeof(*__gu_p) == 2 ||           \
				      sizeof(*__gu_p) == 4 || sizeof(*__gu_p) == 8,     \
			      "get_user size");                                         \
		if (unlikely(!access_ok(__gu_p, sizeof(*__gu_p)))) {                    \
			__gu_err = -EFAULT;                                             \
		} else {                                                                \
			switch (sizeof(*__gu_p)) {                                      \
			case 1: {                                                       \
				unsigned char __v;                                      \
				__uk_get_user_asm(__v, __gu_p, __gu_err, "b", "b");     \
				__gu_val = __v;                                         \
				break;                                                  \
			}                                                               \
			case 2: {                                                       \
				unsigned short __v;                                     \
				__uk_get_user_asm(__v, __gu_p, __gu_err, "w", "w");     \
				__gu_val = __v;                                         \
				break;                                                  \
			}                                                               \
			case 4: {                                                       \
				unsigned int __v;                                       \
				__uk_get_user_asm(__v, __gu_p, __gu_err, "l", "k");     \
				__gu_val = __v;                                         \
				break;                                                  \
			}                                                               \
			default: {                                                      \
				unsigned long __v;                                      \
				__uk_get_user_asm(__v, __gu_p, __gu_err, "q", "q");     \
				__gu_val = __v;                                         \
				break;                                                  \
			}                                                               \
			}                                                               \
			if (!__gu_err)                                                  \
				instrument_get_user(__gu_val, __gu_p, sizeof(*__gu_p)); \
		}                                                                       \
		(x) = (__typeof__(*(ptr)))__gu_val;                                     \
		__gu_err;                                                               \
	})

#define put_user(x, ptr)                                                                           \
	({                                                                                         \
		__typeof__(ptr) __pu_p = (ptr);                                                    \
		__typeof__(*(ptr)) __pu_v = (x);                                                   \
		unsigned long __pu_bits = 0;                                                       \
		int __pu_err = 0;                                                                  \
		static_assert(sizeof(*__pu_p) == 1 || sizeof(*__pu_p) == 2 ||                      \
				      sizeof(*__pu_p) == 4 || sizeof(*__pu_p) == 8,                \
			      "put_user size");                                                    \
		__builtin_memcpy(&__pu_bits, &__pu_v, sizeof(__pu_v));                             \
		if (unlikely(!access_ok(__pu_p, sizeof(*__pu_p)))) {                               \
			__pu_err = -EFAULT;                                                        \
		} else {                                                                           \
			switch (sizeof(*__pu_p)) {                                                 \
			case 1:                                                                    \
				__uk_put_user_asm((unsigned char)__pu_bits, __pu_p, __pu_err, "b", \
						  "b");                                            \
				break;                                                             \
			case 2:                                                                    \
				__uk_put_user_asm((unsigned short)__pu_bits, __pu_p, __pu_err,     \
						  "w", "w");                                       \
				break;                                                             \
			case 4:                                                                    \
				__uk_put_user_asm((unsigned int)__pu_bits, __pu_p, __pu_err, "l",  \
						  "k");                                            \
				break;                                                             \
			default:                                                                   \
				__uk_put_user_asm(__pu_bits, __pu_p, __pu_err, "q", "q");          \
				break;                                                             \
			}                                                                          \
			if (!__pu_err)                                                             \
				instrument_put_user(__pu_v, __pu_p, sizeof(*__pu_p));              \
		}                                                                                  \
		__pu_err;                                                                          \
	})

#endif /* UK_AIO_USERCOPY_H */
