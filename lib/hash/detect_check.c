/* SPDX-License-Identifier: MIT */
/*
 * detect_check.c — verification of a stream under one candidate profile,
 * and the seed search (detect.h; docs/spec/engine-hashes.md §7.4, §7.5).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/u64set.h"
#include "common/util.h"
#include "hash/engine_rec.h"
#include "hash/hash_internal.h"

/* Scratch for one candidate run. */
struct work {
	struct kvp_eh eh;
	struct kvp_erec_extras ex;
	struct kvp_eextra *ex2; /* extras per sub-block when g < bs */
	size_t ex2_cap;
	struct kvp_erec_sparse sp; /* a sparse store's */
	struct kvp_edigest *dig;
	size_t dig_cap;
};

static int
work_init(struct work *wk, const struct kvp_dcand *c)
{
	struct kvp_diag d;

	memset(wk, 0, sizeof *wk);
	return kvp_eh_init(&wk->eh, c->s, c->seed, &d);
}

static void
work_fini(struct work *wk)
{
	kvp_eh_fini(&wk->eh);
	kvp_erec_extras_fini(&wk->ex);
	free(wk->ex2);
	free(wk->sp.blk);
	free(wk->dig);
}

/* The extras of store st at granularity g (NULL when none were
 * published); a sparse store's, listing its blocks only, are spread over
 * its chunks (kvp_erec_sparse_extras). */
static int
store_extras(struct work *wk, const struct kvp_dstore *st, uint32_t g,
             struct kvp_ereq *rq)
{
	struct kvp_diag d;
	size_t r = st->bs / g, i, n;

	if (st->extra == NULL)
		return 0;
	if (kvp_erec_extras_read(&wk->ex, st->extra, &d) != 0)
		return -1;
	rq->extra = wk->ex.blk;
	rq->n_extra = wk->ex.n_blk;
	if (st->off != NULL && wk->ex.n_blk == st->n_h) {
		if (kvp_erec_sparse_extras(&wk->sp, wk->ex.blk, st->n_h,
		                           st->off, st->n_chunks, r, rq->lora,
		                           rq->salt, rq->parent == NULL) != 0)
			return -1;
		rq->extra = wk->sp.blk;
		rq->n_extra = wk->sp.n_blk;
		return 0;
	}
	if (r == 1)
		return 0;
	n = wk->ex.n_blk * r;
	if (kvp_grow(&wk->ex2, &wk->ex2_cap, n, sizeof *wk->ex2) != 0)
		return -1;
	for (i = 0; i < n; i++)
		wk->ex2[i] = wk->ex.blk[i / r];
	rq->extra = wk->ex2;
	rq->n_extra = n;
	return 0;
}

/*
 * Hashes store st under c from parent state par (NULL: the root) and
 * compares the published values. Returns the number of leading blocks
 * that match (their states in wk->dig at (c+1)*r-1, c the block's chunk:
 * a sparse store is hashed over every chunk through its last one), or -1.
 */
static long
verify_lora(struct work *wk, const struct kvp_dcand *c,
            const struct kvp_dstore *st, const struct kvp_edigest *par,
            const char *lora)
{
	struct kvp_ereq rq = {0};
	struct kvp_diag d;
	size_t r = st->bs / c->g, nsub = st->n_chunks * r, j;
	long got;

	if (kvp_grow(&wk->dig, &wk->dig_cap, nsub + 1, sizeof *wk->dig))
		return -1;
	rq.tok = st->tok;
	rq.n_tok = st->n_chunks * st->bs + (st->eagle ? 1 : 0);
	rq.block_size = c->g;
	rq.eagle = st->eagle && c->s == KVP_SCHEME_SGLANG;
	rq.parent = par;
	rq.lora = lora;
	rq.salt = st->salt;
	rq.has_lora_id = st->has_lora_id;
	rq.lora_id = st->lora_id;
	if (c->s == KVP_SCHEME_SGLANG) {
		rq.spans = st->spans;
		rq.n_spans = st->n_spans;
		if (st->has_sha_parent)
			rq.parent = &st->sha_parent;
	}
	if (kvp_scheme_is_vllm(c->s) && store_extras(wk, st, c->g, &rq) != 0)
		return -1;
	if (!rq.eagle && st->eagle)
		rq.n_tok--;
	got = kvp_eh_chain(&wk->eh, &rq, wk->dig, nsub, &d);
	if (got < 0)
		return 0; /* tokens out of the scheme's range: no match */
	for (j = 0;
	     j < st->n_h && (kvp_dstore_chunk(st, j) + 1) * r <= (size_t)got;
	     j++) {
		const struct kvp_edigest *g =
		    &wk->dig[(kvp_dstore_chunk(st, j) + 1) * r - 1];

		if (g->u != st->h[j] ||
		    (st->sha != NULL &&
		     (g->len != 32 || memcmp(g->d, st->sha + 32 * j, 32) != 0)))
			break;
	}
	return (long)j;
}

