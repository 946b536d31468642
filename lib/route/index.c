/* SPDX-License-Identifier: MIT */
/* index.c — see index.h. */
#include "route/index.h"

#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/kmap.h"

/* A tree node: 32 bytes. Holders live inline up to two, else in a heap
 * array whose capacity is the next power of two >= nh. */
struct node {
	uint64_t local;
	uint32_t parent; /* node index; also the free-list link */
	uint32_t nref;   /* external-hash entries mapping here */
	uint32_t nchild;
	uint32_t nh;
	union {
		uint32_t inl[2];
		uint32_t *heap;
	} h;
};

/* An edge slot: child node index (0: empty) and the low 32 bits of the
 * (parent, local) hash, so probes and shifts rarely touch the nodes. */
struct edge {
	uint32_t node;
	uint32_t hash;
};

#define CHUNK_SHIFT 12
#define CHUNK (1u << CHUNK_SHIFT)
#define CHUNK_BYTES (CHUNK * sizeof(struct node)) /* a bigmem chunk */

struct kvp_index {
	struct node **chunks; /* nodes in fixed chunks; node 0 is the root */
	size_t nchunks, capchunks;
	size_t nnodes, live;
	uint32_t freelist; /* 0: empty */
	struct edge *edges;
	size_t ecap, en;
	struct kvp_kmap ext; /* (holder, external hash) → node */
	int sparse;          /* kvp_index_new_sparse: edges at load <= 3/5 */
	struct kvp_holder *holders;
	size_t nholders, capholders;
	struct kvp_kmap hmap[KVP_TIER_COUNT]; /* (rank, worker) → id + 1 */
	uint64_t pairs;
	struct kvp_arena *ar; /* the owner's, for the node chunks */
};

#define NODE(ix, i) (&(ix)->chunks[(i) >> CHUNK_SHIFT][(i) & (CHUNK - 1)])

static const char *const tier_names[KVP_TIER_COUNT] = {"device", "host_pinned",
                                                       "disk", "external"};

int
kvp_tier_parse(const char *s)
{
	for (int i = 0; i < KVP_TIER_COUNT; i++)
		if (strcmp(s, tier_names[i]) == 0)
			return i;
	return -1;
}

const char *
kvp_tier_name(int tier)
{
	return tier >= 0 && tier < KVP_TIER_COUNT ? tier_names[tier] : "?";
}

struct kvp_index *
kvp_index_new(struct kvp_arena *ar)
{
	struct kvp_index *ix = calloc(1, sizeof(*ix));

	if (ix == NULL)
		return NULL;
	ix->ar = ar;
	ix->capchunks = 16;
	ix->chunks = calloc(ix->capchunks, sizeof(*ix->chunks));
	if (ix->chunks == NULL ||
	    (ix->chunks[0] = kvp_big_new(ar, CHUNK_BYTES, 1)) == NULL) {
		free(ix->chunks);
		free(ix);
		return NULL;
	}
	ix->nchunks = 1;
	ix->nnodes = 1;
	kvp_kmap_init(&ix->ext);
	for (int t = 0; t < KVP_TIER_COUNT; t++)
		kvp_kmap_init(&ix->hmap[t]);
	return ix;
}

struct kvp_index *
kvp_index_new_sparse(struct kvp_arena *ar)
{
	struct kvp_index *ix = kvp_index_new(ar);

	if (ix != NULL) {
		kvp_kmap_init_sparse(&ix->ext, ar); /* still empty */
		ix->sparse = 1;
	}
	return ix;
}

void
kvp_index_free(struct kvp_index *ix)
{
	if (ix == NULL)
		return;
	for (size_t i = 0; i < ix->nnodes; i++)
		if (NODE(ix, i)->nh > 2)
			free(NODE(ix, i)->h.heap);
	for (size_t i = 0; i < ix->nchunks; i++)
		kvp_big_free(ix->ar, ix->chunks[i], CHUNK_BYTES, 1);
	free(ix->chunks);
	free(ix->edges);
	kvp_kmap_fini(&ix->ext);
	for (int t = 0; t < KVP_TIER_COUNT; t++)
		kvp_kmap_fini(&ix->hmap[t]);
	free(ix->holders);
	free(ix);
}

