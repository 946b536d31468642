/* SPDX-License-Identifier: MIT */
/* kmap.c — see kmap.h. */
#include "common/kmap.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/bigmem.h"

/* Tables come from bigmem.h: a sparse map's are "whole" regions. */
static struct kvp_kmap_ent *
table_new(struct kvp_arena *ar, size_t cap, int sparse)
{
	if (cap > SIZE_MAX / sizeof(struct kvp_kmap_ent) / 2)
		return NULL;
	return kvp_big_new(ar, cap * sizeof(struct kvp_kmap_ent), sparse);
}

static void
table_free(struct kvp_arena *ar, struct kvp_kmap_ent *t, size_t cap, int sparse)
{
	kvp_big_free(ar, t, cap * sizeof(struct kvp_kmap_ent), sparse);
}

uint64_t
kvp_kmap_mix(uint32_t a, uint64_t b)
{
	uint64_t z = b ^ ((uint64_t)a * 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Home slot: the hash scaled onto [0, cap) (Lemire's multiply-shift), so
 * the capacity need not be a power of two and can grow by 1.25x. */
static size_t
home(const struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	return (size_t)(((unsigned __int128)kvp_kmap_mix(a, b) * m->cap) >> 64);
}

void
kvp_kmap_init(struct kvp_kmap *m)
{
	m->t = NULL;
	m->cap = 0;
	m->n = 0;
	m->sparse = 0;
	m->ar = NULL;
}

void
kvp_kmap_init_sparse(struct kvp_kmap *m, struct kvp_arena *ar)
{
	kvp_kmap_init(m);
	m->sparse = 1;
	m->ar = ar;
}

/* Must the table grow before one more entry goes in? */
static int
full(const struct kvp_kmap *m)
{
	return m->sparse ? (m->n + 1) * 5 > m->cap * 3
	                 : (m->n + 1) * 5 > m->cap * 4;
}

void
kvp_kmap_fini(struct kvp_kmap *m)
{
	table_free(m->ar, m->t, m->cap, m->sparse);
	kvp_kmap_init(m);
}

/* The slot of (a, b), or the empty one ending its probe run from i. */
static size_t
find_from(const struct kvp_kmap *m, size_t i, uint32_t a, uint64_t b)
{
	for (;;) {
		const struct kvp_kmap_ent *e = &m->t[i];

		if (e->v == 0 || (e->a == a && e->b == b))
			return i;
		if (++i == m->cap)
			i = 0;
	}
}

static size_t
find(const struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	return find_from(m, home(m, a, b), a, b);
}

uint32_t
kvp_kmap_get(const struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	if (m->n == 0)
		return 0;
	return m->t[find(m, a, b)].v;
}

void
kvp_kmap_get_many(const struct kvp_kmap *m, uint32_t a, const uint64_t *b,
                  size_t n, uint32_t *out)
{
	size_t home_of[16];

	if (m->n == 0) {
		memset(out, 0, n * sizeof(*out));
		return;
	}
	for (size_t i = 0; i < n; i += 16) {
		size_t k = n - i < 16 ? n - i : 16;

		for (size_t j = 0; j < k; j++) {
			home_of[j] = home(m, a, b[i + j]);
			__builtin_prefetch(&m->t[home_of[j]]);
		}
		for (size_t j = 0; j < k; j++)
			out[i + j] =
			    m->t[find_from(m, home_of[j], a, b[i + j])].v;
	}
}

uint32_t *
kvp_kmap_ref(struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	size_t i;

	if (m->n == 0)
		return NULL;
	i = find(m, a, b);
	return m->t[i].v != 0 ? &m->t[i].v : NULL;
}

size_t
kvp_kmap_prefix(const struct kvp_kmap *m, uint32_t a, const uint64_t *b,
                size_t n)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (kvp_kmap_get(m, a, b[mid]) != 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
grow(struct kvp_kmap *m)
{
	size_t ncap = m->cap ? m->cap + m->cap / (m->sparse ? 1 : 4) : 16;
	struct kvp_kmap_ent *nt = table_new(m->ar, ncap, m->sparse);
	struct kvp_kmap old = *m;

	if (nt == NULL)
		return -1;
	m->t = nt;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.t[i].v != 0)
			m->t[find(m, old.t[i].a, old.t[i].b)] = old.t[i];
	table_free(old.ar, old.t, old.cap, old.sparse);
	return 0;
}

int
kvp_kmap_put(struct kvp_kmap *m, uint32_t a, uint64_t b, uint32_t v,
             uint32_t *old)
{
	size_t i;

	if (full(m) && grow(m) != 0)
		return -1;
	i = find(m, a, b);
	if (old != NULL)
		*old = m->t[i].v;
	if (m->t[i].v == 0)
		m->n++;
	m->t[i].a = a;
	m->t[i].b = b;
	m->t[i].v = v;
	return 0;
}

uint32_t *
kvp_kmap_upsert(struct kvp_kmap *m, uint32_t a, uint64_t b, uint32_t vinit,
                int *inserted)
{
	size_t i;

	if (full(m) && grow(m) != 0)
		return NULL;
	i = find(m, a, b);
	*inserted = m->t[i].v == 0;
	if (*inserted) {
		m->t[i].a = a;
		m->t[i].b = b;
		m->t[i].v = vinit;
		m->n++;
	}
	return &m->t[i].v;
}

/* Empties slot i, then pulls later members of its cluster into the hole
 * when their home slot does not lie cyclically in (i, j] (backward
 * shift). */
static void
del_at(struct kvp_kmap *m, size_t i)
{
	size_t j = i;

	m->n--;
	for (;;) {
		size_t k;

		m->t[i].v = 0;
		for (;;) {
			if (++j == m->cap)
				j = 0;
			if (m->t[j].v == 0)
				return;
			k = home(m, m->t[j].a, m->t[j].b);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->t[i] = m->t[j];
		i = j;
	}
}

void
kvp_kmap_del_ref(struct kvp_kmap *m, uint32_t *ref)
{
	struct kvp_kmap_ent *e =
	    (struct kvp_kmap_ent *)(void *)((char *)ref -
	                                    offsetof(struct kvp_kmap_ent, v));

	del_at(m, (size_t)(e - m->t));
}

uint32_t
kvp_kmap_del(struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	size_t i;
	uint32_t v;

	if (m->n == 0)
		return 0;
	i = find(m, a, b);
	v = m->t[i].v;
	if (v != 0)
		del_at(m, i);
	return v;
}

void
kvp_kmap_prefetch(const struct kvp_kmap *m, uint32_t a, uint64_t b)
{
	if (m->cap != 0)
		__builtin_prefetch(&m->t[home(m, a, b)]);
}

size_t
kvp_kmap_bytes(const struct kvp_kmap *m)
{
	return kvp_big_len(m->ar, m->cap * sizeof(*m->t), m->sparse);
}
