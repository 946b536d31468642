/* SPDX-License-Identifier: MIT */
/*
 * exclusion.c — the Stage-1 wide-token rules (docs/spec/kv-events.md §4): a
 * store's first block holding a token id above u32, and every descendant
 * of an excluded block, are excluded and tracked per (worker, dp_rank) and
 * tier, at most the configured capacity before the documented fallback;
 * removals of excluded blocks are filtered out. The u32-only mode
 * truncates at the first wide block and tracks nothing; the off mode
 * rejects wide ids (unless narrowed at conversion). Used by normalize.c
 * through events_internal.h.
 */
#include <inttypes.h>
#include <string.h>

#include "common/util.h"
#include "events/events_internal.h"

#define U32MAX ((uint64_t)UINT32_MAX)

void
kvp_excl_init(struct kvp_excl *x)
{
	memset(x, 0, sizeof *x);
	for (int t = 0; t < KVP_TIER_COUNT; t++)
		kvp_u64set_init(&x->set[t], 0);
}

void
kvp_excl_clear(struct kvp_excl *x, int only_tier, enum kvp_tier tier)
{
	for (int t = 0; t < KVP_TIER_COUNT; t++) {
		if (only_tier && t != (int)tier)
			continue;
		x->n -= kvp_u64set_count(&x->set[t]);
		kvp_u64set_clear(&x->set[t]);
	}
}

int
kvp_excl_reject_wide(const struct kvp_norm_opts *o, const struct kvp_nev *ev,
                     struct kvp_diag *d)
{
	if (ev->type != KVP_EV_STORED || o->excl_mode != KVP_EXCL_OFF ||
	    o->narrow)
		return 0;
	for (size_t i = 0; i < ev->n_tokens; i++)
		if (ev->tokens[i] > U32MAX)
			return kvp_diag_set(
			    d, 0,
			    "token_ids[%zu]: wide token id %" PRIu64
			    " does not fit in u32",
			    i, ev->tokens[i]);
	return 0;
}

/* first_wide_block() of a sparse store: its windows are scanned one by
 * one (the tokens of skipped chunks belong to no block). */
static size_t
first_wide_sparse(const struct kvp_nev *ev)
{
	size_t win = (size_t)ev->block_size + (ev->eagle ? 1 : 0);

	for (size_t i = 0; i < ev->n_hashes; i++) {
		size_t st = kvp_nev_block_start(ev, i);

		if (!kvp_nev_window_fits(st, win, ev->n_tokens))
			break; /* short: left for conversion to drop */
		for (size_t j = 0; j < win; j++)
			if (ev->tokens[st + j] > U32MAX)
				return i;
	}
	return ev->n_hashes;
}

/* Index of the first block whose conversion window (bs tokens, bs + 1
 * under EAGLE) holds a wide token, or nh if there is none among the full
 * windows (short windows are left for conversion to drop). */
static size_t
first_wide_block(const struct kvp_nev *ev)
{
	size_t bs = (size_t)ev->block_size, e = ev->eagle ? 1 : 0, p, i;

	if (bs == 0 || ev->n_hashes == 0)
		return ev->n_hashes;
	if (ev->offsets != NULL)
		return first_wide_sparse(ev);
	for (p = 0; p < ev->n_tokens; p++)
		if (ev->tokens[p] > U32MAX)
			break;
	if (p == ev->n_tokens)
		return ev->n_hashes;
	/* Windows only move forward, so the first window holding any wide
	 * token is the first one holding the first wide position p. */
	i = p / bs;
	if (e && p % bs == 0 && p > 0)
		i--;
	if (i >= ev->n_hashes || i * bs + bs + e > ev->n_tokens)
		return ev->n_hashes;
	return i;
}

static void
truncate_at(const struct kvp_nev *ev, struct kvp_excl_cut *w, size_t k,
            struct kvp_nout *out)
{
	size_t keep_tok = k == 0 ? 0
	                         : kvp_nev_block_start(ev, k - 1) +
	                               (size_t)ev->block_size +
	                               (ev->eagle ? 1 : 0);

	out->excluded = ev->n_hashes - k;
	out->kept = k;
	if (k == 0) {
		w->to_empty_removal = 1;
		out->action = KVP_ACT_EXCLUDED;
		return;
	}
	w->k = k;
	if (keep_tok < w->n_tokens)
		w->n_tokens = keep_tok;
	out->action = k < ev->n_hashes ? KVP_ACT_TRUNCATED : KVP_ACT_PASS;
}

static void
forget_kept(struct kvp_excl *x, enum kvp_tier t, const uint64_t *h, size_t k)
{
	if (kvp_u64set_count(&x->set[t]) == 0)
		return;
	for (size_t i = 0; i < k; i++)
		if (kvp_u64set_del(&x->set[t], h[i]))
			x->n--;
}

