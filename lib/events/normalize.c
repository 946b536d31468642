/* SPDX-License-Identifier: MIT */
/* normalize.c — Dynamo's event conversion: filters, cache namespaces,
 * event ids, block hashes (see normalize.h; docs/spec/kv-events.md §3, §6.4).
 * The Stage-1 wide-token rules (§4) are in exclusion.c. */
#include "events/normalize.h"

#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/u64set.h"
#include "common/util.h"
#include "events/events_internal.h"

#define NS_AMBIGUOUS UINT64_MAX
#define U32MAX ((uint64_t)UINT32_MAX)

enum kind_class {
	KIND_MAIN = 1,
	KIND_NONMAIN = 2,
	KIND_UNKNOWN = 3,
};

struct stream {
	uint64_t worker;
	uint32_t rank;
	uint64_t next_id;
	struct kvp_u64set groups;  /* group_idx -> kind_class */
	struct kvp_u64set ns_map;  /* block hash -> ns index | AMBIGUOUS */
	struct kvp_u64set ns_find; /* xxh3(ns) -> ns index */
	char **ns_str;
	size_t n_ns, cap_ns;
	int ns_fallback;      /* namespace capacity reached: no more entries */
	struct kvp_excl excl; /* Stage-1 exclusion */
};

struct kvp_norm {
	struct kvp_norm_opts o;
	struct stream *streams;
	size_t n_streams, cap_streams;
	struct kvp_u64set stream_find; /* mixed (worker, rank) -> index */
	int stream_fallback;           /* stream capacity reached */
	struct kvp_u64set scratch;     /* duplicate check */
	/* output buffers */
	uint64_t *block_hash, *tokens_hash;
	size_t *blk_mm_start, *blk_mm_count;
	size_t cap_blocks;
	uint64_t *mm;
	size_t cap_mm;
	uint64_t *removed;
	size_t cap_removed;
	uint32_t *tbuf;
	size_t cap_tbuf;
};

void
kvp_norm_opts_init(struct kvp_norm_opts *o)
{
	memset(o, 0, sizeof *o);
	o->excl_mode = KVP_EXCL_ENGINE_OWNED;
	o->capacity = KVP_NORM_DEFAULT_CAPACITY;
	o->ns_capacity = KVP_NORM_DEFAULT_CAPACITY;
	o->stream_capacity = KVP_NORM_DEFAULT_STREAMS;
	o->id_mode = KVP_ID_COUNTER;
	o->sentinel = UINT32_MAX;
}

struct kvp_norm *
kvp_norm_new(const struct kvp_norm_opts *o)
{
	struct kvp_norm *n = calloc(1, sizeof *n);

	if (n == NULL)
		return NULL;
	n->o = *o;
	kvp_u64set_init(&n->stream_find, 1);
	kvp_u64set_init(&n->scratch, 0);
	return n;
}

static void
stream_clear_ns(struct stream *s)
{
	for (size_t i = 0; i < s->n_ns; i++)
		free(s->ns_str[i]);
	free(s->ns_str);
	s->ns_str = NULL;
	s->n_ns = s->cap_ns = 0;
	kvp_u64set_clear(&s->ns_map);
	kvp_u64set_clear(&s->ns_find);
}

static void
stream_fini(struct stream *s)
{
	stream_clear_ns(s);
	kvp_u64set_clear(&s->groups);
	kvp_excl_clear(&s->excl, 0, KVP_TIER_DEVICE);
}

void
kvp_norm_free(struct kvp_norm *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n_streams; i++)
		stream_fini(&n->streams[i]);
	free(n->streams);
	kvp_u64set_clear(&n->stream_find);
	kvp_u64set_clear(&n->scratch);
	free(n->block_hash);
	free(n->tokens_hash);
	free(n->blk_mm_start);
	free(n->blk_mm_count);
	free(n->mm);
	free(n->removed);
	free(n->tbuf);
	free(n);
}

size_t
kvp_norm_streams(const struct kvp_norm *n)
{
	return n->n_streams;
}

size_t
kvp_norm_tracked(const struct kvp_norm *n)
{
	size_t t = 0;

	for (size_t i = 0; i < n->n_streams; i++)
		t += n->streams[i].excl.n;
	return t;
}