/* verify_lora with the store's lora_name; under SGLang, whose events
 * carry the name whether or not the engine mixes it into the hashes
 * (docs/spec/engine-hashes.md §2.1), also without it: the better of the
 * two (the digests, which later stores chain from, are the same). */
static long
verify_store(struct work *wk, const struct kvp_dcand *c,
             const struct kvp_dstore *st, const struct kvp_edigest *par)
{
	long m = verify_lora(wk, c, st, par, st->lora), plain;

	if (c->s != KVP_SCHEME_SGLANG || st->lora == NULL ||
	    *st->lora == '\0' || m < 0 || (size_t)m == st->n_h)
		return m;
	plain = verify_lora(wk, c, st, par, NULL);
	if (plain > m)
		return plain;
	return m < 0 ? m : verify_lora(wk, c, st, par, st->lora);
}

/* 1 when st carries digests that cannot be recomputed (no mm_spans): it
 * is left unresolved under every candidate. */
static int
mm_blind(const struct kvp_dstore *st)
{
	return st->sha != NULL && st->n_spans == 0;
}

static int
store_ok(const struct kvp_dstore *st, uint32_t g)
{
	return st->n_h > 0 && g > 0 && st->bs % g == 0 && !mm_blind(st);
}

/* 1 when st's chain state is known without its parent store: a
 * self-verifying scheme, or SGLang's full parent digest. */
static int
parent_known(const struct kvp_dcand *c, const struct kvp_dstore *st)
{
	return kvp_scheme_self_verifying(c->s) ||
	       (c->s == KVP_SCHEME_SGLANG && st->has_sha_parent);
}

long
kvp_dcheck_probe(const struct kvp_dcand *c, const struct kvp_dstream *s,
                 size_t max_probes)
{
	int self = kvp_scheme_self_verifying(c->s);
	struct kvp_edigest par;
	struct work wk;
	size_t i, tried = 0;
	long hits = 0;

	if (work_init(&wk, c) != 0)
		return 0;
	for (i = 0; i < s->n && tried < max_probes; i++) {
		const struct kvp_dstore *st = &s->st[i];
		long m;

		if (!store_ok(st, c->g) ||
		    (st->has_parent && !parent_known(c, st)))
			continue;
		if (st->has_parent && self)
			kvp_eh_state_from_u64(&wk.eh, st->parent, &par);
		tried++;
		m = verify_store(&wk, c, st, st->has_parent ? &par : NULL);
		if (m > 0)
			hits += m;
	}
	work_fini(&wk);
	return hits;
}

/* The parent map and the queue of stores waiting for their parent. */
struct full {
	struct work wk;
	struct kvp_u64set map; /* published u64 → index in pool */
	struct kvp_edigest *pool;
	size_t n_pool, pool_cap;
	struct kvp_u64set wait; /* parent u64 → first waiting store + 1 */
	size_t *next;           /* per store: next waiting store + 1 */
	size_t *stack;
	size_t n_stack;
};

/* Makes the stores waiting for u ready. */
static void
wake(struct full *f, uint64_t u)
{
	uint64_t head;
	size_t i;

	if (!kvp_u64set_get(&f->wait, u, &head))
		return;
	kvp_u64set_del(&f->wait, u);
	for (i = (size_t)head; i != 0; i = f->next[i - 1])
		f->stack[f->n_stack++] = i - 1;
}

static int
learn(struct full *f, uint64_t u, const struct kvp_edigest *state)
{
	if (kvp_u64set_has(&f->map, u))
		return 0;
	if (f->n_pool == f->pool_cap &&
	    kvp_grow(&f->pool, &f->pool_cap, f->n_pool + 1, sizeof *f->pool) !=
	        0)
		return -1;
	f->pool[f->n_pool] = *state;
	if (kvp_u64set_put(&f->map, u, f->n_pool) < 0)
		return -1;
	f->n_pool++;
	wake(f, u);
	return 0;
}

/* A sparse store's skipped chunks, through the last verified block, are
 * proven by it, and so are the trailing ones of a store verified whole
 * (as far as its tokens go): their values, never published, may parent a
 * later store, as vLLM's parent_block_hash names the logical
 * predecessor. */
static int
learn_skipped(struct full *f, const struct kvp_dstore *st, size_t r, size_t m)
{
	size_t top = 0, j;

	if (st->off == NULL)
		return 0;
	for (j = 0; j < m; j++)
		if (st->off[j] + 1 > top)
			top = (size_t)st->off[j] + 1;
	if (m == st->n_h)
		top = st->n_chunks;
	for (j = 0; j < top; j++) {
		struct kvp_edigest state = f->wk.dig[(j + 1) * r - 1];

		if (learn(f, state.u, &state) != 0)
			return -1;
	}
	return 0;
}

