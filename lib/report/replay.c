/* SPDX-License-Identifier: MIT */
/*
 * replay.c — Dynamo's replay report JSON (dynamo.replay --report-json),
 * read as a whole file: its summary figures and its per_request rows.
 * The shapes are documented in kvpipe-records(5) and
 * docs/spec/dynamo-replay.md.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "report/decision.h"

const char *const kvp_replay_fields[KVP_REPLAY_N_FIELDS] = {
    "num_requests",
    "completed_requests",
    "prefix_cache_reused_ratio",
    "first_admission_prefix_cache_reused_ratio",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_e2e_latency_ms"};

/* The report's top-level keys that may come first: the nested form
 * (sorted or not) and the flat one (sorted: completed_requests; in
 * serde's order: num_requests). */
static const char *const first_keys[] = {
    "coverage",           "per_request",  "planner", "summary",
    "completed_requests", "num_requests", NULL};

int
kvp_replay_doc_starts(const char *line, size_t len)
{
	size_t i = 0, j;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len || line[i] != '{')
		return 0;
	for (j = i + 1; j < len; j++)
		if (line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
			break;
	if (j == len)
		return 1; /* "{" alone: json.dumps(indent=2) */
	if (line[j] != '"')
		return 0;
	for (int k = 0; first_keys[k] != NULL; k++) {
		size_t n = strlen(first_keys[k]);

		if (len - j - 1 > n &&
		    memcmp(line + j + 1, first_keys[k], n) == 0 &&
		    line[j + 1 + n] == '"')
			return 1;
	}
	return 0;
}

int
kvp_replay_doc_append(struct kvp_replay_doc *doc, const char *line, size_t len)
{
	if (kvp_grow(&doc->buf, &doc->cap, doc->len + len + 2, 1) != 0)
		return KVP_FAIL;
	memcpy(doc->buf + doc->len, line, len);
	doc->len += len;
	doc->buf[doc->len++] = '\n';
	doc->buf[doc->len] = '\0';
	doc->active = 1;
	return KVP_OK;
}

/* The figures of a summary object; others are ignored. */
static void
read_summary(struct kvp_replay_summary *sum, struct json_object *o)
{
	struct json_object *v;

	for (int k = 0; k < KVP_REPLAY_N_FIELDS; k++)
		if (json_object_object_get_ex(o, kvp_replay_fields[k], &v) &&
		    (json_object_is_type(v, json_type_int) ||
		     json_object_is_type(v, json_type_double))) {
			sum->has |= 1u << k;
			sum->v[k] = json_object_get_double(v);
		}
}

int
kvp_replay_doc_finish(struct kvp_replay_doc *doc, struct kvp_diag *dg)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o, *v;

	if (tok == NULL)
		return kvp_diag_set(dg, 0, "out of memory"), KVP_FAIL;
	o = kvp_json_parse_object(tok, doc->buf, doc->len, dg);
	json_tokener_free(tok);
	doc->ready = 1;
	if (o == NULL)
		return KVP_BAD;
	doc->root = o;
	if (json_object_object_get_ex(o, "summary", &v) &&
	    json_object_is_type(v, json_type_object))
		read_summary(&doc->sum, v);
	else
		read_summary(&doc->sum, o); /* the flat form */
	if (json_object_object_get_ex(o, "per_request", &v) &&
	    json_object_is_type(v, json_type_array)) {
		doc->rows = v;
		doc->n_rows = json_object_array_length(v);
	}
	if (doc->sum.has == 0 && doc->rows == NULL)
		return kvp_diag_set(dg, 0,
		                    "not a Dynamo replay report: no summary "
		                    "figure and no per_request rows"),
		       KVP_BAD;
	return KVP_OK;
}

int
kvp_replay_doc_next(struct kvp_replay_doc *doc, const char **line, size_t *len,
                    size_t *index)
{
	struct json_object *row;

	if (doc->rows == NULL || doc->next >= doc->n_rows)
		return 0;
	*index = doc->next;
	row = json_object_array_get_idx(doc->rows, doc->next++);
	*line = json_object_to_json_string_ext(
	    row, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*len = strlen(*line);
	return 1;
}

void
kvp_replay_doc_fini(struct kvp_replay_doc *doc)
{
	free(doc->buf);
	if (doc->root != NULL)
		json_object_put(doc->root);
	memset(doc, 0, sizeof *doc);
}
