/* SPDX-License-Identifier: MIT */
/*
 * route_internal.h — private to lib/route/ (never included elsewhere): the
 * router's state, shared by the modules that implement router.h, and the
 * functions they call in each other.
 *
 *   router.c       state, candidates, the decision (kvp_router_route)
 *   score.c        one candidate's score; the draw and the pick
 *   load.c         active requests: the router's own load prediction
 *   event_apply.c  events and event-id cursors
 *   approx.c       approximate (TTL) mode, and the predict-on-route side
 *                  index (the same TTL table over its own index)
 *   nodes.c        the block table: a dense node id per sequence hash
 *                  that state refers to
 *   session.c      session affinity bindings
 *   lab.c, policy*.c, lru.c, mrc.c, simtime.c   the policy lab (policy.h)
 *
 * Candidates are dense indices into r->cands, never reused (a removed
 * worker's candidates are marked dead and come back on the next event).
 */
#ifndef KVP_ROUTE_INTERNAL_H
#define KVP_ROUTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/index.h"
#include "route/router.h"

struct kvp_cand {
	uint64_t worker_id;
	uint32_t dp_rank;
	int live;
	uint64_t active_prefill, active_blocks;
	uint64_t ext_prefill, ext_decode; /* a `load` record's baseline */
	uint64_t routed, active_requests;
	/* index holder ids per tier (device, host, disk), refreshed before
	 * each decision (router.c): id + 1, 0 while the holder is absent */
	uint32_t hid[KVP_TIER_EXTERNAL];
};

struct kvp_cursor { /* last applied event_id of one (worker, rank) */
	uint64_t last;
	int has;
};

/* The block table (nodes.c). A node id stands for one sequence hash while
 * something refers to it (refs: active requests' blocks, approximate
 * entries, the nodes made after it in a request); then it is freed and its
 * id recycled. Per-node state lives in arrays indexed by id. */
#define KVP_NODE_NONE UINT32_MAX /* no node has the hash */

struct kvp_node { /* the state per node */
	uint32_t refs;
	uint32_t lmask; /* load.c: bit c set while candidate c < 32 holds it */
	uint32_t pid;   /* the previous block's node (a reference), or
	                   KVP_NODE_NONE at depth 0; a free node's: the next
	                   free id */
	uint32_t rc1;   /* load.c: its one holder's count (0: see loadrc) */
};

struct kvp_node_ttl { /* per node, with a TTL index */
	/* The router's TTL index (approx.c: approximate mode's, or the side
	 * index, which exclude each other): its flat index's holders, one
	 * (holder, tag) of the node's entries and how many more the table
	 * holds, and the node's children in the tree. */
	uint64_t imask;
	uint32_t ttag, thold, tover;
	uint32_t tchild;
	uint32_t tline; /* its tag line + 1 (approx.c), 0: none */
};

struct kvp_node_path {  /* per node, where a flat index may move */
	uint64_t local; /* its block's local hash (0: unknown) */
	uint32_t depth; /* its position in the request that made it */
};

struct kvp_nodes {
	struct kvp_kmap map; /* (0, seq) → id + 1 */
	struct kvp_node *hot;
	uint64_t *seq;
	struct kvp_node_ttl *ttl;   /* NULL: no TTL index */
	struct kvp_node_path *path; /* NULL: no flat index */
	int with_ttl, with_path;
	int pure; /* every live node is in the memo, map empty (nodes.c) */
	uint32_t freehead; /* the first free id (they chain through pid) */
	size_t n;          /* ids handed out */
	size_t cap, capseq, capttl, cappath; /* each array's */
	size_t capok;                        /* ids every array has room for */
	uint64_t frees; /* ids freed so far: ids looked up before go stale */
	/* The chain memo (with a flat index: path says each node's local
	 * hash): per local hash, direct-mapped by its low bits, a node found
	 * under its parent, so that a chained request's blocks resolve
	 * without hashing. An entry stands for a live node whose hash is the
	 * chain of its parent's and its local hash: freeing the node clears
	 * it. In pure mode it holds every live node (nodes.c). */
	struct kvp_memo {
		uint64_t local;
		uint32_t id1; /* node id + 1; 0: empty */
		uint32_t pid; /* its parent, KVP_NODE_NONE at depth 0 */
	} * memo;
	size_t capmemo; /* a power of two, at least the arrays' capacity
	                   (more when pure mode grew it), or 0 */
	/* Owed by kvp_nodes_resolve in pure mode: owe_seq[i] = seq[owe_ids[i]]
	 * for i < nowe (the found blocks but the last; the table writes them
	 * before it frees a node, kvp_nodes_settle when a reader asks). */
	uint64_t *owe_seq;
	const uint32_t *owe_ids;
	size_t nowe;
};