static int
full_store(struct full *f, const struct kvp_dcand *c,
           const struct kvp_dstore *st, struct kvp_dcount *n)
{
	size_t r = st->bs / c->g, j;
	struct kvp_edigest par;
	const struct kvp_edigest *pp = NULL;
	uint64_t idx;
	long m;

	if (st->has_parent && kvp_scheme_self_verifying(c->s)) {
		kvp_eh_state_from_u64(&f->wk.eh, st->parent, &par);
		pp = &par;
	} else if (st->has_parent && parent_known(c, st)) {
		pp = &st->sha_parent; /* verify_lora takes it too */
	} else if (st->has_parent) {
		if (!kvp_u64set_get(&f->map, st->parent, &idx))
			return -1;
		par = f->pool[idx];
		pp = &par;
	}
	m = verify_store(&f->wk, c, st, pp);
	if (m < 0)
		return -1;
	n->vb += (uint64_t)m;
	if (st->sha != NULL && c->s == KVP_SCHEME_SGLANG)
		n->mm_vb += (uint64_t)m;
	if ((size_t)m < st->n_h)
		n->mb += st->n_h - (size_t)m;
	else
		n->vs++;
	if (kvp_scheme_self_verifying(c->s))
		return 0;
	for (j = 0; j < (size_t)m; j++) {
		struct kvp_edigest state =
		    f->wk.dig[(kvp_dstore_chunk(st, j) + 1) * r - 1];

		if (learn(f, st->h[j], &state) != 0)
			return -1;
	}
	return learn_skipped(f, st, r, (size_t)m);
}

static int
full_queue(struct full *f, const struct kvp_dcand *c,
           const struct kvp_dstream *s, struct kvp_dcount *n)
{
	size_t i;
	uint64_t head;

	for (i = 0; i < s->n; i++) {
		const struct kvp_dstore *st = &s->st[i];

		if (mm_blind(st)) {
			n->ub += st->n_h; /* media digests without mm_spans */
			continue;
		}
		if (!store_ok(st, c->g)) {
			n->mb += st->n_h;
			continue;
		}
		if (!st->has_parent || parent_known(c, st)) {
			f->stack[f->n_stack++] = i;
			continue;
		}
		head = 0;
		kvp_u64set_get(&f->wait, st->parent, &head);
		f->next[i] = (size_t)head;
		if (kvp_u64set_put(&f->wait, st->parent, i + 1) < 0)
			return -1;
	}
	return 0;
}

int
kvp_dcheck_full(const struct kvp_dcand *c, const struct kvp_dstream *s,
                struct kvp_dcount *n)
{
	struct full f;
	uint64_t k, v;
	size_t pos = 0;
	int rc = -1;

	memset(&f, 0, sizeof f);
	memset(n, 0, sizeof *n);
	kvp_u64set_init(&f.map, 1);
	kvp_u64set_init(&f.wait, 1);
	f.next = calloc(s->n + 1, sizeof *f.next);
	f.stack = calloc(s->n + 1, sizeof *f.stack);
	if (f.next == NULL || f.stack == NULL || work_init(&f.wk, c) != 0)
		goto out;
	if (full_queue(&f, c, s, n) != 0)
		goto out;
	while (f.n_stack > 0)
		if (full_store(&f, c, &s->st[f.stack[--f.n_stack]], n) != 0)
			goto out;
	/* whatever still waits has a parent that was never verified */
	while (kvp_u64set_next(&f.wait, &pos, &k, &v))
		for (size_t i = (size_t)v; i != 0; i = f.next[i - 1])
			n->ub += s->st[i - 1].n_h;
	rc = 0;
out:
	work_fini(&f.wk);
	kvp_u64set_fini(&f.map);
	kvp_u64set_fini(&f.wait);
	free(f.pool);
	free(f.next);
	free(f.stack);
	return rc;
}

/* ---- seed search (§7.5) -------------------------------------------------- */

#define SEARCH_CHUNK 4096u
#define SEARCH_END (UINT64_C(1) << 32)

static const enum kvp_scheme search_schemes[] = {
    KVP_SCHEME_VLLM_SHA256, KVP_SCHEME_VLLM_SHA256_CBOR, KVP_SCHEME_VLLM_XXHASH,
    KVP_SCHEME_VLLM_XXHASH_CBOR};
#define N_SEARCH 4

struct search {
	const struct kvp_dstore *st;
	struct timespec deadline;
	uint64_t next;    /* next chunk start (atomic) */
	int stop;         /* atomic */
	uint64_t found;   /* seed, valid when found_scheme >= 0 */
	int found_scheme; /* guarded by lock */
	uint64_t aborted; /* lowest chunk start left unfinished (atomic min) */
	pthread_mutex_t lock;
};

