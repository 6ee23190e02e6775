/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_MINMAX_H
#define UK_LINUX_MINMAX_H

#include <type_traits>

/*
 * min()/max()/clamp()/swap() are functions here, not macros, so that they do
 * not break std::numeric_limits<T>::max() or std::swap in C++ headers that
 * happen to be included after this one. Each operand is evaluated once and
 * the comparison is made in the common type, as the kernel's macros do.
 */
template <typename A, typename B> constexpr std::common_type_t<A, B> min(A a, B b)
{
	return a < b ? a : b;
}

template <typename A, typename B> constexpr std::common_type_t<A, B> max(A a, B b)
{
	return a > b ? a : b;
}

template <typename A, typename B, typename C> constexpr auto min3(A a, B b, C c)
{
	return min(min(a, b), c);
}

template <typename A, typename B, typename C> constexpr auto max3(A a, B b, C c)
{
	return max(max(a, b), c);
}

template <typename V, typename L, typename H> constexpr auto clamp(V val, L lo, H hi)
{
	return min(max(val, lo), hi);
}

template <typename T> constexpr void swap(T &a, T &b)
{
	T tmp = a;
	a = b;
	b = tmp;
}

#define min_t(type, x, y)              \
	({                             \
		type __a = (x);        \
		type __b = (y);        \
		__a < __b ? __a : __b; \
	})
#define max_t(type, x, y)              \
	({                             \
		type __a = (x);        \
		type __b = (y);        \
		__a > __b ? __a : __b; \
	})
#define clamp_t(type, val, lo, hi) min_t(type, max_t(type, val, lo), hi)
#define clamp_val(val, lo, hi) clamp_t(__typeof__(val), val, lo, hi)

#endif /* UK_LINUX_MINMAX_H */
