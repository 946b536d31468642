/* SPDX-License-Identifier: MIT */
/*
 * engine_model.c — what each engine will report as cached
 * (--engine-model vllm|sglang): per candidate (worker, dp rank) a
 * simulated prefix cache that follows that engine's rules, fed by the
 * router's own decisions and the lifecycle of its active requests
 * (route_view.h: prefill done, released). It never changes the router's
 * index or a decision; it only predicts. The rules (route-score(1)):
 *
 *  - cached: the leading blocks the cache holds, at most the whole
 *    blocks before the prompt's last token, (isl − 1) / bs of them;
 *  - vLLM (vllm/v1/core kv_cache_manager.py, block_pool.py): a request's
 *    blocks are hittable once it is scheduled (here: routed); they are
 *    held (ref counted) while it runs; a finished request's blocks join
 *    the free-block queue's tail in reverse order (its last block first),
 *    and a new block evicts the queue's head; a hit takes a block out of
 *    the queue;
 *  - SGLang (mem_cache/radix_cache.py, hiradix_cache.py): a request's
 *    blocks enter the radix tree when its prefill ends (its prefill_done,
 *    or its release when none came first); the matched path is locked
 *    while it runs, and the whole prompt from its insertion on; memory is
 *    the tree's device blocks plus the blocks running requests allocated
 *    and have not inserted; eviction takes the least recently used
 *    unlocked leaf; with a host tier (HiCache, write-through) every
 *    inserted block is copied to the host, a device eviction keeps the
 *    host copy, a match continues from device into host and loads those
 *    blocks back; the host evicts its own LRU leaves among the blocks no
 *    longer on the device.
 *
 * Blocks are keyed (candidate, sequence hash): a sequence hash names its
 * whole prefix, so a radix tree over blocks is a set of hashes with parent
 * links (a hash repeated within a request, a collision, is held twice by
 * it and counted once). Eviction heaps are lazy: an item is (stamp, entry) and
 * counts only while the entry is live, evictable and carries that stamp.
 */
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "common/kmap.h"
#include "common/util.h"
#include "lab/lab_internal.h"
#include "route/route_view.h"

struct em_ent {
	uint64_t seq, parent;
	uint64_t stamp;      /* sglang: last access */
	uint32_t ci, ref;    /* ref: running requests holding it */
	uint32_t dchild;     /* sglang: children on the device */
	uint32_t tchild;     /* sglang: children in the tree (device or host) */
	uint32_t prev, next; /* vllm: free-block queue (entry + 1) */
	unsigned char live, dev, host, has_parent, queued;
};

struct em_item {
	uint64_t stamp;
	uint32_t e; /* entry + 1 */
};

struct em_heap {
	struct em_item *v;
	size_t n, cap;
};

struct em_cand {
	uint64_t ndev, nhost, pending;
	uint32_t qhead, qtail;       /* vllm: evict from the head */
	struct em_heap dheap, hheap; /* sglang: device, host leaves */
};

struct em_req {
	uint64_t gen;
	uint32_t slot, ci;
	uint64_t *seq;
	uint32_t n, locked; /* blocks; the leading ones it holds */
	int inserted;       /* sglang: in the tree */
};

struct kvp_engine {
	int model;
	uint64_t cap, hcap; /* 0: unbounded, none */
	uint32_t bs;
	struct kvp_kmap map; /* (cand, seq) → entry + 1 */
	struct em_ent *ents;
	size_t nents, capents;
	uint32_t *freel;
	size_t nfree, capfree;
	struct em_cand *cands;
	size_t capcands;
	struct em_req *run;
	size_t nrun, caprun;
	uint64_t serial, changes;
	int oom;
	struct kvp_engine_totals t;
};

const char *const *
kvp_engine_names(void)
{
	static const char *const names[] = {"none", "vllm", "sglang", NULL};

	return names;
}

