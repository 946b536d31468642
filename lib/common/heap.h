/* SPDX-License-Identifier: MIT */
/*
 * heap.h — a binary min-heap over an array, written once for every element
 * type (in the manner of OpenBSD's <sys/tree.h>).
 *
 * KVP_HEAP_DEFINE(P, H, T, BEFORE) defines, for struct H { T *v; size_t n,
 * cap; } (the caller's type) and int BEFORE(const T *a, const T *b) (a
 * strictly before b; ties must be broken by the caller for a stable
 * order):
 *   int P_push(struct H *h, T e)    0, or -1 when out of memory;
 *   void P_sift(struct H *h, size_t i)   element i down to its place;
 *   T P_pop(struct H *h)            the first element (h->n > 0).
 * The functions are static inline: a file uses the ones it needs.
 */
#ifndef KVP_HEAP_H
#define KVP_HEAP_H

#include <stddef.h>

#include "common/util.h"

#define KVP_HEAP_DEFINE(P, H, T, BEFORE)                                       \
	static inline int P##_push(struct H *h, T e)                           \
	{                                                                      \
		size_t i;                                                      \
                                                                               \
		if (kvp_grow(&h->v, &h->cap, h->n + 1, sizeof(*h->v)) != 0)    \
			return -1;                                             \
		i = h->n++;                                                    \
		while (i > 0 && BEFORE(&e, &h->v[(i - 1) / 2])) {              \
			h->v[i] = h->v[(i - 1) / 2];                           \
			i = (i - 1) / 2;                                       \
		}                                                              \
		h->v[i] = e;                                                   \
		return 0;                                                      \
	}                                                                      \
                                                                               \
	static inline void P##_sift(struct H *h, size_t i)                     \
	{                                                                      \
		T e = h->v[i];                                                 \
                                                                               \
		for (;;) {                                                     \
			size_t c = 2 * i + 1;                                  \
                                                                               \
			if (c >= h->n)                                         \
				break;                                         \
			if (c + 1 < h->n && BEFORE(&h->v[c + 1], &h->v[c]))    \
				c++;                                           \
			if (!BEFORE(&h->v[c], &e))                             \
				break;                                         \
			h->v[i] = h->v[c];                                     \
			i = c;                                                 \
		}                                                              \
		h->v[i] = e;                                                   \
	}                                                                      \
                                                                               \
	static inline T P##_pop(struct H *h)                                   \
	{                                                                      \
		T top = h->v[0];                                               \
                                                                               \
		h->v[0] = h->v[--h->n];                                        \
		if (h->n > 0)                                                  \
			P##_sift(h, 0);                                        \
		return top;                                                    \
	}

#endif
