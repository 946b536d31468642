/* SPDX-License-Identifier: MIT */
/*
 * policy_yaml.c — Dynamo's router policy config (--router-policy-config):
 * the worker_selection document, read with libyaml (the one libyaml
 * user) into a small tree, checked as Dynamo checks it and applied to a
 * replay's options. See config.h (kvp_replay_policy_config).
 *
 *   worker_selection:
 *     aggregated|prefill|decode|encode: NAME   (default: the built-in)
 *     instances:
 *       - name: NAME
 *         type: dynamo-default-cost-fn | dynamo-two-tier-cost-fn
 *         parameters: {...}                    (a mapping; optional)
 *
 * Unknown keys are errors (Dynamo's deny_unknown_fields), so are an
 * instance named "default" (reserved), a duplicate name, a stage naming
 * no instance, an unknown type (the message names it) and a parameter
 * out of Dynamo's bounds.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/diag.h"
#include "common/num.h"
#include "lab/policy.h"
#include "replay/config.h"
#include "route/router.h"

enum { N_SCALAR, N_MAP, N_SEQ };

/* A node: a scalar (its text), a mapping (kid[2k] key, kid[2k+1] value)
 * or a sequence. */
struct ynode {
	int kind;
	long line; /* 1-based */
	char *text;
	struct ynode **kid;
	size_t n, cap;
};

static void
ynode_free(struct ynode *y)
{
	if (y == NULL)
		return;
	for (size_t i = 0; i < y->n; i++)
		ynode_free(y->kid[i]);
	free(y->kid);
	free(y->text);
	free(y);
}

static int
ynode_add(struct ynode *p, struct ynode *k)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		struct ynode **v = realloc(p->kid, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		p->kid = v;
		p->cap = cap;
	}
	p->kid[p->n++] = k;
	return 0;
}

static struct ynode *
ynode_new(int kind, const yaml_event_t *ev)
{
	struct ynode *y = calloc(1, sizeof(*y));

	if (y == NULL)
		return NULL;
	y->kind = kind;
	y->line = (long)ev->start_mark.line + 1;
	if (kind == N_SCALAR) {
		y->text = strndup((const char *)ev->data.scalar.value,
		                  ev->data.scalar.length);
		if (y->text == NULL) {
			free(y);
			return NULL;
		}
	}
	return y;
}

/* The parse: a stack of open collections. */
struct yparse {
	yaml_parser_t p;
	struct ynode *stack[32];
	int depth;
	struct ynode *root;
	long *line;
	struct kvp_diag *d;
};

static int
yfail(struct yparse *y, long line, const char *msg)
{
	*y->line = line;
	return kvp_diag_set(y->d, 0, "%s", msg);
}

/* Adds node k to the open collection (or makes it the root); pushes it
 * when it opens one. */
static int
ypush(struct yparse *y, struct ynode *k)
{
	if (k == NULL)
		return yfail(y, 0, "out of memory");
	if (y->depth == 0 && y->root == NULL)
		y->root = k;
	else if (y->depth == 0 || ynode_add(y->stack[y->depth - 1], k) != 0) {
		ynode_free(k);
		return yfail(y, 0, "out of memory");
	}
	if (k->kind == N_SCALAR)
		return 0;
	if (y->depth == 32)
		return yfail(y, k->line, "nested too deep");
	y->stack[y->depth++] = k;
	return 0;
}

/* One event; 1 at the stream's end. */
static int
yevent(struct yparse *y, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		if (y->root != NULL)
			return yfail(y, (long)ev->start_mark.line + 1,
			             "more than one YAML document");
		return 0;
	case YAML_ALIAS_EVENT:
		return yfail(y, (long)ev->start_mark.line + 1,
		             "YAML aliases are not supported here");
	case YAML_SCALAR_EVENT:
		return ypush(y, ynode_new(N_SCALAR, ev));
	case YAML_MAPPING_START_EVENT:
		return ypush(y, ynode_new(N_MAP, ev));
	case YAML_SEQUENCE_START_EVENT:
		return ypush(y, ynode_new(N_SEQ, ev));
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		y->depth--;
		return 0;
	default:
		return 0;
	}
}

