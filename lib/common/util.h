/* SPDX-License-Identifier: MIT */
/*
 * util.h — small helpers shared by lib/ modules.
 */
#ifndef KVP_UTIL_H
#define KVP_UTIL_H

#include <stddef.h>

/*
 * Grows the array *pp (items of elem bytes, capacity *cap items) to hold at
 * least need items, doubling from 16. pp is the address of the array
 * pointer (any pointer type). Returns 0, or -1 on overflow or out of memory
 * with *pp and *cap unchanged.
 */
int kvp_grow(void *pp, size_t *cap, size_t need, size_t elem);

/* Value of a hex digit (either case), or -1. */
int kvp_hexval(int c);

#endif
