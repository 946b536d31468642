/* SPDX-License-Identifier: MIT */
/*
 * mooncake_out.c — Mooncake trace lines from hashed requests. See
 * mooncake_out.h.
 */
#include "hash/mooncake_out.h"

#include <stdlib.h>

#include "common/diag.h"
#include "common/jsonw.h"
#include "common/kmap.h"
#include "common/ndjson.h"
#include "common/util.h"
#include "hash/hash_record.h"

void
kvp_mooncake_init(struct kvp_mooncake *m)
{
	kvp_kmap_init(&m->ids);
	m->next = 0;
	m->buf = NULL;
	m->cap = 0;
}

void
kvp_mooncake_fini(struct kvp_mooncake *m)
{
	kvp_kmap_fini(&m->ids);
	free(m->buf);
}

/* The first of keys present in rec: 0, or -1 (d set); *has tells. */
static int
first_u64(const struct json_object *rec, const char *const *keys, uint64_t *v,
          int *has, struct kvp_diag *d)
{
	*has = 0;
	for (size_t i = 0; keys[i] != NULL && !*has; i++)
		if (kvp_json_opt_u64(rec, keys[i], 0, v, has, d) != 0)
			return -1;
	return 0;
}

/* Dense ids of r's sequence hashes, then one fresh id for a partial
 * block, into m->buf; returns their number, or -1. */
static long
dense_ids(struct kvp_mooncake *m, const struct kvp_hashrec *r)
{
	size_t n = r->n_blocks;
	int partial = r->block_size && r->n_tokens % r->block_size != 0;

	if (kvp_grow(&m->buf, &m->cap, n + 2, sizeof(*m->buf)) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int ins;
		uint32_t *v;

		if (m->next >= UINT32_MAX - 1)
			return -1;
		v = kvp_kmap_upsert(&m->ids, 0, r->seq[i],
		                    (uint32_t)m->next + 1, &ins);
		if (v == NULL)
			return -1;
		if (ins)
			m->next++;
		m->buf[i] = *v - 1;
	}
	if (partial)
		m->buf[n++] = m->next++;
	return (long)n;
}

int
kvp_mooncake_write(struct kvp_mooncake *m, struct kvp_jw *w,
                   const struct json_object *rec, const struct kvp_hashrec *r,
                   struct kvp_diag *d)
{
	static const char *const ts_keys[] = {"timestamp", "ts_ms", NULL};
	static const char *const out_keys[] = {"output_length", "osl",
	                                       "max_tokens", NULL};
	uint64_t ts = 0, osl = 0;
	int has;
	long n;

	if (first_u64(rec, ts_keys, &ts, &has, d) != 0)
		return -1;
	if (!has)
		return kvp_diag_set(d, 0,
		                    "missing key \"timestamp\" (or \"ts_ms\")");
	if (first_u64(rec, out_keys, &osl, &has, d) != 0)
		return -1;
	n = dense_ids(m, r);
	if (n < 0)
		return kvp_diag_set(d, 0, "out of memory");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "timestamp", ts);
	kvp_jw_kv_u64(w, "input_length", r->n_tokens);
	kvp_jw_kv_u64(w, "output_length", osl);
	kvp_jw_key(w, "hash_ids");
	kvp_jw_arr_begin(w);
	for (long i = 0; i < n; i++)
		kvp_jw_u64(w, m->buf[i]);
	kvp_jw_arr_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
	return 0;
}