/* The document of file f as a tree (*root), or -1 with d and *line set. */
static int
yparse_file(FILE *f, struct ynode **root, long *line, struct kvp_diag *d)
{
	struct yparse y = {.line = line, .d = d};
	int rc = 0;

	if (!yaml_parser_initialize(&y.p))
		return kvp_diag_set(d, 0, "out of memory");
	yaml_parser_set_input_file(&y.p, f);
	while (rc == 0) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&y.p, &ev)) {
			*line = (long)y.p.problem_mark.line + 1;
			rc = kvp_diag_set(d, 0, "YAML: %s",
			                  y.p.problem ? y.p.problem : "error");
			break;
		}
		rc = yevent(&y, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&y.p);
	if (rc < 0) {
		ynode_free(y.root);
		return -1;
	}
	*root = y.root;
	return 0;
}

/* ---- the schema --------------------------------------------------------- */

struct pctx {
	struct kvp_replay_opts *o;
	long *line;
	struct kvp_diag *d;
};

static int pfail(struct pctx *c, const struct ynode *at, const char *fmt, ...)
    KVP_PRINTF(3, 4);

static int
pfail(struct pctx *c, const struct ynode *at, const char *fmt, ...)
{
	va_list ap;

	*c->line = at != NULL ? at->line : 0;
	if (c->d == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(c->d->msg, sizeof(c->d->msg), fmt, ap);
	va_end(ap);
	c->d->col = 0;
	return -1;
}

/* The value of key in mapping m, or NULL. */
static const struct ynode *
yget(const struct ynode *m, const char *key)
{
	for (size_t i = 0; m != NULL && i + 1 < m->n; i += 2)
		if (strcmp(m->kid[i]->text, key) == 0)
			return m->kid[i + 1];
	return NULL;
}

/* Every key of mapping m is one of keys (NULL-terminated); its scalar
 * keys only. */
static int
yonly(struct pctx *c, const struct ynode *m, const char *where,
      const char *const *keys)
{
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const struct ynode *k = m->kid[i];
		size_t j = 0;

		if (k->kind != N_SCALAR)
			return pfail(c, k, "%s: a key is not a string", where);
		while (keys[j] != NULL && strcmp(keys[j], k->text) != 0)
			j++;
		if (keys[j] == NULL)
			return pfail(c, k, "%s: unknown key '%s'", where,
			             k->text);
	}
	return 0;
}

static int
ynum(struct pctx *c, const struct ynode *v, const char *name, double *out)
{
	char *end;

	if (v->kind != N_SCALAR || v->text[0] == '\0')
		return pfail(c, v, "%s: not a number", name);
	errno = 0;
	*out = strtod(v->text, &end);
	if (*end != '\0' || errno != 0 || !(*out == *out) ||
	    *out > 1.7976931348623157e308 || *out < -1.7976931348623157e308)
		return pfail(c, v, "%s: not a finite number: '%s'", name,
		             v->text);
	return 0;
}

/* A non-negative number (Dynamo's weights). */
static int
ynonneg(struct pctx *c, const struct ynode *v, const char *name, double *out)
{
	if (ynum(c, v, name, out) != 0)
		return -1;
	if (*out < 0)
		return pfail(c, v, "%s: must be >= 0, not '%s'", name, v->text);
	return 0;
}

static const char *const tt_keys[] = {
    "cache_threshold", "balance_abs_threshold", "balance_rel_threshold",
    "host_cache_weight", NULL};

/* dynamo-two-tier-cost-fn's parameters, checked as Dynamo checks them. */
static int
two_tier(struct pctx *c, const struct ynode *p)
{
	struct kvp_policy_opts *po = &c->o->pol;
	const struct ynode *v;
	double x;

	if (yget(p, "adaptive") != NULL)
		return pfail(c, yget(p, "adaptive"),
		             "parameters: adaptive mode is not modelled by "
		             "route-score (see route-score(1))");
	if (yonly(c, p, "dynamo-two-tier-cost-fn parameters", tt_keys) != 0)
		return -1;
	po->policy = KVP_POLICY_TWO_TIER;
	if ((v = yget(p, "cache_threshold")) != NULL) {
		if (ynum(c, v, "cache_threshold", &x) != 0)
			return -1;
		if (!(x >= 0 && x <= 1))
			return pfail(c, v,
			             "cache_threshold must be a finite number "
			             "between 0.0 and 1.0, not '%s'",
			             v->text);
		po->tt_cache_threshold = x;
	}
	if ((v = yget(p, "balance_abs_threshold")) != NULL) {
		const char *err;

		if (v->kind != N_SCALAR ||
		    kvp_num_parse_u64(v->text, UINT64_MAX, &po->tt_balance_abs,
		                      &err) != 0)
			return pfail(
			    c, v,
			    "balance_abs_threshold: not a whole number "
			    ">= 0: '%s'",
			    v->kind == N_SCALAR ? v->text : "");
	}
	if ((v = yget(p, "balance_rel_threshold")) != NULL) {
		if (ynum(c, v, "balance_rel_threshold", &x) != 0)
			return -1;
		if (!(x >= 1))
			return pfail(c, v,
			             "balance_rel_threshold must be a finite "
			             "number greater than or equal to 1.0, not "
			             "'%s'",
			             v->text);
		po->tt_balance_rel = x;
	}
	if ((v = yget(p, "host_cache_weight")) != NULL &&
	    ynonneg(c, v, "host_cache_weight", &po->tt_host_weight) != 0)
		return -1;
	return 0;
}