struct kvp_active_req { /* 56 bytes: 16,384 of them in 1 MiB */
	uint64_t idhash;
	uint64_t gen; /* distinguishes reuses of the slot */
	uint64_t prefill;
	size_t n;
	uint64_t out_blocks; /* --track-output-blocks */
	uint32_t ids;        /* its blocks' node ids in r->pool (NO_IDS with
	                        no_assume_reuse: they hold no nodes) */
	uint32_t cand;
	uint32_t sess; /* session slot + 1, 0: none */
	unsigned char live, prefill_done;
};

#define NO_IDS UINT32_MAX

/* Active requests' node ids (load.c): blocks of 2^k ids in one array of
 * fewer than 2^32, a free list per k (its link, offset + 1, in a free
 * block's first id; 0 ends it). */
struct kvp_idpool {
	uint32_t *a;
	size_t cap, top;
	size_t head[32]; /* per k: offset + 1 of a free block, 0: none */
};

struct kvp_req_exp { /* request expiry queue */
	uint64_t at;
	uint64_t gen;
	uint32_t slot;
};

/* A node's tags of holders 0..KVP_TAG_LINE-1 past its slot: one cache
 * line, made at its second such holder (approx.c). */
#define KVP_TAG_LINE 16

struct kvp_ttl_ent { /* approx-mode expiry queue: one touched block */
	uint64_t exp;
	uint32_t node; /* KVP_NODE_NONE: emptied (a later touch moved it) */
	uint32_t holder;
};

/* A TTL-fed index: approximate mode's (over the router's index) or the
 * predict-on-route side index (its own). Each (holder, node) maps to the
 * tag of its one live queue entry: its absolute queue position mod 2^32
 * (never 0; the queue is shorter than 2^32), kept in the node's own slot
 * (kvp_node_ttl ttag, thold) when that is free, else in the table ttl.
 * Each entry holds a node reference. */
struct kvp_approx {
	struct kvp_index *ix; /* borrowed (approx mode) or owned (side) */
	struct kvp_nodes *nd; /* the router's, borrowed */
	uint64_t ttl_ms, max;
	uint64_t *expired, *pruned; /* the router's counters */
	struct kvp_kmap ttl;        /* (holder, node) → tag, but for the
	                               one in the node's slot and those of
	                               holders below KVP_TAG_LINE */
	uint32_t *lines;            /* tag lines: KVP_TAG_LINE tags each */
	size_t caplines;            /* u32 */
	uint32_t nlines, linefree;  /* lines made; first free line + 1 */
	size_t nttl;                /* (holder, node) entries in all */
	struct kvp_ttl_ent *q;      /* FIFO: q[qhead..qtail) */
	size_t qhead, qtail, qcap;
	uint64_t qbase; /* absolute position of q[0] */
	/* Set once a store whose hashes are not the chain of its local
	 * hashes reaches ix (an event, or a request bringing its own): till
	 * then a holder's matched prefix maps the request's own hashes. */
	int mixed;
	/* The flat index (approx.c): while set, ix holds holders only and
	 * the pairs are imask bits (holder h: bit h) per node id. */
	int flat;
	uint64_t *imask;
	uint32_t *tchild;  /* children in the tree (below) */
	uint64_t *hblocks; /* per holder: its pairs (tree_size) */
	size_t caphb;
	/* The radix tree's nodes: those held, and those with a child in the
	 * tree (holderless ones only pruning leaves, till their last held
	 * descendant goes). */
	size_t fnodes;
	uint64_t fpairs;
};

struct kvp_sess {     /* a session affinity binding */
	uint64_t key; /* xxh3(session_id) */
	uint64_t worker_id;
	uint32_t dp_rank;
	uint32_t nactive; /* active requests keep it alive */
	uint64_t deadline;
	int live;
};