/* ---- holders ----------------------------------------------------------- */

int64_t
kvp_index_holder(struct kvp_index *ix, uint64_t worker_id, uint32_t dp_rank,
                 int tier, int create)
{
	uint32_t v;

	if (tier < 0 || tier >= KVP_TIER_COUNT)
		return -1;
	v = kvp_kmap_get(&ix->hmap[tier], dp_rank, worker_id);
	if (v != 0)
		return (int64_t)v - 1;
	if (!create || ix->nholders >= UINT32_MAX - 1)
		return -1;
	if (ix->nholders == ix->capholders) {
		size_t nc = ix->capholders ? ix->capholders * 2 : 8;
		struct kvp_holder *nh = realloc(ix->holders, nc * sizeof(*nh));

		if (nh == NULL)
			return -1;
		ix->holders = nh;
		ix->capholders = nc;
	}
	if (kvp_kmap_put(&ix->hmap[tier], dp_rank, worker_id,
	                 (uint32_t)ix->nholders + 1, NULL) != 0)
		return -1;
	ix->holders[ix->nholders] = (struct kvp_holder){
	    .worker_id = worker_id, .dp_rank = dp_rank, .tier = (uint32_t)tier};
	return (int64_t)ix->nholders++;
}

size_t
kvp_index_nholders(const struct kvp_index *ix)
{
	return ix->nholders;
}

const struct kvp_holder *
kvp_index_holder_info(const struct kvp_index *ix, uint32_t h)
{
	return h < ix->nholders ? &ix->holders[h] : NULL;
}

/* ---- node holder sets -------------------------------------------------- */

static uint32_t *
holders_of(struct node *n)
{
	return n->nh <= 2 ? n->h.inl : n->h.heap;
}

static int
node_has(const struct node *n, uint32_t h)
{
	const uint32_t *v = n->nh <= 2 ? n->h.inl : n->h.heap;

	for (uint32_t i = 0; i < n->nh; i++)
		if (v[i] == h)
			return 1;
	return 0;
}

static int
is_pow2(uint32_t x)
{
	return (x & (x - 1)) == 0;
}

/* Adds h (absent) to n. */
static int
node_add(struct node *n, uint32_t h)
{
	if (n->nh < 2) {
		n->h.inl[n->nh++] = h;
		return 0;
	}
	if (n->nh == 2) {
		uint32_t *p = malloc(4 * sizeof(*p));

		if (p == NULL)
			return -1;
		p[0] = n->h.inl[0];
		p[1] = n->h.inl[1];
		n->h.heap = p;
	} else if (is_pow2(n->nh)) {
		uint32_t *p = realloc(n->h.heap, 2 * n->nh * sizeof(*p));

		if (p == NULL)
			return -1;
		n->h.heap = p;
	}
	n->h.heap[n->nh++] = h;
	return 0;
}

/* Removes h from n; returns 1 if it was there. */
static int
node_del(struct node *n, uint32_t h)
{
	uint32_t *v = holders_of(n);
	uint32_t i;

	for (i = 0; i < n->nh; i++)
		if (v[i] == h)
			break;
	if (i == n->nh)
		return 0;
	v[i] = v[n->nh - 1];
	n->nh--;
	if (n->nh == 2) {
		uint32_t a = v[0], b = v[1];

		free(n->h.heap);
		n->h.inl[0] = a;
		n->h.inl[1] = b;
	}
	return 1;
}

/* ---- edges: (parent, local) → child ----------------------------------- */

static uint32_t
edge_hash(uint32_t parent, uint64_t local)
{
	return (uint32_t)kvp_kmap_mix(parent, local);
}

static size_t
edge_home(size_t cap, uint32_t hv)
{
	return (size_t)(((uint64_t)hv * cap) >> 32);
}

/* Slot holding the child, or the empty slot where it would go. */
static size_t
edge_find(const struct kvp_index *ix, uint32_t parent, uint64_t local,
          uint32_t hv)
{
	size_t i = edge_home(ix->ecap, hv);

	for (;;) {
		const struct edge *e = &ix->edges[i];

		if (e->node == 0)
			return i;
		if (e->hash == hv) {
			const struct node *c = NODE(ix, e->node);

			if (c->parent == parent && c->local == local)
				return i;
		}
		if (++i == ix->ecap)
			i = 0;
	}
}