/* dynamo-default-cost-fn's parameters: the built-in cost's knobs. */
static int
default_cost(struct pctx *c, const struct ynode *p)
{
	struct kvp_route_opts *ro = &c->o->ro;
	static const struct {
		const char *name;
		size_t off;
	} k[] = {
	    {"overlap_score_credit", offsetof(struct kvp_route_opts, credit)},
	    {"overlap_score_credit_decay",
	     offsetof(struct kvp_route_opts, credit_decay)},
	    {"prefill_load_scale",
	     offsetof(struct kvp_route_opts, overlap_weight)},
	    {"decode_active_request_weight",
	     offsetof(struct kvp_route_opts, request_weight)},
	    {"host_cache_hit_weight",
	     offsetof(struct kvp_route_opts, host_weight)},
	    {"disk_cache_hit_weight",
	     offsetof(struct kvp_route_opts, disk_weight)},
	    {"shared_cache_multiplier",
	     offsetof(struct kvp_route_opts, shared_multiplier)},
	    {"router_temperature",
	     offsetof(struct kvp_route_opts, temperature)},
	};
	static const char *const names[] = {"overlap_score_credit",
	                                    "overlap_score_credit_decay",
	                                    "prefill_load_scale",
	                                    "decode_active_request_weight",
	                                    "host_cache_hit_weight",
	                                    "disk_cache_hit_weight",
	                                    "shared_cache_multiplier",
	                                    "router_temperature",
	                                    NULL};

	if (yonly(c, p, "dynamo-default-cost-fn parameters", names) != 0)
		return -1;
	c->o->pol.policy = KVP_POLICY_DYNAMO;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		const struct ynode *v = yget(p, k[i].name);

		if (v != NULL &&
		    ynonneg(c, v, k[i].name,
		            (double *)((char *)ro + k[i].off)) != 0)
			return -1;
	}
	return 0;
}

static const char *const inst_keys[] = {"name", "type", "parameters", NULL};

/* Instance i of the list: its name and type scalars, its parameters (a
 * mapping, or NULL when absent). */
static int
instance(struct pctx *c, const struct ynode *in, const struct ynode **name,
         const struct ynode **type, const struct ynode **params)
{
	if (in->kind != N_MAP)
		return pfail(c, in,
		             "worker_selection instances: an entry is "
		             "not a mapping");
	if (yonly(c, in, "worker_selection instance", inst_keys) != 0)
		return -1;
	*name = yget(in, "name");
	*type = yget(in, "type");
	*params = yget(in, "parameters");
	if (*name == NULL || (*name)->kind != N_SCALAR)
		return pfail(c, in, "worker_selection instance: no name");
	if (*type == NULL || (*type)->kind != N_SCALAR)
		return pfail(c, in, "worker_selection instance '%s': no type",
		             (*name)->text);
	if (strcmp((*name)->text, "default") == 0)
		return pfail(c, *name,
		             "worker_selection instance name 'default' is "
		             "reserved for Dynamo's built-in selector");
	if (*params != NULL && (*params)->kind != N_MAP &&
	    !((*params)->kind == N_SCALAR && (*params)->text[0] == '\0'))
		return pfail(c, *params,
		             "worker_selection instance '%s' parameters must "
		             "be a YAML mapping",
		             (*name)->text);
	if (*params != NULL && (*params)->kind != N_MAP)
		*params = NULL;
	return 0;
}

/* The instances: each checked (names unique, types known); the one named
 * sel (NULL: none) applied. */