struct kvp_route_hooks; /* route_view.h */

struct kvp_router {
	struct kvp_route_opts o;
	struct kvp_index *ix;
	struct kvp_route_stats st;
	uint64_t now; /* latest request timestamp seen (ms) */

	/* candidates (router.c) */
	struct kvp_cand *cands;
	size_t ncands, capcands;
	struct kvp_kmap cmap; /* (rank, worker) → cand + 1 */
	uint32_t *order;      /* live candidates, sorted */
	size_t norder;
	int order_dirty;

	/* event-id cursors (event_apply.c) */
	struct kvp_cursor *curs;
	size_t ncurs, capcurs;
	struct kvp_kmap curmap; /* (rank, worker) → cursor + 1 */

	/* the block table (nodes.c), and this decision's blocks' node ids
	 * (KVP_NODE_NONE for hashes no node has; ids_ok while they are this
	 * decision's, ids_frees the table's frees when they were) */
	struct kvp_nodes nodes;
	uint32_t *ids;
	size_t capids;
	int ids_ok;
	uint64_t ids_frees;
	int ids_held; /* the request committed holds every one (load.c):
	                 none is left for kvp_nodes_sweep */
	/* kvp_load_new_blocks: the held prefix of candidates 0..31, found
	 * for all at once (held_ok) while held sets are prefixes of chains */
	uint32_t held32[32];
	int held_ok;
	int oom; /* an allocation failed where none could be reported */

	/* active requests (load.c) */
	/* held blocks (load.c): nodes.lmask for candidates 0..31, and
	 * (cand / 32, node) → mask of the 32 cands holding it for the rest;
	 * (cand, node) → how many of cand's active requests hold it, kept
	 * from the first release on (rc_on; till then nothing is released
	 * and the masks say all) */
	struct kvp_kmap loadmask, loadrc;
	int rc_on;
	/* set once a request brought its own hashes (or no_assume_reuse):
	 * held sets need no longer be prefixes of chains */
	int load_unchained;
	struct kvp_active_req *reqs;
	size_t nreqs, capreqs;
	struct kvp_idpool pool;
	uint32_t *reqfree;
	size_t nreqfree, capreqfree;
	/* (0, xxh3(id)) → req + 1; empty while deferred (load.c): while each
	 * request's id is a decimal number larger than the one before it, no
	 * id can repeat an active one's, and nothing has looked one up yet */
	struct kvp_kmap reqmap;
	int reqdefer;
	uint64_t idnext; /* while deferred: the least id that can come next */
	uint32_t added;  /* the slot of the request kvp_load_add made last
	                    (the decision's own, while it commits) */
	uint64_t gen;
	struct kvp_req_exp *eq;
	size_t eqhead, eqtail, eqcap;
	uint64_t held_blocks;   /* blocks of the live active requests */
	size_t nlive;           /* live active requests */
	struct kvp_req_exp *aq; /* routing order, for max_active_blocks */
	size_t aqhead, aqtail, aqcap;

	/* approximate mode and the predict-on-route side index (approx.c) */
	struct kvp_approx ap;
	struct kvp_approx *side; /* NULL: off */
	uint32_t *side_scores;   /* per side holder: kvp_index_match() */
	size_t capside;

	/* session affinity (session.c) */
	struct kvp_sess *sess;
	size_t nsess, capsess;
	struct kvp_kmap sessmap; /* (0, xxh3(session_id)) → sess + 1 */
	uint32_t last_release;   /* sess + 1 of the last request ended */

	/* per-decision scratch (router.c, score.c) */
	uint32_t *scores; /* per holder: kvp_index_match() */
	size_t capscores;
	struct kvp_cand_score *cs;
	size_t capcs;
	double *lg, *pr;
	size_t caplg, cappr;
	uint64_t *seqbuf;
	size_t capseq;
	size_t hid_n;   /* index holders when the cands' hid were refreshed */
	uint32_t *elig; /* eligible candidates, in order */
	size_t capelig;
	uint64_t pmin;  /* least active prefill among them (credit decay) */
	double dcredit; /* this decision's overlap credit C */
	uint64_t rng;   /* this decision's SplitMix64 state */
	uint64_t qhash; /* this decision's request: XXH3_64 of its id */

