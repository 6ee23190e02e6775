/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * String to integer conversion (include/linux/kstrtox.h, lib/kstrtox.c).
 *
 * Only a complete number is accepted, with at most one newline after it
 * and nothing else. Base 0 picks 16 for "0x", 8 for a leading "0", else 10.
 * Returns 0, -EINVAL (not a number, trailing junk) or -ERANGE (overflow).
 *
 * Upstream: include/linux/kstrtox.h @ v6.12
 */
#ifndef UK_LINUX_KSTRTOX_H
#define UK_LINUX_KSTRTOX_H

#include <uk/linux/compiler.h>
#include <uk/linux/types.h>

int __must_check kstrtoull(const char *s, unsigned int base, unsigned long long *res);
int __must_check kstrtoll(const char *s, unsigned int base, long long *res);
int __must_check _kstrtoul(const char *s, unsigned int base, unsigned long *res);
int __must_check _kstrtol(const char *s, unsigned int base, long *res);

/*
 * Where long has long long's size and alignment (every target here), the
 * conversion goes straight to kstrtoull()/kstrtoll(); the test is a
 * constant, so the other branch is compiled out.
 */
static inline int __must_check kstrtoul(const char *s, unsigned int base, unsigned long *res)
{
	if (sizeof(unsigned long) == sizeof(unsigned long long) &&
	    __alignof__(unsigned long) == __alignof__(unsigned long long))
		return kstrtoull(s, base, (unsigned long long *)res);
	else
		return _kstrtoul(s, base, res);
}

static inline int __must_check kstrtol(const char *s, unsigned int base, long *res)
{
	if (sizeof(long) == sizeof(long long) && __alignof__(long) == __alignof__(long long))
		return kstrtoll(s, base, (long long *)res);
	else
		return _kstrtol(s, base, res);
}

int __must_check kstrtouint(const char *s, unsigned int base, unsigned int *res);
int __must_check kstrtoint(const char *s, unsigned int base, int *res);
int __must_check kstrtou16(const char *s, unsigned int base, u16 *res);
int __must_check kstrtos16(const char *s, unsigned int base, s16 *res);
int __must_check kstrtou8(const char *s, unsigned int base, u8 *res);
int __must_check kstrtos8(const char *s, unsigned int base, s8 *res);
int __must_check kstrtobool(const char *s, bool *res);

static inline int __must_check kstrtou64(const char *s, unsigned int base, u64 *res)
{
	return kstrtoull(s, base, res);
}

static inline int __must_check kstrtos64(const char *s, unsigned int base, s64 *res)
{
	return kstrtoll(s, base, res);
}

static inline int __must_check kstrtou32(const char *s, unsigned int base, u32 *res)
{
	return kstrtouint(s, base, res);
}

static inline int __must_check kstrtos32(const char *s, unsigned int base, s32 *res)
{
	return kstrtoint(s, base, res);
}

/* lib/kstrtox.h internals, shared with the simple_strto*() family. */
#define KSTRTOX_OVERFLOW (1U << 31)
const char *_parse_integer_fixup_radix(const char *s, unsigned int *base);
unsigned int _parse_integer_limit(const char *s, unsigned int base, unsigned long long *res,
				  size_t max_chars);
unsigned int _parse_integer(const char *s, unsigned int base, unsigned long long *res);

#endif /* UK_LINUX_KSTRTOX_H */