static int
instances(struct pctx *c, const struct ynode *list, const char *sel,
          const struct ynode **found)
{
	static const struct ynode empty = {.kind = N_MAP};

	for (size_t i = 0; list != NULL && i < list->n; i++) {
		const struct ynode *name = NULL, *type = NULL, *params = NULL;
		int rc;

		if (instance(c, list->kid[i], &name, &type, &params) != 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(yget(list->kid[j], "name")->text,
			           name->text) == 0)
				return pfail(
				    c, name,
				    "worker_selection contains duplicate "
				    "instance '%s'",
				    name->text);
		if (strcmp(type->text, "dynamo-two-tier-cost-fn") != 0 &&
		    strcmp(type->text, "dynamo-default-cost-fn") != 0)
			return pfail(
			    c, type,
			    "worker_selection instance '%s' has unknown "
			    "policy type '%s' (route-score models "
			    "dynamo-default-cost-fn and "
			    "dynamo-two-tier-cost-fn)",
			    name->text, type->text);
		if (sel == NULL || strcmp(sel, name->text) != 0)
			continue;
		*found = name;
		if (params == NULL)
			params = &empty;
		rc = strcmp(type->text, "dynamo-two-tier-cost-fn") == 0
		         ? two_tier(c, params)
		         : default_cost(c, params);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static const char *const ws_keys[] = {"aggregated", "prefill",   "decode",
                                      "encode",     "instances", NULL};

/* The stage's selected instance name (NULL: the built-in). */
static int
stage_name(struct pctx *c, const struct ynode *ws, const char **sel)
{
	static const char *const stage[] = {"aggregated", "prefill", "decode"};
	const char *st = stage[c->o->ro.worker_type];
	const struct ynode *v;

	*sel = NULL;
	for (int i = 0; ws_keys[i + 1] != NULL; i++) {
		v = yget(ws, ws_keys[i]);
		if (v != NULL && v->kind != N_SCALAR)
			return pfail(c, v, "worker_selection %s: not a name",
			             ws_keys[i]);
	}
	v = yget(ws, st);
	if (v != NULL && strcmp(v->text, "default") != 0)
		*sel = v->text;
	return 0;
}

/* Every stage names "default" or a configured instance. */
static int
stages_named(struct pctx *c, const struct ynode *ws, const struct ynode *list)
{
	for (int i = 0; ws_keys[i + 1] != NULL; i++) {
		const struct ynode *v = yget(ws, ws_keys[i]);
		int ok = v == NULL || strcmp(v->text, "default") == 0;

		for (size_t j = 0; !ok && list != NULL && j < list->n; j++)
			ok = strcmp(yget(list->kid[j], "name")->text,
			            v->text) == 0;
		if (!ok)
			return pfail(c, v,
			             "worker_selection %s '%s' does not name a "
			             "configured instance",
			             ws_keys[i], v->text);
	}
	return 0;
}

static int
apply(struct pctx *c, const struct ynode *root)
{
	static const char *const top[] = {"worker_selection", NULL};
	const struct ynode *ws, *list, *found = NULL;
	const char *sel;

	if (root == NULL || root->kind != N_MAP)
		return pfail(c, root,
		             "not a YAML mapping with a "
		             "worker_selection key");
	if (yonly(c, root, "router policy config", top) != 0)
		return -1;
	ws = yget(root, "worker_selection");
	if (ws == NULL || ws->kind != N_MAP || ws->n == 0)
		return pfail(c, ws != NULL ? ws : root,
		             "worker_selection must define an instance or an "
		             "aggregated, prefill, decode, or encode "
		             "selection");
	if (yonly(c, ws, "worker_selection", ws_keys) != 0 ||
	    stage_name(c, ws, &sel) != 0)
		return -1;
	list = yget(ws, "instances");
	if (list != NULL && list->kind != N_SEQ)
		return pfail(c, list,
		             "worker_selection instances: not a "
		             "list");
	if (instances(c, list, sel, &found) != 0 ||
	    stages_named(c, ws, list) != 0)
		return -1;
	return 0;
}

int
kvp_replay_policy_config(struct kvp_replay_opts *o, const char *path,
                         long *line, struct kvp_diag *d)
{
	struct pctx c = {o, line, d};
	struct ynode *root = NULL;
	FILE *f = fopen(path, "rb");
	int rc;

	*line = 0;
	if (f == NULL)
		return kvp_diag_set(d, 0, "%s", strerror(errno));
	rc = yparse_file(f, &root, line, d);
	fclose(f);
	if (rc == 0)
		rc = apply(&c, root);
	ynode_free(root);
	return rc;
}
