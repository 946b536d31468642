/* SPDX-License-Identifier: MIT */
/* u64set.c — open-addressing u64 set/map (see u64set.h). */
#include "common/u64set.h"

#include <stdlib.h>
#include <string.h>

/* Block hashes are already well mixed, but ids and small test values are
 * not: a full 64-bit finalizer (splitmix64) spreads both. */
static inline size_t
slot_of(uint64_t k, size_t mask)
{
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	k ^= k >> 31;
	return (size_t)k & mask;
}

void
kvp_u64set_init(struct kvp_u64set *s, int with_vals)
{
	memset(s, 0, sizeof *s);
	s->with_vals = with_vals;
}

void
kvp_u64set_clear(struct kvp_u64set *s)
{
	free(s->keys);
	free(s->vals);
	free(s->used);
	s->keys = NULL;
	s->vals = NULL;
	s->used = NULL;
	s->cap = 0;
	s->n = 0;
}

void
kvp_u64set_reset(struct kvp_u64set *s)
{
	if (s->cap != 0)
		memset(s->used, 0, s->cap);
	s->n = 0;
}

int
kvp_u64set_get(const struct kvp_u64set *s, uint64_t key, uint64_t *val)
{
	size_t mask, i;

	if (s->n == 0)
		return 0;
	mask = s->cap - 1;
	for (i = slot_of(key, mask); s->used[i]; i = (i + 1) & mask) {
		if (s->keys[i] == key) {
			if (val != NULL && s->vals != NULL)
				*val = s->vals[i];
			return 1;
		}
	}
	return 0;
}

static void
place(struct kvp_u64set *s, uint64_t key, uint64_t val)
{
	size_t mask = s->cap - 1, i = slot_of(key, mask);

	while (s->used[i])
		i = (i + 1) & mask;
	s->used[i] = 1;
	s->keys[i] = key;
	if (s->vals != NULL)
		s->vals[i] = val;
}

static int
resize(struct kvp_u64set *s, size_t ncap)
{
	struct kvp_u64set old = *s;

	s->keys = calloc(ncap, sizeof *s->keys);
	s->used = calloc(ncap, 1);
	s->vals = s->with_vals ? calloc(ncap, sizeof *s->vals) : NULL;
	if (s->keys == NULL || s->used == NULL ||
	    (s->with_vals && s->vals == NULL)) {
		free(s->keys);
		free(s->used);
		free(s->vals);
		*s = old;
		return -1;
	}
	s->cap = ncap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.used[i])
			place(s, old.keys[i], old.vals ? old.vals[i] : 0);
	free(old.keys);
	free(old.vals);
	free(old.used);
	return 0;
}

static int
grow(struct kvp_u64set *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 16;

	if (ncap < s->cap)
		return -1;
	return resize(s, ncap);
}

int
kvp_u64set_put(struct kvp_u64set *s, uint64_t key, uint64_t val)
{
	size_t mask, i;

	if (s->cap != 0) {
		mask = s->cap - 1;
		for (i = slot_of(key, mask); s->used[i]; i = (i + 1) & mask) {
			if (s->keys[i] == key) {
				if (s->vals != NULL)
					s->vals[i] = val;
				return 0;
			}
		}
	}
	if ((s->n + 1) * 4 > s->cap * 3 && grow(s) != 0)
		return -1;
	place(s, key, val);
	s->n++;
	return 1;
}

int
kvp_u64set_del(struct kvp_u64set *s, uint64_t key)
{
	size_t mask, i, j;

	if (s->n == 0)
		return 0;
	mask = s->cap - 1;
	for (i = slot_of(key, mask); s->used[i]; i = (i + 1) & mask)
		if (s->keys[i] == key)
			break;
	if (!s->used[i])
		return 0;
	/* Backward-shift: move later members of the probe run into the hole
	 * when their home slot does not lie cyclically in (hole, j]. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!s->used[j])
			break;
		home = slot_of(s->keys[j], mask);
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		s->keys[i] = s->keys[j];
		if (s->vals != NULL)
			s->vals[i] = s->vals[j];
		i = j;
	}
	s->used[i] = 0;
	s->n--;
	/* Shrink after mass deletion so memory follows the live keys; a
	 * failed shrink leaves a valid (larger) table. */
	if (s->cap > 64 && s->n * 8 < s->cap)
		(void)resize(s, s->cap / 4);
	return 1;
}

int
kvp_u64set_next(const struct kvp_u64set *s, size_t *pos, uint64_t *key,
                uint64_t *val)
{
	for (size_t i = *pos; i < s->cap; i++) {
		if (s->used[i]) {
			*key = s->keys[i];
			if (val != NULL)
				*val = s->vals ? s->vals[i] : 0;
			*pos = i + 1;
			return 1;
		}
	}
	*pos = s->cap;
	return 0;
}

size_t
kvp_u64set_bytes(const struct kvp_u64set *s)
{
	return s->cap * (sizeof(uint64_t) + 1 + (s->with_vals ? 8 : 0));
}