size_t
kvp_norm_ns_entries(const struct kvp_norm *n)
{
	size_t t = 0;

	for (size_t i = 0; i < n->n_streams; i++)
		t += kvp_u64set_count(&n->streams[i].ns_map);
	return t;
}

/* ---- small helpers ------------------------------------------------------ */

static int
grow_blocks(struct kvp_norm *n, size_t need)
{
	size_t cap = n->cap_blocks;

	if (need <= cap)
		return 0;
	if (kvp_grow(&n->block_hash, &cap, need, sizeof(uint64_t)))
		return -1;
	cap = n->cap_blocks;
	if (kvp_grow(&n->tokens_hash, &cap, need, sizeof(uint64_t)))
		return -1;
	cap = n->cap_blocks;
	if (kvp_grow(&n->blk_mm_start, &cap, need, sizeof(size_t)))
		return -1;
	cap = n->cap_blocks;
	if (kvp_grow(&n->blk_mm_count, &cap, need, sizeof(size_t)))
		return -1;
	n->cap_blocks = cap;
	return 0;
}

int
kvp_norm_tier(const char *m, enum kvp_tier *tier)
{
	static const struct {
		const char *name;
		enum kvp_tier tier;
	} tab[] = {
	    {"GPU", KVP_TIER_DEVICE},
	    {"DEVICE", KVP_TIER_DEVICE},
	    {"CPU", KVP_TIER_HOST_PINNED},
	    {"CPU_PINNED", KVP_TIER_HOST_PINNED},
	    {"CPU_TIER1", KVP_TIER_HOST_PINNED},
	    {"CPU_TIER2", KVP_TIER_DISK},
	    {"DISK", KVP_TIER_DISK},
	    {"NVME", KVP_TIER_DISK},
	    {"STORAGE", KVP_TIER_DISK},
	    {"EXTERNAL", KVP_TIER_EXTERNAL},
	    {"NETWORK", KVP_TIER_EXTERNAL},
	    {"REMOTE", KVP_TIER_EXTERNAL},
	    {"SHARED", KVP_TIER_EXTERNAL},
	};

	if (m == NULL || *m == '\0') {
		*tier = KVP_TIER_DEVICE;
		return 0;
	}
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		if (strcmp(m, tab[i].name) == 0) {
			*tier = tab[i].tier;
			return 0;
		}
	}
	return -1;
}

const char *
kvp_norm_tier_name(enum kvp_tier t)
{
	switch (t) {
	case KVP_TIER_HOST_PINNED:
		return "host_pinned";
	case KVP_TIER_DISK:
		return "disk";
	case KVP_TIER_EXTERNAL:
		return "external";
	default:
		return "device";
	}
}

const char *
kvp_norm_action_name(enum kvp_action a)
{
	switch (a) {
	case KVP_ACT_TRUNCATED:
		return "truncated";
	case KVP_ACT_EXCLUDED:
		return "excluded";
	case KVP_ACT_DUP_REJECTED:
		return "dup_rejected";
	case KVP_ACT_FALLBACK_DROPPED:
		return "fallback_dropped";
	default:
		return "pass";
	}
}

static enum kind_class
classify_kind(const char *k)
{
	static const char *const main_kinds[] = {
	    "full_attention", "mla_attention", "sink_full_attention"};
	static const char *const other_kinds[] = {"sliding_window",
	                                          "sliding_window_mla",
	                                          "mamba",
	                                          "chunked_local_attention",
	                                          "encoder_only_attention",
	                                          "cross_attention"};

	for (size_t i = 0; i < sizeof main_kinds / sizeof main_kinds[0]; i++)
		if (strcmp(k, main_kinds[i]) == 0)
			return KIND_MAIN;
	for (size_t i = 0; i < sizeof other_kinds / sizeof other_kinds[0]; i++)
		if (strcmp(k, other_kinds[i]) == 0)
			return KIND_NONMAIN;
	return KIND_UNKNOWN;
}

/* ---- streams ----------------------------------------------------------- */

