/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The string helpers of include/linux/string.h that ported code uses, over
 * the C library's string functions.
 */
#ifndef UK_LINUX_STRING_H
#define UK_LINUX_STRING_H

#include <cctype>
#include <cstring>

/*
 * Cuts the white space off the end of @s in place and returns @s past the
 * white space at its start.
 */
static inline char *strim(char *s)
{
	char *end = s + strlen(s);

	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static inline char *strstrip(char *str)
{
	return strim(str);
}

#endif /* UK_LINUX_STRING_H */
