/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_CONTAINER_OF_H
#define UK_LINUX_CONTAINER_OF_H

#include <cstddef>

#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif

#define container_of(ptr, type, member)                                        \
	({                                                                     \
		void *__mptr = (void *)(ptr);                                  \
		((type *)((char *)__mptr - __builtin_offsetof(type, member))); \
	})

#define container_of_const(ptr, type, member)                                              \
	({                                                                                 \
		const void *__mptr = (const void *)(ptr);                                  \
		((const type *)((const char *)__mptr - __builtin_offsetof(type, member))); \
	})

#define sizeof_field(TYPE, MEMBER) sizeof((((TYPE *)0)->MEMBER))

#endif /* UK_LINUX_CONTAINER_OF_H */