static uint64_t
stream_key(uint64_t worker, uint32_t rank)
{
	return kvp_hash_chain(worker, rank, 0);
}

static struct stream *
stream_find(struct kvp_norm *n, uint64_t worker, uint32_t rank)
{
	uint64_t idx;
	struct stream *s;

	if (!kvp_u64set_get(&n->stream_find, stream_key(worker, rank), &idx))
		return NULL;
	s = &n->streams[idx];
	if (s->worker == worker && s->rank == rank)
		return s;
	/* A 64-bit key collision: fall back to a scan. */
	for (size_t i = 0; i < n->n_streams; i++)
		if (n->streams[i].worker == worker &&
		    n->streams[i].rank == rank)
			return &n->streams[i];
	return NULL;
}

/* The (worker, rank) stream, added if new; NULL on OOM, or with *full set
 * when a new one would pass the stream capacity. */
static struct stream *
stream_get(struct kvp_norm *n, uint64_t worker, uint32_t rank, int *full)
{
	uint64_t key = stream_key(worker, rank);
	struct stream *s = stream_find(n, worker, rank);

	*full = 0;
	if (s != NULL)
		return s;
	if (n->n_streams >= n->o.stream_capacity) {
		*full = 1;
		return NULL;
	}
	if (kvp_grow(&n->streams, &n->cap_streams, n->n_streams + 1,
	             sizeof *n->streams))
		return NULL;
	s = &n->streams[n->n_streams];
	memset(s, 0, sizeof *s);
	s->worker = worker;
	s->rank = rank;
	s->next_id = n->o.first_event_id;
	kvp_u64set_init(&s->groups, 1);
	kvp_u64set_init(&s->ns_map, 1);
	kvp_u64set_init(&s->ns_find, 1);
	kvp_excl_init(&s->excl);
	if (!kvp_u64set_get(&n->stream_find, key, NULL) &&
	    kvp_u64set_put(&n->stream_find, key, n->n_streams) < 0)
		return NULL;
	n->n_streams++;
	return s;
}

/* Index of ns in the stream's table, adding it; UINT64_MAX on OOM. */
static uint64_t
ns_intern(struct stream *s, const char *ns)
{
	uint64_t h = kvp_hash_bytes(ns, strlen(ns), 0), idx;
	char *copy;

	if (kvp_u64set_get(&s->ns_find, h, &idx)) {
		if (strcmp(s->ns_str[idx], ns) == 0)
			return idx;
		for (size_t i = 0; i < s->n_ns; i++)
			if (strcmp(s->ns_str[i], ns) == 0)
				return i;
	}
	if (kvp_grow(&s->ns_str, &s->cap_ns, s->n_ns + 1, sizeof *s->ns_str))
		return UINT64_MAX;
	copy = strdup(ns);
	if (copy == NULL)
		return UINT64_MAX;
	if (!kvp_u64set_get(&s->ns_find, h, NULL) &&
	    kvp_u64set_put(&s->ns_find, h, s->n_ns) < 0) {
		free(copy);
		return UINT64_MAX;
	}
	s->ns_str[s->n_ns] = copy;
	return s->n_ns++;
}

/* ---- filters (§3.1) ----------------------------------------------------- */

static const char *
filter_reason(struct stream *s, const struct kvp_nev *ev, unsigned *warn)
{
	uint64_t cls;

	if (ev->kind != NULL) {
		switch (classify_kind(ev->kind)) {
		case KIND_MAIN:
			return NULL;
		case KIND_UNKNOWN:
			*warn |= KVP_NW_UNKNOWN_KIND;
			return "unknown_kind";
		default:
			return "non_main_attention_kind";
		}
	}
	if (!ev->has_group)
		return NULL;
	if (kvp_u64set_get(&s->groups, ev->group_idx, &cls)) {
		if (cls == KIND_MAIN)
			return NULL;
		if (cls == KIND_UNKNOWN)
			return "unknown_kind";
		return "non_main_attention_group";
	}
	return ev->group_idx == 0 ? NULL : "unlearned_group_idx";
}

/* Marks the store's hashes already mapped to a namespace other than ns
 * (NULL: none) ambiguous; with add, maps the new ones to id. Returns -2 on
 * OOM. Entries are only added while the capacity allows (see below). */