static uint32_t
edge_get(const struct kvp_index *ix, uint32_t parent, uint64_t local)
{
	if (ix->en == 0)
		return 0;
	return ix->edges[edge_find(ix, parent, local, edge_hash(parent, local))]
	    .node;
}

static int
edge_grow(struct kvp_index *ix)
{
	size_t ncap =
	    ix->ecap ? ix->ecap + ix->ecap / (ix->sparse ? 2 : 4) : 64;
	size_t ocap = ix->ecap;
	struct edge *old = ix->edges, *nt = calloc(ncap, sizeof(*nt));

	if (nt == NULL)
		return -1;
	ix->edges = nt;
	ix->ecap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].node != 0) {
			size_t j = edge_home(ncap, old[i].hash);

			while (nt[j].node != 0)
				if (++j == ncap)
					j = 0;
			nt[j] = old[i];
		}
	free(old);
	return 0;
}

static void
edge_del(struct kvp_index *ix, uint32_t child)
{
	const struct node *c = NODE(ix, child);
	size_t i, j;

	i = edge_find(ix, c->parent, c->local, edge_hash(c->parent, c->local));
	if (ix->edges[i].node != child)
		return;
	ix->en--;
	j = i;
	for (;;) {
		size_t k;

		ix->edges[i].node = 0;
		for (;;) {
			if (++j == ix->ecap)
				j = 0;
			if (ix->edges[j].node == 0)
				return;
			k = edge_home(ix->ecap, ix->edges[j].hash);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		ix->edges[i] = ix->edges[j];
		i = j;
	}
}

/* ---- node lifetime ------------------------------------------------------ */

/* Returns the child (parent, local), creating it; 0 on allocation
 * failure. */
static uint32_t
child_get_or_add(struct kvp_index *ix, uint32_t parent, uint64_t local)
{
	uint32_t hv = edge_hash(parent, local), c;
	struct node *n;
	size_t slot;

	if ((ix->en + 1) * 5 > ix->ecap * (ix->sparse ? 3 : 4) &&
	    edge_grow(ix) != 0)
		return 0;
	slot = edge_find(ix, parent, local, hv);
	if (ix->edges[slot].node != 0)
		return ix->edges[slot].node;
	if (ix->freelist != 0) {
		c = ix->freelist;
		ix->freelist = NODE(ix, c)->parent;
	} else {
		if (ix->nnodes == ix->nchunks * CHUNK) {
			if (ix->nnodes >= UINT32_MAX - CHUNK)
				return 0;
			if (ix->nchunks == ix->capchunks) {
				struct node **nc =
				    realloc(ix->chunks,
				            2 * ix->capchunks * sizeof(*nc));

				if (nc == NULL)
					return 0;
				ix->chunks = nc;
				ix->capchunks *= 2;
			}
			ix->chunks[ix->nchunks] =
			    kvp_big_new(ix->ar, CHUNK_BYTES, 1);
			if (ix->chunks[ix->nchunks] == NULL)
				return 0;
			ix->nchunks++;
		}
		c = (uint32_t)ix->nnodes++;
	}
	n = NODE(ix, c);
	memset(n, 0, sizeof(*n));
	n->local = local;
	n->parent = parent;
	ix->edges[slot].node = c;
	ix->edges[slot].hash = hv;
	ix->en++;
	NODE(ix, parent)->nchild++;
	ix->live++;
	return c;
}

/* Frees n and then its ancestors while they are unreferenced leaves. */
static void
maybe_free(struct kvp_index *ix, uint32_t c)
{
	while (c != 0) {
		struct node *n = NODE(ix, c);
		uint32_t p = n->parent;

		if (n->nref != 0 || n->nchild != 0 || n->nh != 0)
			return;
		edge_del(ix, c);
		NODE(ix, p)->nchild--;
		n->parent = ix->freelist;
		ix->freelist = c;
		ix->live--;
		c = p;
	}
}

/* Drops the mapping (h, ext) → c. */
static void
unmap(struct kvp_index *ix, uint32_t h, uint32_t c)
{
	struct node *n = NODE(ix, c);

	if (node_del(n, h)) {
		ix->holders[h].nblocks--;
		ix->pairs--;
	}
	n->nref--;
	maybe_free(ix, c);
}

/* ---- operations -----------------------------------------------------------
 */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Does ext[0..n) (n <= 64) repeat a hash or hold the parent? One pass
 * over a 128-slot open-addressing set (zero marks an empty slot, so the
 * zero hash is tracked on its own). */
static int
small_repeats(int has_parent, uint64_t parent, const uint64_t *ext, size_t n)
{
	uint64_t set[128] = {0};
	int zero = has_parent && parent == 0;

	if (has_parent && parent != 0)
		set[kvp_kmap_mix(0, parent) >> 57] = parent;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = ext[i];
		size_t j = kvp_kmap_mix(0, v) >> 57;

		if (v == 0) {
			if (zero)
				return 1;
			zero = 1;
			continue;
		}
		while (set[j] != 0 && set[j] != v)
			j = (j + 1) & 127;
		if (set[j] == v)
			return 1;
		set[j] = v;
	}
	return 0;
}