struct kvp_engine *
kvp_engine_new(int model, uint64_t capacity, uint64_t host_capacity,
               uint32_t block_size)
{
	struct kvp_engine *E = calloc(1, sizeof(*E));

	if (E == NULL)
		return NULL;
	E->model = model;
	E->cap = capacity;
	E->hcap = model == KVP_ENGINE_SGLANG ? host_capacity : 0;
	E->bs = block_size;
	E->changes = UINT64_MAX;             /* the first poll looks */
	kvp_kmap_init_sparse(&E->map, NULL); /* probed per block */
	return E;
}

void
kvp_engine_free(struct kvp_engine *E)
{
	if (E == NULL)
		return;
	for (size_t i = 0; i < E->nrun; i++)
		free(E->run[i].seq);
	for (size_t i = 0; i < E->capcands; i++) {
		free(E->cands[i].dheap.v);
		free(E->cands[i].hheap.v);
	}
	kvp_kmap_fini(&E->map);
	free(E->ents);
	free(E->freel);
	free(E->cands);
	free(E->run);
	free(E);
}

/* ---- entries ----------------------------------------------------------- */

static struct em_ent *
ent(const struct kvp_engine *E, uint32_t e)
{
	return &E->ents[e - 1];
}

static uint32_t
ent_get(const struct kvp_engine *E, uint32_t ci, uint64_t seq)
{
	return kvp_kmap_get(&E->map, ci, seq);
}

/* A new entry (ci, seq), not on any tier yet; 0 on allocation failure. */
static uint32_t
ent_new(struct kvp_engine *E, uint32_t ci, uint64_t seq, int has_parent,
        uint64_t parent)
{
	uint32_t e;
	struct em_ent *x;

	/* room to hand the entry back if the map cannot take it */
	if (kvp_grow(&E->freel, &E->capfree, E->nfree + 1, sizeof(*E->freel)))
		return 0;
	if (E->nfree > 0) {
		e = E->freel[--E->nfree];
	} else {
		if (E->nents >= UINT32_MAX - 1 ||
		    kvp_grow(&E->ents, &E->capents, E->nents + 1,
		             sizeof(*E->ents)) != 0)
			return 0;
		e = (uint32_t)++E->nents;
	}
	if (kvp_kmap_put(&E->map, ci, seq, e, NULL) != 0) {
		E->freel[E->nfree++] = e;
		ent(E, e)->live = 0;
		return 0;
	}
	x = ent(E, e);
	memset(x, 0, sizeof(*x));
	x->seq = seq;
	x->ci = ci;
	x->live = 1;
	x->has_parent = (unsigned char)has_parent;
	x->parent = parent;
	return e;
}

static int
ent_del(struct kvp_engine *E, uint32_t e)
{
	struct em_ent *x = ent(E, e);

	kvp_kmap_del(&E->map, x->ci, x->seq);
	x->live = 0;
	if (kvp_grow(&E->freel, &E->capfree, E->nfree + 1, sizeof(*E->freel)))
		return -1;
	E->freel[E->nfree++] = e;
	return 0;
}

static uint32_t
parent_of(const struct kvp_engine *E, const struct em_ent *x)
{
	return x->has_parent ? ent_get(E, x->ci, x->parent) : 0;
}

static int
cands_for(struct kvp_engine *E, uint32_t ci)
{
	size_t old = E->capcands;

	if (ci < E->capcands)
		return 0;
	if (kvp_grow(&E->cands, &E->capcands, (size_t)ci + 1,
	             sizeof(*E->cands)) != 0)
		return -1;
	memset(E->cands + old, 0, (E->capcands - old) * sizeof(*E->cands));
	return 0;
}

/* Nothing evictable with `used` blocks in use: the peak over capacity. */
static void
over(struct kvp_engine *E, uint64_t used)
{
	if (used - E->cap > E->t.overflow)
		E->t.overflow = used - E->cap;
}

/* ---- vLLM: the free-block queue --------------------------------------- */