	/* the hooks a layer above installed (route_view.h), NULL: none;
	 * hk_seq: they read the request's sequence hashes */
	const struct kvp_route_hooks *hk;
	void *hctx;
	int hk_seq;
};

/* router.c: the candidate of (w, rank), or -1. */
int64_t kvp_router_cand_find(const struct kvp_router *r, uint64_t w,
                             uint32_t rank);

/* score.c: scores candidate ci for request q with overlap weight w, from
 * r->scores and r->ids (kvp_index_match() already run). */
void kvp_score_candidate(const struct kvp_router *r, uint32_t ci,
                         const struct kvp_request *q, double w,
                         struct kvp_cand_score *s);
/* score.c: the draw (when T > 0 or the tie-break is random), the
 * max-overlap candidate and the chosen one, over r->cs[0..dec->ncand). */
void kvp_score_pick(struct kvp_router *r, const struct kvp_request *q,
                    struct kvp_decision *dec);

/* nodes.c: the block table; with_ttl for a TTL index (approximate mode,
 * predict-on-route), with_path when it may be a flat one. */
void kvp_nodes_init(struct kvp_nodes *nd, int with_ttl, int with_path);
void kvp_nodes_fini(struct kvp_nodes *nd);
/* ids[i]: the id of seq[i], or KVP_NODE_NONE (one batch of lookups).
 * 0, or -1 on allocation failure (ending pure mode). */
int kvp_nodes_find_many(struct kvp_nodes *nd, const uint64_t *seq, size_t n,
                        uint32_t *ids);
/* A chained request's blocks (local hashes local[0..n)): seq[i] their
 * sequence hashes and ids[i] their ids (KVP_NODE_NONE: none), from the
 * chain memo where it knows them, else hashed and looked up (in pure mode
 * a block the memo lacks has no node). In pure mode the hashes of the
 * found blocks but the last are owed (seq and ids must stay put): most
 * decisions never read them, and kvp_nodes_settle writes them. */
void kvp_nodes_resolve(struct kvp_nodes *nd, const uint64_t *local, size_t n,
                       uint64_t *seq, uint32_t *ids);
/* Writes the sequence hashes kvp_nodes_resolve owes; its caller's
 * kvp_nodes_forgive drops them once the decision is over. */
void kvp_nodes_settle(struct kvp_nodes *nd);
void kvp_nodes_forgive(struct kvp_nodes *nd);
/* Makes the nodes of seq[0..n) whose ids[i] are KVP_NODE_NONE (looked up
 * by kvp_nodes_find_many or kvp_nodes_resolve) and fills in their ids: the
 * missing nodes (no refs yet; local hashes from local, may be NULL; chained:
 * seq is their chain, for the memo). 0, or -1 on allocation failure. */
int kvp_nodes_intern(struct kvp_nodes *nd, const uint64_t *seq,
                     const uint64_t *local, int chained, size_t n,
                     uint32_t *ids);
/* One reference fewer: at none, the node is freed. */
void kvp_nodes_unref(struct kvp_nodes *nd, uint32_t id);
/* Frees the nodes of ids[0..n) that nothing refers to. */
void kvp_nodes_sweep(struct kvp_nodes *nd, const uint32_t *ids, size_t n);

/* router.c: holder h's blocks in the router's index (tree_size). */
uint64_t kvp_route_tree_size(const struct kvp_router *r, uint32_t h);
/* router.c: r->ids for every block of q (seq its sequence hashes), nodes
 * made for the missing ones (unreferenced: kvp_nodes_sweep frees those
 * left so). 0, or -1 on allocation failure. */
int kvp_route_ids(struct kvp_router *r, const struct kvp_request *q,
                  const uint64_t *seq);

/* load.c: records request q (hid: XXH3_64 of its id) as active on
 * candidate c with prefill tokens and its sequence hashes, of which c's
 * score found the first held held already (0: unknown); *dup is set when
 * an active request with the same id was released first. 0, or -1 on
 * allocation failure. */
int kvp_load_add(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
                 uint64_t hid, uint64_t prefill, const uint64_t *seq,
                 size_t held, int *dup);