/* -1: allocation failure. */
static int
has_self_reference(int has_parent, uint64_t parent, const uint64_t *ext,
                   size_t n)
{
	if (n > 64) {
		uint64_t *s = malloc(n * sizeof(*s));
		int r = 0;

		if (s == NULL)
			return -1;
		memcpy(s, ext, n * sizeof(*s));
		qsort(s, n, sizeof(*s), cmp_u64);
		for (size_t i = 0; i < n && !r; i++)
			r = (i > 0 && s[i] == s[i - 1]) ||
			    (has_parent && s[i] == parent);
		free(s);
		return r;
	}
	return small_repeats(has_parent, parent, ext, n);
}

/* Stores ext[i] / local[i] (i from `from`) each the child of the previous,
 * the first under node p. */
static int
store_walk(struct kvp_index *ix, uint32_t h, uint32_t p, const uint64_t *ext,
           const uint64_t *local, size_t from, size_t n, size_t *added)
{
	for (size_t i = from; i < n; i++) {
		uint32_t c = child_get_or_add(ix, p, local[i]), old;

		if (c == 0)
			return KVP_STORE_NOMEM;
		/* One probe: map ext to c, learning the old node. c is
		 * referenced before old is released, so that cannot free
		 * it. */
		if (kvp_kmap_put(&ix->ext, h, ext[i], c, &old) != 0) {
			maybe_free(ix, c);
			return KVP_STORE_NOMEM;
		}
		if (old != c) {
			NODE(ix, c)->nref++;
			if (old != 0)
				unmap(ix, h, old);
		}
		if (!node_has(NODE(ix, c), h)) {
			if (node_add(NODE(ix, c), h) != 0)
				return KVP_STORE_NOMEM;
			ix->holders[h].nblocks++;
			ix->pairs++;
			(*added)++;
		}
		p = c;
	}
	return *added == 0 && n > 0 ? KVP_STORE_DUPLICATE : KVP_STORE_OK;
}

int
kvp_index_store(struct kvp_index *ix, uint32_t h, int has_parent,
                uint64_t parent, const uint64_t *ext, const uint64_t *local,
                size_t n, size_t *added)
{
	uint32_t p = 0;

	*added = 0;
	switch (has_self_reference(has_parent, parent, ext, n)) {
	case 1:
		return KVP_STORE_SELF_REFERENCE;
	case -1:
		return KVP_STORE_NOMEM;
	}
	for (size_t i = 0; i < n && i < 64; i++)
		kvp_kmap_prefetch(&ix->ext, h, ext[i]);
	if (has_parent) {
		p = kvp_kmap_get(&ix->ext, h, parent);
		if (p == 0)
			return KVP_STORE_PARENT_NOT_FOUND;
	}
	return store_walk(ix, h, p, ext, local, 0, n, added);
}