static void
q_unlink(struct kvp_engine *E, struct em_cand *c, uint32_t e)
{
	struct em_ent *x = ent(E, e);

	if (x->prev)
		ent(E, x->prev)->next = x->next;
	else
		c->qhead = x->next;
	if (x->next)
		ent(E, x->next)->prev = x->prev;
	else
		c->qtail = x->prev;
	x->prev = x->next = 0;
	x->queued = 0;
}

static void
q_append(struct kvp_engine *E, struct em_cand *c, uint32_t e)
{
	struct em_ent *x = ent(E, e);

	x->next = 0;
	x->prev = c->qtail;
	if (c->qtail)
		ent(E, c->qtail)->next = e;
	else
		c->qhead = e;
	c->qtail = e;
	x->queued = 1;
}

/* Room for one more block on candidate ci: evict the queue's head. */
static int
vllm_room(struct kvp_engine *E, uint32_t ci)
{
	struct em_cand *c = &E->cands[ci];

	while (E->cap > 0 && c->ndev > E->cap) {
		uint32_t e = c->qhead;

		if (e == 0) { /* every block is held by a running request */
			over(E, c->ndev);
			return 0;
		}
		q_unlink(E, c, e);
		c->ndev--;
		E->t.evictions++;
		if (ent_del(E, e) != 0)
			return -1;
	}
	return 0;
}

/* Scheduled: every block is held; a new one may evict. */
static int
vllm_schedule(struct kvp_engine *E, struct em_req *q)
{
	struct em_cand *c = &E->cands[q->ci];

	for (uint32_t i = 0; i < q->n; i++) {
		uint32_t e = ent_get(E, q->ci, q->seq[i]);

		if (e == 0) {
			e = ent_new(E, q->ci, q->seq[i], i > 0,
			            i > 0 ? q->seq[i - 1] : 0);
			if (e == 0)
				return -1;
			ent(E, e)->dev = 1;
			ent(E, e)->ref = 1;
			c->ndev++;
			if (vllm_room(E, q->ci) != 0)
				return -1;
		} else {
			if (ent(E, e)->queued)
				q_unlink(E, c, e);
			ent(E, e)->ref++;
		}
		q->locked = i + 1;
	}
	return 0;
}

/* Finished: its blocks join the queue's tail, the last block first. */
static void
vllm_finish(struct kvp_engine *E, struct em_req *q)
{
	struct em_cand *c = &E->cands[q->ci];

	for (uint32_t i = q->locked; i-- > 0;) {
		uint32_t e = ent_get(E, q->ci, q->seq[i]);

		if (e != 0 && ent(E, e)->ref > 0 && --ent(E, e)->ref == 0)
			q_append(E, c, e);
	}
	q->locked = 0;
}

/* ---- SGLang: the radix tree's LRU leaves ------------------------------ */

static int
before(const struct em_item *a, const struct em_item *b)
{
	return a->stamp < b->stamp || (a->stamp == b->stamp && a->e < b->e);
}

KVP_HEAP_DEFINE(heap, em_heap, struct em_item, before)

static int
dev_leaf(const struct em_ent *x)
{
	return x->live && x->dev && x->dchild == 0 && x->ref == 0;
}

static int
host_leaf(const struct em_ent *x)
{
	return x->live && x->host && !x->dev && x->tchild == 0;
}

/* Drops the heap's items that no longer count (it stays a heap). */
static void
heap_compact(const struct kvp_engine *E, struct em_heap *h, int host)
{
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct em_ent *x = ent(E, h->v[i].e);

		if (x->stamp == h->v[i].stamp &&
		    (host ? host_leaf(x) : dev_leaf(x)))
			h->v[k++] = h->v[i];
	}
	h->n = k;
	for (size_t i = k / 2; i-- > 0;)
		heap_sift(h, i);
}