static int
map_store(struct stream *s, const struct kvp_nev *ev, const char *ns,
          uint64_t id, int add)
{
	uint64_t cur;

	for (size_t i = 0; i < ev->n_hashes; i++) {
		if (kvp_u64set_get(&s->ns_map, ev->hashes[i], &cur)) {
			if (cur != NS_AMBIGUOUS &&
			    (ns == NULL || strcmp(s->ns_str[cur], ns) != 0))
				kvp_u64set_put(&s->ns_map, ev->hashes[i],
				               NS_AMBIGUOUS);
		} else if (add &&
		           kvp_u64set_put(&s->ns_map, ev->hashes[i], id) < 0) {
			return -2;
		}
	}
	return 0;
}

/* 1 when adding the store's new hashes would take the stream's namespace
 * entries (map entries and interned namespaces) past the capacity. */
static int
ns_over(const struct stream *s, const struct kvp_nev *ev, size_t capacity)
{
	size_t have = kvp_u64set_count(&s->ns_map) + s->n_ns, fresh = 0;

	for (size_t i = 0; i < ev->n_hashes; i++)
		if (!kvp_u64set_has(&s->ns_map, ev->hashes[i]))
			fresh++;
	return have > capacity || fresh > capacity - have;
}

/* The namespace fallback (as the exclusion's): the map stops growing until
 * AllBlocksCleared; with drop it is forgotten now. Interned namespaces stay
 * (the store being handled may hash with one). */
static void
enter_ns_fallback(struct stream *s, const struct kvp_norm_opts *o,
                  unsigned *warn)
{
	s->ns_fallback = 1;
	*warn |= KVP_NW_NS_FALLBACK;
	if (o->ns_fallback_drop)
		kvp_u64set_clear(&s->ns_map);
}

/* A store's namespace (§3.1 step 4): as propagate_ns(); 2 when, in the
 * namespace fallback, an unsalted store's parent is not tracked. */
static int
store_ns(const struct kvp_norm_opts *o, struct stream *s,
         const struct kvp_nev *ev, const char **eff, unsigned *warn)
{
	uint64_t id = UINT64_MAX, cur;
	int salted = ev->ns != NULL && *ev->ns != '\0';

	if (salted && s->ns_fallback) {
		*eff = ev->ns;
		return map_store(s, ev, ev->ns, 0, 0);
	}
	if (salted) {
		id = ns_intern(s, ev->ns);
		if (id == UINT64_MAX)
			return -2;
	} else if (ev->has_parent &&
	           kvp_u64set_get(&s->ns_map, ev->parent, &cur)) {
		if (cur == NS_AMBIGUOUS)
			return 1;
		id = cur;
	} else if (ev->has_parent && s->ns_fallback) {
		return 2;
	}
	if (id == UINT64_MAX) {
		/* An unsalted store of a namespaced hash makes that hash
		 * ambiguous for future children. */
		if (kvp_u64set_count(&s->ns_map) != 0)
			return map_store(s, ev, NULL, 0, 0);
		return 0;
	}
	*eff = s->ns_str[id];
	if (!s->ns_fallback && ns_over(s, ev, o->ns_capacity))
		enter_ns_fallback(s, o, warn);
	return map_store(s, ev, *eff, id, !s->ns_fallback);
}

/* Namespace propagation (§3.1 step 4). Returns 0 with *eff the namespace to
 * hash a store with (NULL: none), 1 if the store must be filtered as
 * ambiguous, 2 as untracked (namespace fallback), -2 on OOM. */
static int
propagate_ns(const struct kvp_norm_opts *o, struct stream *s,
             const struct kvp_nev *ev, const char **eff, unsigned *warn)
{
	uint64_t cur;
	size_t i;

	*eff = NULL;
	switch (ev->type) {
	case KVP_EV_STORED:
		return store_ns(o, s, ev, eff, warn);
	case KVP_EV_REMOVED:
		if (kvp_u64set_count(&s->ns_map) == 0)
			break;
		for (i = 0; i < ev->n_hashes; i++)
			if (kvp_u64set_get(&s->ns_map, ev->hashes[i], &cur) &&
			    cur != NS_AMBIGUOUS)
				kvp_u64set_del(&s->ns_map, ev->hashes[i]);
		if (kvp_u64set_count(&s->ns_map) == 0 && !s->ns_fallback)
			stream_clear_ns(s);
		break;
	case KVP_EV_CLEARED:
		stream_clear_ns(s);
		s->ns_fallback = 0;
		break;
	default:
		break;
	}
	return 0;
}

