/* SPDX-License-Identifier: MIT */
/*
 * fuzz_index.c — bytes → index operations (store / remove / clear /
 * match; stores from the root also as kvp_index_store_from with the
 * prefix the model knows) on 3 holders with a 4-symbol local-hash
 * alphabet, in the dense or the sparse index, checked after every
 * operation against a naive model: a list of (holder, ext, path)
 * mappings and a list of (holder, path) holdings. abort() on a mismatch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "route/index.h"

#define MAXD 8
#define MAXM 512

struct path {
	uint8_t n;
	uint64_t l[MAXD];
};

struct map {
	uint32_t h;
	uint64_t ext;
	struct path p;
};

static struct map maps[MAXM];
static size_t nmaps;
static struct {
	uint32_t h;
	struct path p;
} holds[MAXM];
static size_t nholds;

static int
peq(const struct path *a, const struct path *b)
{
	return a->n == b->n && memcmp(a->l, b->l, a->n * sizeof(a->l[0])) == 0;
}

static struct map *
mfind(uint32_t h, uint64_t ext)
{
	for (size_t i = 0; i < nmaps; i++)
		if (maps[i].h == h && maps[i].ext == ext)
			return &maps[i];
	return NULL;
}

static int
holds_has(uint32_t h, const struct path *p)
{
	for (size_t i = 0; i < nholds; i++)
		if (holds[i].h == h && peq(&holds[i].p, p))
			return 1;
	return 0;
}

static void
holds_del(uint32_t h, const struct path *p)
{
	for (size_t i = 0; i < nholds; i++)
		if (holds[i].h == h && peq(&holds[i].p, p)) {
			holds[i] = holds[--nholds];
			return;
		}
}

static void
model_match(const uint64_t *loc, size_t n, uint32_t *s)
{
	struct path p = {0, {0}};

	memset(s, 0, 3 * sizeof(*s));
	for (size_t d = 0; d < n; d++) {
		int moved = 0;

		p.l[p.n++] = loc[d];
		for (uint32_t h = 0; h < 3; h++)
			if (s[h] == d && holds_has(h, &p)) {
				s[h] = (uint32_t)d + 1;
				moved = 1;
			}
		if (!moved)
			break;
	}
}

/* A store in the index and the model. Returns -1 when the model's paths
 * would grow past MAXD (the run ends there). */
static int
op_store(struct kvp_index *ix, uint32_t h, uint8_t arg, const uint64_t *ext,
         const uint64_t *loc, size_t n)
{
	int hp = (arg >> 2) & 1;
	uint64_t parent = (arg >> 3) & 15;
	struct map *pm = hp ? mfind(h, parent) : NULL;
	struct path p = {0, {0}};
	size_t added;
	int self = 0, st;

	for (size_t a = 0; a < n; a++) {
		self |= hp && ext[a] == parent;
		for (size_t b = a + 1; b < n; b++)
			self |= ext[a] == ext[b];
	}
	if (!hp && (arg & 0x80)) { /* from the prefix the model says is known */
		size_t k = 0;

		for (; k < n; k++) {
			const struct map *m = mfind(h, ext[k]);

			p.l[p.n++] = loc[k];
			if (m == NULL || !peq(&m->p, &p) || !holds_has(h, &p))
				break;
		}
		p.n = 0;
		st = kvp_index_store_from(ix, h, ext, loc, n, k, &added);
	} else {
		st = kvp_index_store(ix, h, hp, parent, ext, loc, n, &added);
	}
	if (self) {
		if (st != KVP_STORE_SELF_REFERENCE)
			abort();
		return 0;
	}
	if (hp && pm == NULL) {
		if (st != KVP_STORE_PARENT_NOT_FOUND)
			abort();
		return 0;
	}
	if (pm != NULL)
		p = pm->p;
	if (p.n + n > MAXD)
		return -1;
	for (size_t a = 0; a < n; a++) {
		struct map *m = mfind(h, ext[a]);

		p.l[p.n++] = loc[a];
		if (m != NULL && !peq(&m->p, &p))
			holds_del(h, &m->p);
		if (m == NULL) {
			m = &maps[nmaps++];
			m->h = h;
			m->ext = ext[a];
		}
		m->p = p;
		if (!holds_has(h, &p)) {
			holds[nholds].h = h;
			holds[nholds].p = p;
			nholds++;
		}
	}
	return 0;
}

static void
op_remove(struct kvp_index *ix, uint32_t h, const uint64_t *ext, size_t n)
{
	size_t want = 0, unknown;

	for (size_t a = 0; a < n; a++) {
		struct map *m = mfind(h, ext[a]);

		if (m == NULL)
			continue;
		want++;
		holds_del(h, &m->p);
		*m = maps[--nmaps];
	}
	if (kvp_index_remove(ix, h, ext, n, &unknown) != want)
		abort();
}

static void
op_clear(struct kvp_index *ix, uint32_t h)
{
	kvp_index_clear(ix, h);
	for (size_t a = 0; a < nmaps;)
		if (maps[a].h == h)
			maps[a] = maps[--nmaps];
		else
			a++;
	for (size_t a = 0; a < nholds;)
		if (holds[a].h == h)
			holds[a] = holds[--nholds];
		else
			a++;
}

static void
op_match(struct kvp_index *ix, const uint64_t *loc, size_t n)
{
	uint32_t got[3], want[3];

	kvp_index_match(ix, loc, n, 0, got);
	model_match(loc, n, want);
	if (memcmp(got, want, sizeof(got)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an odd first byte: the sparse variant, the same contents */
	struct kvp_index *ix = size > 0 && (data[0] & 1)
	                           ? kvp_index_new_sparse(NULL)
	                           : kvp_index_new(NULL);
	size_t i = 0;

	if (ix == NULL)
		return 0;
	nmaps = nholds = 0;
	for (uint32_t h = 0; h < 3; h++)
		(void)kvp_index_holder(ix, h, 0, 0, 1);
	while (i + 2 <= size && nmaps < MAXM - 8 && nholds < MAXM - 8) {
		uint8_t op = data[i++], arg = data[i++];
		uint32_t h = (op >> 2) % 3;
		uint64_t ext[4], loc[4];
		size_t n = (arg & 3) + 1;

		for (size_t k = 0; k < n && i < size; k++, i++) {
			ext[k] = data[i] & 15;
			loc[k] = (data[i] >> 4) & 3;
		}
		switch (op & 3) {
		case 0:
			if (op_store(ix, h, arg, ext, loc, n) != 0) {
				/* keep the model bounded: stop here */
				kvp_index_free(ix);
				return 0;
			}
			break;
		case 1:
			op_remove(ix, h, ext, n);
			break;
		case 2:
			if (arg & 0x80)
				op_clear(ix, h);
			break;
		default:
			op_match(ix, loc, n);
		}
		if (kvp_index_pairs(ix) != nholds)
			abort();
	}
	/* Clearing everything must free every node. */
	for (uint32_t h = 0; h < 3; h++)
		kvp_index_clear(ix, h);
	if (kvp_index_nodes(ix) != 0 || kvp_index_pairs(ix) != 0)
		abort();
	kvp_index_free(ix);
	return 0;
}