/* Entry e joins its candidate's heaps where it is an evictable leaf. */
static int
leaf_push(struct kvp_engine *E, uint32_t e)
{
	const struct em_ent *x = ent(E, e);
	struct em_cand *c = &E->cands[x->ci];
	struct em_heap *h = dev_leaf(x)    ? &c->dheap
	                    : host_leaf(x) ? &c->hheap
	                                   : NULL;

	if (h == NULL)
		return 0;
	if (h->n > 4 * (c->ndev + c->nhost) + 64)
		heap_compact(E, h, h == &c->hheap);
	return heap_push(h, (struct em_item){x->stamp, e});
}

static void
touch(struct kvp_engine *E, uint32_t e)
{
	ent(E, e)->stamp = ++E->serial;
}

/* Entry e leaves the tree; its parent may become a leaf. */
static int
tree_delete(struct kvp_engine *E, uint32_t e)
{
	uint32_t p = parent_of(E, ent(E, e));

	if (ent_del(E, e) != 0)
		return -1;
	if (p == 0)
		return 0;
	ent(E, p)->tchild--;
	return leaf_push(E, p);
}

/* The host's least recently used leaf no longer on the device goes: 1,
 * 0 when there is none, -1 on allocation failure. */
static int
host_evict(struct kvp_engine *E, uint32_t ci)
{
	struct em_heap *h = &E->cands[ci].hheap;

	while (h->n > 0) {
		struct em_item it = heap_pop(h);
		struct em_ent *x = ent(E, it.e);

		if (x->stamp != it.stamp || !host_leaf(x))
			continue;
		x->host = 0;
		E->cands[ci].nhost--;
		E->t.host_evictions++;
		return tree_delete(E, it.e) != 0 ? -1 : 1;
	}
	return 0;
}

/* The device's least recently used unlocked leaf goes; a host copy keeps
 * it in the tree. 1, 0 when there is none, -1 on allocation failure. */
static int
dev_evict(struct kvp_engine *E, uint32_t ci)
{
	struct em_heap *h = &E->cands[ci].dheap;

	while (h->n > 0) {
		struct em_item it = heap_pop(h);
		struct em_ent *x = ent(E, it.e);
		uint32_t p;

		if (x->stamp != it.stamp || !dev_leaf(x))
			continue;
		x->dev = 0;
		E->cands[ci].ndev--;
		E->t.evictions++;
		if ((p = parent_of(E, x)) != 0) {
			ent(E, p)->dchild--;
			if (leaf_push(E, p) != 0)
				return -1;
		}
		if (x->host)
			return leaf_push(E, it.e) != 0 ? -1 : 1;
		return tree_delete(E, it.e) != 0 ? -1 : 1;
	}
	return 0;
}

/* Device memory (tree blocks and running requests' uninserted ones) back
 * within the capacity, as far as unlocked leaves allow. */
static int
sg_room(struct kvp_engine *E, uint32_t ci)
{
	struct em_cand *c = &E->cands[ci];

	while (E->cap > 0 && c->ndev + c->pending > E->cap) {
		int rc = dev_evict(E, ci);

		if (rc < 0)
			return -1;
		if (rc == 0) {
			over(E, c->ndev + c->pending);
			return 0;
		}
	}
	return 0;
}

/* Write-through: a block new on the device is copied to the host, room
 * made by the host's LRU (none: no copy). */
static int
host_copy(struct kvp_engine *E, uint32_t e)
{
	struct em_ent *x = ent(E, e);
	struct em_cand *c = &E->cands[x->ci];
	uint32_t ci = x->ci;

	if (E->hcap == 0 || x->host)
		return 0;
	if (c->nhost >= E->hcap && host_evict(E, ci) < 0)
		return -1;
	x = ent(E, e);
	if (E->cands[ci].nhost >= E->hcap)
		return 0;
	x->host = 1;
	E->cands[ci].nhost++;
	return 0;
}