/* load.c: the slot of active request id, -1 when none is, or -2 on
 * allocation failure (the request map kept from now on). */
int64_t kvp_load_find(struct kvp_router *r, const char *id, size_t len);
/* load.c: the output blocks request q holds while active (0 unless
 * track_output_blocks and q brings an output length). */
uint64_t kvp_load_output_blocks(const struct kvp_router *r,
                                const struct kvp_request *q);
/* load.c: releases the active request in slot. */
void kvp_load_release(struct kvp_router *r, uint32_t slot);
/* load.c: releases requests routed request_expiry_ms or more before now. */
void kvp_load_expire(struct kvp_router *r);
/* load.c: r->held32 for the decision's request (r->ids, n blocks), while
 * held sets are prefixes of chains (else held_ok stays unset). */
void kvp_load_held_all(struct kvp_router *r, size_t n);
/* load.c: blocks of the decision's request (r->ids, n blocks) that
 * candidate c's active requests do not hold already. */
uint64_t kvp_load_new_blocks(const struct kvp_router *r, uint32_t c, size_t n);

/* approx.c: a's state over index ix (borrowed) and block table nd, its
 * index flat to start with when flat is set (legacy scoring needs the
 * tree); kvp_approx_fini frees the state, not the index. */
void kvp_approx_init(struct kvp_approx *a, struct kvp_index *ix,
                     struct kvp_nodes *nd, uint64_t ttl_ms, uint64_t max,
                     int flat, uint64_t *expired, uint64_t *pruned);
void kvp_approx_fini(struct kvp_approx *a);
/* approx.c: moves a flat index's pairs into the radix tree, for good
 * (before anything but a's own decisions reaches the index). 0, or -1 on
 * allocation failure. */
int kvp_approx_unflat(struct kvp_approx *a);
/* approx.c: kvp_index_match() over a's index for request q (r->ids its
 * blocks' nodes). */
size_t kvp_approx_match(const struct kvp_approx *a, const struct kvp_router *r,
                        const struct kvp_request *q, int legacy,
                        uint32_t *scores);
/* approx.c: holder h's blocks (Dynamo's tree_size). */
uint64_t kvp_approx_holder_blocks(const struct kvp_approx *a, uint32_t h);
/* approx.c: the index's nodes, (block, holder) pairs and bytes. */
void kvp_approx_totals(const struct kvp_approx *a, size_t *nodes,
                       uint64_t *pairs, size_t *bytes);
/* approx.c: drops a's entries expired at now (and prunes over the cap). */
void kvp_approx_expire(struct kvp_approx *a, uint64_t now);
/* approx.c: (w, rank) is assumed to cache request q's blocks (seq, node
 * ids ids) until now + ttl; held: the leading blocks its match in a->ix
 * found it holding (0 when unknown). 0, or -1 on allocation failure. */
int kvp_approx_record(struct kvp_approx *a, uint64_t w, uint32_t rank,
                      const struct kvp_request *q, const uint64_t *seq,
                      const uint32_t *ids, uint64_t now, uint32_t held);
/* approx.c: candidate c's overlap in the side index (r->side_scores). */
uint32_t kvp_side_overlap(const struct kvp_router *r, const struct kvp_cand *c);

/* score.c: candidate c's overlap on a tier (the device tier's is the max
 * with the side index's, when predict-on-route is on). */
uint32_t kvp_score_overlap(const struct kvp_router *r, const struct kvp_cand *c,
                           int tier);

/* session.c: the live binding of q's session, or -1 (expired ones are
 * dropped). */
int64_t kvp_session_find(struct kvp_router *r, const struct kvp_request *q);
/* session.c: binds q's session to (w, rank) (or refreshes the binding)
 * and counts an active request on it; returns slot + 1, 0 when q has no
 * session, or -1 on allocation failure. */
int64_t kvp_session_bind(struct kvp_router *r, const struct kvp_request *q,
                         uint64_t w, uint32_t rank);
/* session.c: an active request of session slot ended; its idle timer
 * restarts. */
void kvp_session_release(struct kvp_router *r, uint32_t slot);
/* session.c: drops a binding (its worker is gone). */
void kvp_session_drop(struct kvp_router *r, int64_t slot);
void kvp_session_fini(struct kvp_router *r);

#endif
