/* SPDX-License-Identifier: MIT */
/* normalize_out.c — normalizer results as Dynamo RouterEvent records or
 * filtered records (see normalize_out.h). */
#include "events/normalize_out.h"

#include "common/jsonw.h"

const char *
kvp_ev_type_name(enum kvp_ev_type t)
{
	switch (t) {
	case KVP_EV_STORED:
		return "BlockStored";
	case KVP_EV_REMOVED:
		return "BlockRemoved";
	case KVP_EV_CLEARED:
		return "AllBlocksCleared";
	case KVP_EV_INACTIVE:
		return "BlockInactive";
	case KVP_EV_THIRD_PARTY:
		return "BlockTransferred";
	default:
		return "Ignored";
	}
}

static void
write_x(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_key(w, "x");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "seq", o->seq);
	kvp_jw_kv_i64(w, "idx", o->idx);
	kvp_jw_kv_str(w, "action", kvp_norm_action_name(o->action));
	kvp_jw_kv_u64(w, "kept", o->kept);
	kvp_jw_kv_u64(w, "excluded", o->excluded);
	if (o->has_ts)
		kvp_jw_kv_u64(w, "ts_ms", o->ts_ms);
	if (o->sha256_hashes != NULL) {
		kvp_jw_key(w, "block_hashes_sha256");
		kvp_jw_json(w, o->sha256_hashes);
	}
	if (o->sha256_parent != NULL)
		kvp_jw_kv_str(w, "parent_block_hash_sha256", o->sha256_parent);
	kvp_jw_obj_end(w);
}

static void
write_blocks(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_key(w, "blocks");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < o->n_blocks; i++) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "block_hash", o->block_hash[i]);
		kvp_jw_kv_hash(w, "tokens_hash", o->tokens_hash[i]);
		kvp_jw_key(w, "mm_extra_info");
		if (o->blk_mm_count[i] == 0) {
			kvp_jw_null(w);
		} else {
			kvp_jw_obj_begin(w);
			kvp_jw_key(w, "mm_objects");
			kvp_jw_arr_begin(w);
			for (size_t j = 0; j < o->blk_mm_count[i]; j++) {
				kvp_jw_obj_begin(w);
				kvp_jw_kv_hash(w, "mm_hash",
				               o->mm[o->blk_mm_start[i] + j]);
				kvp_jw_key(w, "offsets");
				kvp_jw_arr_begin(w);
				kvp_jw_arr_end(w);
				kvp_jw_obj_end(w);
			}
			kvp_jw_arr_end(w);
			kvp_jw_obj_end(w);
		}
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
}

static void
write_filtered(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "filtered");
	kvp_jw_kv_u64(w, "seq", o->seq);
	kvp_jw_kv_i64(w, "idx", o->idx);
	kvp_jw_kv_hash(w, "worker_id", o->worker_id);
	kvp_jw_kv_u64(w, "dp_rank", o->dp_rank);
	kvp_jw_kv_str(w, "event_type", kvp_ev_type_name(o->in_type));
	kvp_jw_kv_str(w, "reason", o->reason);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* The RouterEvent object (with "x" when x). */
static void
write_event(struct kvp_jw *w, const struct kvp_nout *o, int x)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_hash(w, "worker_id", o->worker_id);
	kvp_jw_kv_str(w, "storage_tier", kvp_norm_tier_name(o->tier));
	kvp_jw_kv_str(w, "residency_domain", "worker");
	kvp_jw_key(w, "event");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "event_id", o->event_id);
	kvp_jw_key(w, "data");
	switch (o->data) {
	case KVP_ND_STORED:
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "stored");
		kvp_jw_obj_begin(w);
		if (o->has_parent)
			kvp_jw_kv_hash(w, "parent_hash", o->parent);
		else
			kvp_jw_kv_null(w, "parent_hash");
		kvp_jw_kv_null(w, "start_position");
		write_blocks(w, o);
		kvp_jw_obj_end(w);
		kvp_jw_obj_end(w);
		break;
	case KVP_ND_REMOVED:
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "removed");
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "block_hashes");
		kvp_jw_hash_array(w, o->removed, o->n_removed);
		kvp_jw_obj_end(w);
		kvp_jw_obj_end(w);
		break;
	default:
		kvp_jw_str(w, "cleared");
		break;
	}
	kvp_jw_kv_u64(w, "dp_rank", o->dp_rank);
	kvp_jw_obj_end(w);
	if (x)
		write_x(w, o);
	kvp_jw_obj_end(w);
}

void
kvp_nout_write(struct kvp_jw *w, const struct kvp_nout *o)
{
	if (o->kind == KVP_NOUT_FILTERED) {
		write_filtered(w, o);
		return;
	}
	write_event(w, o, 1);
	kvp_jw_end_record(w);
}

void
kvp_nout_write_recorded(struct kvp_jw *w, const struct kvp_nout *o,
                        uint64_t ts_ms)
{
	if (o->kind == KVP_NOUT_FILTERED)
		return;
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "timestamp", ts_ms);
	kvp_jw_key(w, "event");
	write_event(w, o, 0);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}