/* Entry e (host only) comes back onto the device, held by a request. */
static int
load_back(struct kvp_engine *E, uint32_t e)
{
	struct em_ent *x = ent(E, e);
	uint32_t p = parent_of(E, x), ci = x->ci;

	x->dev = 1;
	x->ref++;
	E->cands[ci].ndev++;
	E->t.loaded_back++;
	if (p != 0)
		ent(E, p)->dchild++;
	return sg_room(E, ci);
}

/* Scheduled: the matched path (device, then host loaded back) is locked,
 * the rest allocated (pending until inserted). lim: the blocks it may
 * match. */
static int
sg_schedule(struct kvp_engine *E, struct em_req *q, uint32_t lim)
{
	struct em_cand *c = &E->cands[q->ci];
	uint32_t k = 0, e;

	while (k < lim && (e = ent_get(E, q->ci, q->seq[k])) != 0) {
		if (ent(E, e)->dev) {
			ent(E, e)->ref++;
		} else if (!ent(E, e)->host || load_back(E, e) != 0) {
			if (ent(E, e)->host) /* load_back failed */
				return -1;
			break;
		}
		touch(E, e);
		q->locked = ++k;
	}
	c->pending += q->n - k;
	return sg_room(E, q->ci);
}

/* One block of an insertion (i: its place in the request). */
static int
sg_insert_one(struct kvp_engine *E, struct em_req *q, uint32_t i)
{
	struct em_cand *c = &E->cands[q->ci];
	uint32_t e = ent_get(E, q->ci, q->seq[i]), p;

	c->pending--;
	if (e == 0) {
		e = ent_new(E, q->ci, q->seq[i], i > 0,
		            i > 0 ? q->seq[i - 1] : 0);
		if (e == 0)
			return -1;
		if ((p = parent_of(E, ent(E, e))) != 0)
			ent(E, p)->tchild++;
	}
	if (!ent(E, e)->dev) { /* new, or only on the host */
		ent(E, e)->dev = 1;
		c->ndev++;
		if ((p = parent_of(E, ent(E, e))) != 0)
			ent(E, p)->dchild++;
	}
	ent(E, e)->ref++;
	touch(E, e);
	return host_copy(E, e);
}

/* The prefill ended: the prompt enters the tree, locked while it runs. */
static int
sg_insert(struct kvp_engine *E, struct em_req *q)
{
	for (uint32_t i = q->locked; i < q->n; i++) {
		if (sg_insert_one(E, q, i) != 0)
			return -1;
		q->locked = i + 1;
	}
	q->inserted = 1;
	return 0;
}

/* Finished (inserted first if its prefill never ended): unlocked. */
static int
sg_finish(struct kvp_engine *E, struct em_req *q)
{
	if (!q->inserted && sg_insert(E, q) != 0)
		return -1;
	/* the insertion at the end touches root first, as a match does */
	for (uint32_t i = 0; i < q->locked; i++) {
		uint32_t e = ent_get(E, q->ci, q->seq[i]);

		if (e != 0)
			touch(E, e);
	}
	for (uint32_t i = q->locked; i-- > 0;) {
		uint32_t e = ent_get(E, q->ci, q->seq[i]);

		if (e == 0 || ent(E, e)->ref == 0)
			continue;
		ent(E, e)->ref--;
		if (leaf_push(E, e) != 0)
			return -1;
	}
	q->locked = 0;
	return 0;
}

/* ---- requests ----------------------------------------------------------- */

/* The whole blocks before the prompt's last token. */
static uint64_t
cap_blocks(const struct kvp_engine *E, uint64_t isl)
{
	return isl > 0 && E->bs > 0 ? (isl - 1) / E->bs : 0;
}

static int
finish(struct kvp_engine *E, struct em_req *q)
{
	if (E->model == KVP_ENGINE_VLLM) {
		vllm_finish(E, q);
		return 0;
	}
	return sg_finish(E, q);
}