int
kvp_index_store_from(struct kvp_index *ix, uint32_t h, const uint64_t *ext,
                     const uint64_t *local, size_t n, size_t from,
                     size_t *added)
{
	uint32_t p = 0;

	*added = 0;
	switch (has_self_reference(0, 0, ext, n)) {
	case 1:
		return KVP_STORE_SELF_REFERENCE;
	case -1:
		return KVP_STORE_NOMEM;
	}
	if (from > n)
		from = n;
	if (from > 0 && (p = kvp_kmap_get(&ix->ext, h, ext[from - 1])) == 0)
		from = 0; /* not as promised: the whole walk */
	for (size_t i = from; i < n && i < from + 64; i++)
		kvp_kmap_prefetch(&ix->ext, h, ext[i]);
	return store_walk(ix, h, p, ext, local, from, n, added);
}

size_t
kvp_index_remove(struct kvp_index *ix, uint32_t h, const uint64_t *ext,
                 size_t n, size_t *unknown)
{
	size_t removed = 0;

	*unknown = 0;
	/* The lookups are independent: let their cache misses overlap. */
	for (size_t i = 0; i < n && i < 64 && n > 1; i++)
		kvp_kmap_prefetch(&ix->ext, h, ext[i]);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = kvp_kmap_del(&ix->ext, h, ext[i]);

		if (c == 0) {
			(*unknown)++;
			continue;
		}
		unmap(ix, h, c);
		removed++;
	}
	return removed;
}

int64_t
kvp_index_clear(struct kvp_index *ix, uint32_t h)
{
	uint64_t *list;
	size_t n = 0, unknown;

	if (h >= ix->nholders || ix->ext.n == 0)
		return 0;
	/* Collect first: deleting while scanning would move entries. */
	list = malloc((ix->ext.n + 1) * sizeof(*list));
	if (list == NULL)
		return -1;
	for (size_t i = 0; i < ix->ext.cap; i++)
		if (ix->ext.t[i].v != 0 && ix->ext.t[i].a == h)
			list[n++] = ix->ext.t[i].b;
	n = kvp_index_remove(ix, h, list, n, &unknown);
	free(list);
	return (int64_t)n;
}

size_t
kvp_index_match(const struct kvp_index *ix, const uint64_t *local, size_t n,
                int legacy, uint32_t *scores)
{
	uint32_t p = 0;
	size_t d;

	memset(scores, 0, ix->nholders * sizeof(*scores));
	for (d = 0; d < n; d++) {
		uint32_t c = edge_get(ix, p, local[d]);
		const struct node *nd;
		const uint32_t *v;
		int advanced = 0;

		if (c == 0)
			break;
		nd = NODE(ix, c);
		if (nd->nh == 0)
			break;
		v = nd->nh <= 2 ? nd->h.inl : nd->h.heap;
		for (uint32_t i = 0; i < nd->nh; i++) {
			if (legacy) {
				scores[v[i]]++;
				advanced = 1;
			} else if (scores[v[i]] == d) {
				scores[v[i]] = (uint32_t)d + 1;
				advanced = 1;
			}
		}
		if (!advanced)
			break;
		p = c;
	}
	return d;
}

int
kvp_index_has(const struct kvp_index *ix, uint32_t h, uint64_t ext)
{
	return kvp_kmap_get(&ix->ext, h, ext) != 0;
}

size_t
kvp_index_bytes(const struct kvp_index *ix)
{
	size_t b = sizeof(*ix) + ix->nchunks * CHUNK * sizeof(struct node) +
	           ix->capchunks * sizeof(struct node *) +
	           ix->ecap * sizeof(struct edge) + kvp_kmap_bytes(&ix->ext) +
	           ix->capholders * sizeof(struct kvp_holder);

	for (int t = 0; t < KVP_TIER_COUNT; t++)
		b += kvp_kmap_bytes(&ix->hmap[t]);
	for (size_t i = 1; i < ix->nnodes; i++) {
		const struct node *n = NODE(ix, i);
		uint32_t cap = 4;

		if (n->nh <= 2)
			continue;
		while (cap < n->nh)
			cap *= 2;
		b += cap * sizeof(uint32_t);
	}
	return b;
}

size_t
kvp_index_nodes(const struct kvp_index *ix)
{
	return ix->live;
}

uint64_t
kvp_index_pairs(const struct kvp_index *ix)
{
	return ix->pairs;
}