/* ---- conversion (§3.2) --------------------------------------------------- */

static int
has_duplicate(struct kvp_norm *n, const struct kvp_nev *ev)
{
	if (ev->n_hashes + (ev->has_parent ? 1 : 0) < 2)
		return 0;
	if (ev->n_hashes <= 8) {
		for (size_t i = 0; i < ev->n_hashes; i++) {
			if (ev->has_parent && ev->hashes[i] == ev->parent)
				return 1;
			for (size_t j = 0; j < i; j++)
				if (ev->hashes[i] == ev->hashes[j])
					return 1;
		}
		return 0;
	}
	kvp_u64set_reset(&n->scratch);
	if (ev->has_parent && kvp_u64set_add(&n->scratch, ev->parent) < 0)
		return -2;
	for (size_t i = 0; i < ev->n_hashes; i++) {
		int r = kvp_u64set_add(&n->scratch, ev->hashes[i]);

		if (r < 0)
			return -2;
		if (r == 0)
			return 1;
	}
	return 0;
}

static int
is_placeholder(const struct kvp_norm_opts *o, uint32_t t)
{
	return (o->has_image_token && t == o->image_token) ||
	       (o->has_video_token && t == o->video_token);
}

/*
 * vLLM MM normalization: replace each run of a placeholder id with
 * pad_value(mm_hash), one object per run in order (clamped to the last).
 * Returns 1 if substituted (hash without mm), 0 to use the native path: a
 * block holding runs of both the image and the video id whose run count
 * differs from its object count has no unambiguous mapping.
 */
static int
substitute(const struct kvp_norm_opts *o, uint32_t *t, size_t nt,
           const uint64_t *mm, size_t n_mm)
{
	size_t runs = 0, r = 0;
	int seen_img = 0, seen_vid = 0, in_run = 0;
	uint32_t run_tok = 0, pad = 0;

	for (size_t i = 0; i < nt; i++) {
		if (!is_placeholder(o, t[i])) {
			in_run = 0;
			continue;
		}
		if (!in_run || t[i] != run_tok) {
			runs++;
			run_tok = t[i];
			in_run = 1;
		}
		if (o->has_image_token && t[i] == o->image_token)
			seen_img = 1;
		else
			seen_vid = 1;
	}
	if (seen_img && seen_vid && runs != n_mm)
		return 0;
	in_run = 0;
	for (size_t i = 0; i < nt; i++) {
		if (!is_placeholder(o, t[i])) {
			in_run = 0;
			continue;
		}
		if (!in_run || t[i] != run_tok) {
			run_tok = t[i];
			in_run = 1;
			pad = kvp_pad_value(mm[r < n_mm ? r : n_mm - 1]);
			r++;
		}
		t[i] = pad;
	}
	return 1;
}

static int
convert_store(struct kvp_norm *n, const struct kvp_nev *ev,
              const struct kvp_excl_cut *w, const char *ns,
              struct kvp_nout *out)
{
	const struct kvp_norm_opts *o = &n->o;
	size_t win = (size_t)ev->block_size + (ev->eagle ? 1 : 0);
	size_t n_mm_out = 0;
	uint64_t seed = kvp_hash_seed(KVP_HASH_SEED, ev->lora_name, ns);
	int subst_on = o->has_image_token || o->has_video_token;