void
kvp_engine_poll(struct kvp_engine *E, const struct kvp_router *r)
{
	uint64_t ch = kvp_view_req_changes(r);

	if (ch == E->changes)
		return;
	E->changes = ch;
	for (size_t i = E->nrun; i-- > 0;) {
		struct em_req *q = &E->run[i];
		int st = kvp_view_req_state(r, q->slot, q->gen);

		if (st == 2 && E->model == KVP_ENGINE_SGLANG && !q->inserted &&
		    sg_insert(E, q) != 0)
			E->oom = 1;
		if (st != 0)
			continue;
		if (finish(E, q) != 0)
			E->oom = 1;
		free(q->seq);
		E->run[i] = E->run[--E->nrun];
	}
}

uint64_t
kvp_engine_predict(struct kvp_engine *E, uint32_t ci,
                   const struct kvp_request *q, const uint64_t *seq)
{
	uint64_t lim = cap_blocks(E, q->isl), k = 0;
	size_t n = q->n;

	if (ci >= E->capcands)
		return 0;
	while (k < lim && k < n) {
		uint32_t e = ent_get(E, ci, seq[k]);

		if (e == 0 || !(ent(E, e)->dev || ent(E, e)->host))
			break;
		k++;
	}
	return k * E->bs;
}

int
kvp_engine_commit(struct kvp_engine *E, struct kvp_router *r, uint32_t ci,
                  const struct kvp_request *q, const uint64_t *seq)
{
	size_t n = q->n;
	uint64_t lim = cap_blocks(E, q->isl);
	struct em_req *x;

	kvp_engine_poll(E, r);
	if (E->oom || cands_for(E, ci) != 0 ||
	    kvp_grow(&E->run, &E->caprun, E->nrun + 1, sizeof(*E->run)) != 0)
		return -1;
	x = &E->run[E->nrun];
	memset(x, 0, sizeof(*x));
	kvp_view_added(r, &x->slot, &x->gen);
	x->ci = ci;
	x->n = (uint32_t)n;
	if ((x->seq = malloc((n ? n : 1) * sizeof(*x->seq))) == NULL)
		return -1;
	if (n > 0)
		memcpy(x->seq, seq, n * sizeof(*seq));
	E->nrun++;
	if (E->model == KVP_ENGINE_VLLM)
		return vllm_schedule(E, x);
	return sg_schedule(E, x, (uint32_t)(lim < n ? lim : n));
}

int
kvp_engine_oom(const struct kvp_engine *E)
{
	return E->oom;
}

/* Candidate ci's cache is emptied (a reset: vLLM's reset_prefix_cache,
 * SGLang's flush_cache): every block no running request holds goes,
 * from both tiers; the held ones stay, and the tree's counts are made
 * again over them. */
void
kvp_engine_clear(struct kvp_engine *E, struct kvp_router *r, uint32_t ci)
{
	struct em_cand *c;

	kvp_engine_poll(E, r);
	if (ci >= E->capcands)
		return;
	c = &E->cands[ci];
	c->ndev = c->nhost = 0;
	c->qhead = c->qtail = 0;
	c->dheap.n = c->hheap.n = 0;
	for (size_t e = 1; e <= E->nents; e++) {
		struct em_ent *x = ent(E, (uint32_t)e);

		if (!x->live || x->ci != ci)
			continue;
		if (x->ref == 0) {
			if (ent_del(E, (uint32_t)e) != 0)
				E->oom = 1;
			continue;
		}
		x->dchild = x->tchild = 0;
		x->queued = 0;
		x->prev = x->next = 0;
		x->host = 0;
		c->ndev += x->dev;
	}
	for (size_t e = 1; e <= E->nents; e++) {
		struct em_ent *x = ent(E, (uint32_t)e);
		uint32_t p;

		if (!x->live || x->ci != ci || (p = parent_of(E, x)) == 0)
			continue;
		ent(E, p)->tchild++;
		ent(E, p)->dchild += x->dev;
	}
	E->t.clears++;
}

void
kvp_engine_totals(const struct kvp_engine *E, struct kvp_engine_totals *t)
{
	*t = E->t;
}