static int
past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec ||
	       (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* 1 when seed text txt reproduces the store's first block under w's
 * scheme. */
static int
seed_fits(struct work *w, const struct kvp_dstore *st, const char *txt,
          size_t len)
{
	struct kvp_edigest root, out;
	struct kvp_ereq rq = {0};
	struct kvp_diag d;

	if (kvp_eh_vllm_root(&w->eh, txt, len, &root) != 0)
		return 0;
	rq.tok = st->tok;
	rq.n_tok = st->bs;
	rq.block_size = st->bs;
	rq.parent = &root;
	rq.lora = st->lora;
	rq.salt = st->salt;
	if (store_extras(w, st, st->bs, &rq) != 0)
		return 0;
	/* rq.parent is the root: the salt goes in by extras only */
	if (rq.extra == NULL && rq.salt != NULL && *rq.salt != '\0')
		return 0;
	return kvp_eh_chain(&w->eh, &rq, &out, 1, &d) == 1 && out.u == st->h[0];
}

static void
search_chunk(struct search *s, struct work *w, uint64_t from)
{
	char txt[16];
	uint64_t v;
	int k, len;

	for (v = from; v < from + SEARCH_CHUNK && v < SEARCH_END; v++) {
		if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
			break;
		len = snprintf(txt, sizeof txt, "%llu", (unsigned long long)v);
		for (k = 0; k < N_SEARCH; k++) {
			if (!seed_fits(&w[k], s->st, txt, (size_t)len))
				continue;
			pthread_mutex_lock(&s->lock);
			if (s->found_scheme < 0 || v < s->found) {
				s->found = v;
				s->found_scheme = k;
			}
			pthread_mutex_unlock(&s->lock);
			__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
		}
	}
	if (v < from + SEARCH_CHUNK && v < SEARCH_END) {
		pthread_mutex_lock(&s->lock);
		if (from < s->aborted)
			s->aborted = from;
		pthread_mutex_unlock(&s->lock);
	}
}

static void *
search_thread(void *arg)
{
	struct search *s = arg;
	struct work w[N_SEARCH];
	struct kvp_dcand c = {0};
	uint64_t from;
	int k;

	for (k = 0; k < N_SEARCH; k++) {
		c.s = search_schemes[k];
		if (work_init(&w[k], &c) != 0)
			return NULL;
	}
	for (;;) {
		if (past(&s->deadline))
			__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
			break;
		from = __atomic_fetch_add(&s->next, SEARCH_CHUNK,
		                          __ATOMIC_RELAXED);
		if (from >= SEARCH_END)
			break;
		search_chunk(s, w, from);
	}
	for (k = 0; k < N_SEARCH; k++)
		work_fini(&w[k]);
	return NULL;
}

static const struct kvp_dstore *
search_store(const struct kvp_dstream *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!s->st[i].has_parent && s->st[i].n_h > 0 &&
		    !s->st[i].eagle && kvp_dstore_chunk(&s->st[i], 0) == 0)
			return &s->st[i];
	return NULL;
}

static void
search_start(struct search *s, double max_seconds)
{
	clock_gettime(CLOCK_MONOTONIC, &s->deadline);
	s->deadline.tv_sec += (time_t)max_seconds;
	s->deadline.tv_nsec +=
	    (long)((max_seconds - (double)(time_t)max_seconds) * 1e9);
	if (s->deadline.tv_nsec >= 1000000000L) {
		s->deadline.tv_sec++;
		s->deadline.tv_nsec -= 1000000000L;
	}
}

int
kvp_dcheck_seed_search(const struct kvp_dstream *s, double max_seconds,
                       unsigned threads, struct kvp_verdict *v,
                       enum kvp_scheme *found)
{
	struct search sr = {0};
	pthread_t tid[256];
	struct timespec t0, t1;
	unsigned i, n = 0;

	sr.st = search_store(s);
	if (sr.st == NULL)
		return 0;
	sr.found_scheme = -1;
	sr.aborted = UINT64_MAX;
	pthread_mutex_init(&sr.lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	search_start(&sr, max_seconds);
	for (i = 0; i < threads && i < 256; i++)
		if (pthread_create(&tid[n], NULL, search_thread, &sr) == 0)
			n++;
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&sr.lock);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	v->searched = 1;
	v->search_seconds = (double)(t1.tv_sec - t0.tv_sec) +
	                    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	v->search_count = sr.aborted < sr.next ? sr.aborted : sr.next;
	if (v->search_count > SEARCH_END)
		v->search_count = SEARCH_END;
	if (sr.found_scheme < 0)
		return n > 0 ? 0 : -1;
	v->search_found = 1;
	v->search_count = sr.found + 1;
	snprintf(v->search_seed, sizeof v->search_seed, "%llu",
	         (unsigned long long)sr.found);
	*found = search_schemes[sr.found_scheme];
	return 1;
}
