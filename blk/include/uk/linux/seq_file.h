/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal seq_file (include/linux/seq_file.h): the *_show() functions of
 * sbitmap and blk-mq write into it, tests and debugfs-like dumps read
 * m->buf afterwards.
 */
#ifndef UK_LINUX_SEQ_FILE_H
#define UK_LINUX_SEQ_FILE_H

#include <cstdarg>
#include <cstdio>
#include <string>

#include <uk/linux/compiler.h>

struct seq_file {
	std::string buf;
	void *private_data = nullptr;
};

static inline __printf(2, 3) void seq_printf(struct seq_file *m, const char *fmt, ...)
{
	char small[256];
	va_list ap, ap2;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		va_end(ap2);
		return;
	}
	if ((size_t)n < sizeof(small)) {
		m->buf.append(small, n);
	} else {
		std::string big(n + 1, '\0');

		vsnprintf(big.data(), n + 1, fmt, ap2);
		m->buf.append(big.data(), n);
	}
	va_end(ap2);
}

static inline void seq_puts(struct seq_file *m, const char *s)
{
	m->buf.append(s);
}

static inline void seq_putc(struct seq_file *m, char c)
{
	m->buf.push_back(c);
}

#endif /* UK_LINUX_SEQ_FILE_H */
