/* SPDX-License-Identifier: MIT */
/*
 * truth.h — the engine's own figure for a request's cached tokens, when
 * the request record carries it (a request log joined with the client's
 * responses), and the run's comparison of it with the engine model's
 * prediction (the summary's cache_truth).
 *
 * A request carries the figure as "cached_tokens", as the OpenAI response
 * shape "usage": {"prompt_tokens_details": {"cached_tokens": N}}, or as
 * SGLang's "meta_info": {"cached_tokens": N}. SGLang omits the detail
 * when nothing was cached, so under the sglang model a "usage" without
 * "prompt_tokens_details" (or a "meta_info" without "cached_tokens")
 * means 0; under vllm it means no figure (vLLM writes the detail only
 * with --enable-prompt-tokens-details).
 *
 * The figure lives in the parsed record (struct kvp_rin) only: the
 * router and the engine model (lib/lab/) never see it, so the
 * prediction cannot read it. Nothing here prints.
 */
#ifndef KVP_TRUTH_H
#define KVP_TRUTH_H

#include <stdint.h>

#include "common/diag.h"
#include "replay/route_input.h"
#include "route/router.h"

struct json_object;

enum kvp_engine_figure {
	KVP_EC_NONE = 0,   /* no figure */
	KVP_EC_GIVEN = 1,  /* in->engine_cached */
	KVP_EC_ABSENT = 2, /* the response shape without the detail */
};

/* Reads request object o's engine figure into out (engine_cached_kind,
 * engine_cached). 0, or -1 with d set (a value that is not a
 * non-negative integer, a "usage" or "meta_info" that is not an object). */
int kvp_truth_parse(const struct json_object *o, struct kvp_rin *out,
                    struct kvp_diag *d);

/* 1 with *v the engine's figure for in under engine model `model` (enum
 * kvp_engine_model, lab.h), 0 when it has none. */
int kvp_truth_engine(const struct kvp_rin *in, int model, uint64_t *v);

/* Predicted against reported, and the router's index against reported:
 * the index's figure is the chosen overlap × block size under the same
 * last-token rule, min(overlap, (ISL − 1) / bs) × bs, so what is left of
 * its error is beyond the engines' rules (missed events, gaps, tiers). */
struct kvp_truth_err {
	uint64_t exact, over, under; /* figure =, >, < engine */
	uint64_t abs_err;            /* Σ |figure − engine| tokens */
};

struct kvp_truth {
	int model;         /* enum kvp_engine_model; 0: off */
	uint32_t bs;       /* the router's block size */
	uint64_t requests; /* predicted and carrying the engine figure */
	struct kvp_truth_err pred, index;
};

/* Which error is larger over the run: "model", "index", or "neither"
 * (equal, both 0 included). */
const char *kvp_truth_dominant(const struct kvp_truth *t);

/* Counts decision dc of request in (nothing without a prediction or a
 * figure). */
void kvp_truth_add(struct kvp_truth *t, const struct kvp_rin *in,
                   const struct kvp_decision *dc);

#endif