	out->data = KVP_ND_STORED;
	out->has_parent = ev->has_parent;
	out->parent = ev->parent;
	out->n_blocks = 0;
	if (w->k == 0)
		return 0;
	if (ev->block_size != o->kv_block_size) {
		out->warn |= KVP_NW_BLOCK_SIZE;
		out->ev_block_size = ev->block_size;
		return 0;
	}
	if (grow_blocks(n, w->k) ||
	    kvp_grow(&n->tbuf, &n->cap_tbuf, win, sizeof *n->tbuf))
		return -2;
	out->block_hash = n->block_hash;
	out->tokens_hash = n->tokens_hash;
	out->blk_mm_start = n->blk_mm_start;
	out->blk_mm_count = n->blk_mm_count;
	for (size_t i = 0; i < w->k; i++) {
		size_t start = kvp_nev_block_start(ev, i), nm = 0;
		const uint64_t *mm = NULL;
		int plain = 0;

		if (!kvp_nev_window_fits(start, win, w->n_tokens)) {
			out->warn |= KVP_NW_TOO_SHORT;
			out->need_tokens =
			    start > SIZE_MAX - win ? SIZE_MAX : start + win;
			out->have_tokens = w->n_tokens;
			break;
		}
		for (size_t j = 0; j < win; j++) {
			uint64_t v = ev->tokens[start + j];

			n->tbuf[j] = v > U32MAX ? o->sentinel : (uint32_t)v;
		}
		if (i < ev->n_mm_blocks && ev->mm_count[i] > 0) {
			nm = ev->mm_count[i];
			mm = ev->mm + ev->mm_start[i];
		}
		if (nm > 0) {
			if (kvp_grow(&n->mm, &n->cap_mm, n_mm_out + nm,
			             sizeof *n->mm))
				return -2;
			memcpy(n->mm + n_mm_out, mm, nm * sizeof *mm);
			if (subst_on)
				plain = substitute(o, n->tbuf, win, mm, nm);
		}
		n->block_hash[i] = ev->hashes[i];
		n->tokens_hash[i] = kvp_hash_block(
		    n->tbuf, win, seed, plain ? NULL : mm, plain ? 0 : nm);
		n->blk_mm_start[i] = n_mm_out;
		n->blk_mm_count[i] = nm;
		n_mm_out += nm;
		out->n_blocks = i + 1;
	}
	out->mm = n->mm;
	return 0;
}

/* ---- the pipeline ----------------------------------------------------------
 */

static void
filtered(struct kvp_nout *out, const char *reason)
{
	out->kind = KVP_NOUT_FILTERED;
	out->reason = reason;
}

/* Rule 1 (§6.4): the record's rank, else the configured one; negative
 * i32 ranks are cast to u32 with a warning. */
static void
begin(const struct kvp_norm_opts *o, const struct kvp_nev *ev,
      struct kvp_nout *out)
{
	memset(out, 0, sizeof *out);
	out->seq = ev->seq;
	out->idx = ev->idx;
	out->has_ts = ev->has_ts;
	out->ts_ms = ev->ts_ms;
	out->sha256_hashes = ev->sha256_hashes;
	out->sha256_parent = ev->sha256_parent;
	out->worker_id = ev->worker_id;
	out->in_type = ev->type;
	out->action = KVP_ACT_PASS;
	if (ev->has_rank) {
		if (ev->rank < 0)
			out->warn |= KVP_NW_NEGATIVE_RANK;
		out->dp_rank = (uint32_t)ev->rank;
	} else {
		out->dp_rank = o->default_rank;
	}
}

/* §3.1 steps 2-4, then locality and medium: the event is dropped before
 * an event id is spent (1, out filled), goes on (0, with *ns the namespace
 * to hash a store with and *tier its tier), or -2 when out of memory. */
