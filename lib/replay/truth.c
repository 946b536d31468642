/* SPDX-License-Identifier: MIT */
/*
 * truth.c — the engine's cached-token figure of a request, and the
 * cache_truth totals. See truth.h.
 */
#include "replay/truth.h"

#include <json-c/json.h>

#include "common/diag.h"
#include "common/ndjson.h"
#include "lab/lab.h"
#include "replay/route_input.h"
#include "route/router.h"

/* obj.key: absent (0), an object (1, *sub), or bad (-1, d set). */
static int
sub_object(const struct json_object *obj, const char *key,
           struct json_object **sub, struct kvp_diag *d)
{
	if (!kvp_json_get(obj, key, sub) ||
	    json_object_is_type(*sub, json_type_null))
		return 0;
	if (!json_object_is_type(*sub, json_type_object))
		return kvp_diag_set(d, 0, "%s: expected an object", key);
	return 1;
}

/* The figure at obj."cached_tokens" when present: given, else absent. */
static int
figure(const struct json_object *obj, struct kvp_rin *out, struct kvp_diag *d)
{
	int has = 0;

	if (kvp_json_opt_u64(obj, "cached_tokens", 0, &out->engine_cached, &has,
	                     d) != 0)
		return -1;
	out->engine_cached_kind = has ? KVP_EC_GIVEN : KVP_EC_ABSENT;
	return 0;
}

int
kvp_truth_parse(const struct json_object *o, struct kvp_rin *out,
                struct kvp_diag *d)
{
	struct json_object *u, *p;
	int rc;

	out->engine_cached_kind = KVP_EC_NONE;
	out->engine_cached = 0;
	if (kvp_json_get(o, "cached_tokens", &u) &&
	    !json_object_is_type(u, json_type_null))
		return figure(o, out, d);
	if ((rc = sub_object(o, "usage", &u, d)) < 0)
		return -1;
	if (rc > 0) {
		if ((rc = sub_object(u, "prompt_tokens_details", &p, d)) < 0)
			return -1;
		if (rc > 0)
			return figure(p, out, d);
		out->engine_cached_kind = KVP_EC_ABSENT;
		return 0;
	}
	if ((rc = sub_object(o, "meta_info", &u, d)) < 0)
		return -1;
	return rc > 0 ? figure(u, out, d) : 0;
}

int
kvp_truth_engine(const struct kvp_rin *in, int model, uint64_t *v)
{
	*v = 0;
	if (in->kind != KVP_RIN_REQUEST)
		return 0;
	if (in->engine_cached_kind == KVP_EC_GIVEN) {
		*v = in->engine_cached;
		return 1;
	}
	/* SGLang omits the detail when nothing was cached */
	return in->engine_cached_kind == KVP_EC_ABSENT &&
	       model == KVP_ENGINE_SGLANG;
}

static void
count(struct kvp_truth_err *x, uint64_t fig, uint64_t e)
{
	if (fig == e)
		x->exact++;
	else if (fig > e)
		x->over++;
	else
		x->under++;
	x->abs_err += fig > e ? fig - e : e - fig;
}

void
kvp_truth_add(struct kvp_truth *t, const struct kvp_rin *in,
              const struct kvp_decision *dc)
{
	uint64_t e, ov, lim;

	if (t == NULL || t->model == KVP_ENGINE_NONE || !dc->has_predicted ||
	    dc->chosen < 0 || !kvp_truth_engine(in, t->model, &e))
		return;
	t->requests++;
	count(&t->pred, dc->predicted_cached_tokens, e);
	ov = dc->cand[dc->chosen].overlap;
	lim = dc->isl > 0 && t->bs > 0 ? (dc->isl - 1) / t->bs : 0;
	count(&t->index, (ov < lim ? ov : lim) * t->bs, e);
}

const char *
kvp_truth_dominant(const struct kvp_truth *t)
{
	if (t->pred.abs_err > t->index.abs_err)
		return "model";
	if (t->index.abs_err > t->pred.abs_err)
		return "index";
	return "neither";
}