static void
fallback_store(const struct kvp_nev *ev, struct kvp_excl_cut *w,
               struct kvp_nout *out)
{
	if (ev->has_parent) {
		w->to_empty_removal = 1;
		out->action = KVP_ACT_FALLBACK_DROPPED;
		out->kept = 0;
		out->excluded = ev->n_hashes;
		return;
	}
	truncate_at(ev, w, first_wide_block(ev), out);
}

static void
enter_fallback(struct kvp_excl *x, const struct kvp_norm_opts *o,
               struct kvp_nout *out)
{
	x->fallback = 1;
	out->warn |= KVP_NW_FALLBACK;
	if (o->fallback_drop)
		kvp_excl_clear(x, 0, KVP_TIER_DEVICE);
}

/* Adds ev->hashes[from..) to the tier's set; 1 if the capacity would be
 * exceeded (nothing added), 0 on success, -2 on OOM. */
static int
exclude_from(struct kvp_excl *x, size_t capacity, enum kvp_tier t,
             const struct kvp_nev *ev, size_t from)
{
	size_t fresh = 0, i;

	for (i = from; i < ev->n_hashes; i++)
		if (!kvp_u64set_has(&x->set[t], ev->hashes[i]))
			fresh++;
	if (fresh > capacity || x->n > capacity - fresh)
		return 1;
	for (i = from; i < ev->n_hashes; i++) {
		int r = kvp_u64set_add(&x->set[t], ev->hashes[i]);

		if (r < 0)
			return -2;
		x->n += (size_t)r;
	}
	return 0;
}

static int
engine_owned_store(struct kvp_excl *x, const struct kvp_norm_opts *o,
                   enum kvp_tier t, const struct kvp_nev *ev,
                   struct kvp_excl_cut *w, struct kvp_nout *out)
{
	size_t from;
	int r;

	if (x->fallback) {
		fallback_store(ev, w, out);
		goto kept;
	}
	if (ev->has_parent && kvp_u64set_has(&x->set[t], ev->parent))
		from = 0; /* rule 2: descendants of an excluded block */
	else
		from = first_wide_block(ev); /* rule 3 */
	if (from == ev->n_hashes) {
		out->kept = ev->n_hashes;
		goto kept;
	}
	r = exclude_from(x, o->capacity, t, ev, from);
	if (r < 0)
		return r;
	if (r == 1) {
		enter_fallback(x, o, out);
		fallback_store(ev, w, out);
		goto kept;
	}
	truncate_at(ev, w, from, out);
kept:
	if (!w->to_empty_removal)
		forget_kept(x, t, ev->hashes, w->k);
	return 0;
}

static int
engine_owned_removal(struct kvp_excl *x, enum kvp_tier t,
                     const struct kvp_nev *ev, uint64_t **buf, size_t *cap,
                     struct kvp_excl_cut *w, struct kvp_nout *out)
{
	size_t k = 0;

	if (kvp_u64set_count(&x->set[t]) == 0)
		return 0;
	if (kvp_grow(buf, cap, ev->n_hashes, sizeof **buf) != 0)
		return -2;
	for (size_t i = 0; i < ev->n_hashes; i++) {
		if (kvp_u64set_del(&x->set[t], ev->hashes[i]))
			x->n--;
		else
			(*buf)[k++] = ev->hashes[i];
	}
	if (kvp_u64set_count(&x->set[t]) == 0)
		kvp_u64set_clear(&x->set[t]);
	w->removed = *buf;
	w->n_removed = k;
	out->kept = k;
	out->excluded = ev->n_hashes - k;
	if (k == ev->n_hashes)
		out->action = KVP_ACT_PASS;
	else
		out->action = k == 0 ? KVP_ACT_EXCLUDED : KVP_ACT_TRUNCATED;
	return 0;
}

int
kvp_excl_apply(struct kvp_excl *x, const struct kvp_norm_opts *o,
               enum kvp_tier t, const struct kvp_nev *ev, int dup,
               uint64_t **buf, size_t *cap, struct kvp_excl_cut *w,
               struct kvp_nout *out)
{
	memset(w, 0, sizeof *w);
	w->k = ev->n_hashes;
	w->n_tokens = ev->n_tokens;
	switch (ev->type) {
	case KVP_EV_STORED:
		out->kept = ev->n_hashes;
		if (dup)
			return 0; /* rule 1: untouched, conversion rejects it */
		if (o->excl_mode == KVP_EXCL_ENGINE_OWNED)
			return engine_owned_store(x, o, t, ev, w, out);
		if (o->excl_mode == KVP_EXCL_U32_ONLY)
			truncate_at(ev, w, first_wide_block(ev), out);
		return 0;
	case KVP_EV_REMOVED:
		w->removed = ev->hashes;
		w->n_removed = ev->n_hashes;
		out->kept = ev->n_hashes;
		if (o->excl_mode != KVP_EXCL_ENGINE_OWNED)
			return 0;
		return engine_owned_removal(x, t, ev, buf, cap, w, out);
	case KVP_EV_CLEARED:
		kvp_excl_clear(x, o->clear_event_tier, t);
		x->fallback = 0;
		return 0;
	default:
		return 0;
	}
}