static int
filter(struct kvp_norm *n, struct stream *s, const struct kvp_nev *ev,
       const char **ns, enum kvp_tier *tier, struct kvp_nout *out)
{
	const char *reason;
	int r;

	if (ev->type == KVP_EV_STORED && ev->has_group && ev->kind != NULL &&
	    kvp_u64set_put(&s->groups, ev->group_idx, classify_kind(ev->kind)) <
	        0)
		return -2;
	reason = filter_reason(s, ev, &out->warn);
	if (reason != NULL) {
		filtered(out, reason);
		return 1;
	}
	r = propagate_ns(&n->o, s, ev, ns, &out->warn);
	if (r != 0) {
		if (r > 0)
			filtered(out, r == 1 ? "ambiguous_cache_namespace"
			                     : "untracked_cache_namespace");
		return r < 0 ? r : 1;
	}
	if (ev->locality != NULL && strcmp(ev->locality, "LOCAL") != 0) {
		filtered(out, "non_local_locality");
		return 1;
	}
	*tier = KVP_TIER_DEVICE;
	if (ev->type != KVP_EV_CLEARED &&
	    kvp_norm_tier(ev->has_medium ? ev->medium : NULL, tier) != 0) {
		if (!n->o.legacy_medium) {
			filtered(out, "unknown_medium");
			return 1;
		}
		*tier = KVP_TIER_DEVICE;
	}
	return 0;
}

/* Conversion (§3.2) of an event that kept its id. */
static int
convert(struct kvp_norm *n, const struct kvp_nev *ev,
        const struct kvp_excl_cut *w, const char *ns, int dup,
        struct kvp_nout *out)
{
	switch (ev->type) {
	case KVP_EV_STORED:
		if (dup) {
			out->warn |= KVP_NW_SELF_REF;
			out->action = KVP_ACT_DUP_REJECTED;
			out->data = KVP_ND_REMOVED;
			return 0;
		}
		if (w->to_empty_removal) {
			out->data = KVP_ND_REMOVED;
			return 0;
		}
		return convert_store(n, ev, w, ns, out);
	case KVP_EV_REMOVED:
		out->data = KVP_ND_REMOVED;
		out->removed = (uint64_t *)w->removed;
		out->n_removed = w->n_removed;
		return 0;
	default:
		out->data = KVP_ND_CLEARED;
		return 0;
	}
}

int
kvp_norm_process(struct kvp_norm *n, const struct kvp_nev *ev,
                 struct kvp_nout *out, struct kvp_diag *d)
{
	struct stream *s;
	struct kvp_excl_cut w;
	const char *ns = NULL;
	enum kvp_tier tier = KVP_TIER_DEVICE;
	int dup = 0, full, r;
	struct kvp_nev dense;

	if (ev->offsets != NULL && n->o.ignore_offsets) {
		dense = *ev; /* Dynamo: the key is ignored */
		dense.offsets = NULL;
		dense.n_offsets = 0;
		ev = &dense;
	}
	begin(&n->o, ev, out);
	/* Pre-PR Dynamo failed the whole batch while decoding: before any
	 * state is touched. */
	if (kvp_excl_reject_wide(&n->o, ev, d) != 0)
		return -1;
	if (ev->type == KVP_EV_IGNORED) {
		filtered(out, "ignored_event");
		return 0;
	}
	/* kvpipe's labels: Dynamo's decoder fails the batch on these tags */
	if (ev->type == KVP_EV_INACTIVE || ev->type == KVP_EV_THIRD_PARTY) {
		filtered(out, ev->type == KVP_EV_INACTIVE
		                  ? "inactive_event"
		                  : "third_party_event");
		return 0;
	}
	s = stream_get(n, ev->worker_id, out->dp_rank, &full);
	if (s == NULL && full) {
		/* the stream fallback: no state for a new stream */
		if (!n->stream_fallback)
			out->warn |= KVP_NW_STREAM_FALLBACK;
		n->stream_fallback = 1;
		filtered(out, "untracked_stream");
		return 0;
	}
	if (s == NULL)
		return -2;
	r = filter(n, s, ev, &ns, &tier, out);
	if (r != 0)
		return r < 0 ? r : 0;
	out->tier = tier;
	if (ev->type == KVP_EV_STORED) {
		dup = has_duplicate(n, ev);
		if (dup < 0)
			return dup;
	}
	r = kvp_excl_apply(&s->excl, &n->o, tier, ev, dup, &n->removed,
	                   &n->cap_removed, &w, out);
	if (r < 0)
		return r;
	out->kind = KVP_NOUT_EVENT;
	if (n->o.id_mode == KVP_ID_SEQ)
		out->event_id = ev->seq;
	else
		out->event_id = s->next_id++;
	return convert(n, ev, &w, ns, dup, out);
}
