/* SPDX-License-Identifier: MIT */
/* decode.c — a kv-decode session: one loop over the input's batches, the
 * batch policy, the records (see decode.h). */
#include "events/decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events/decode_in.h"
#include "events/decode_out.h"
#include "events/seqtrack.h"
#include "events/wire.h"

struct kvp_decode {
	struct kvp_decode_opts o;
	FILE *out;
	struct kvp_dout dout;
	struct kvp_seqtrack seq;
	struct kvp_wire *w;
	struct kvp_din in;
	int open;
	int finishing; /* end the input after the current batch */
	int dead;      /* the input cannot be resynchronised */
	int check_out; /* a whole unit went through: check the output */
	/* the current batch */
	struct kvp_din_batch u;
	struct kvp_dout_batch bc;
	struct kvp_wire_batch b;
	int has_rank;
	int32_t rank;
	size_t next, n_events;         /* events [next, n_events) are left */
	uintmax_t third[KVP_TP_COUNT]; /* events with each third-party field */
};

struct kvp_decode *
kvp_decode_new(const struct kvp_decode_opts *o, FILE *out, struct kvp_diag *d)
{
	struct kvp_decode *s = calloc(1, sizeof *s);

	if (s == NULL || (s->w = kvp_wire_new()) == NULL) {
		free(s);
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	s->o = *o;
	s->out = out;
	kvp_seqtrack_init(&s->seq);
	kvp_dout_init(&s->dout, out, o->hash_strings, o->unbuffered);
	return s;
}

void
kvp_decode_free(struct kvp_decode *s)
{
	if (s == NULL)
		return;
	kvp_decode_close(s);
	kvp_dout_fini(&s->dout);
	kvp_seqtrack_fini(&s->seq);
	kvp_wire_free(s->w);
	free(s);
}

int
kvp_decode_open(struct kvp_decode *s, FILE *f, uint64_t worker,
                struct kvp_diag *d)
{
	struct kvp_din_opts io = {s->o.format, s->o.max_bytes, s->o.max_flag,
	                          worker};

	kvp_decode_close(s);
	s->finishing = s->dead = s->check_out = 0;
	s->next = s->n_events = 0;
	if (kvp_din_open(&s->in, f, &io) != 0) {
		kvp_din_close(&s->in);
		return kvp_diag_set(d, 0, "out of memory");
	}
	s->in.hash_strings = s->o.hash_strings;
	s->open = 1;
	return 0;
}

void
kvp_decode_close(struct kvp_decode *s)
{
	if (s->open)
		kvp_din_close(&s->in);
	s->open = 0;
}

void
kvp_decode_finish(struct kvp_decode *s)
{
	s->finishing = 1;
	s->next = s->n_events; /* the batch's remaining events are dropped */
}

/* ---- bad units --------------------------------------------------------- */

/* A bad unit of the current batch: an error record, and where it was. The
 * message is in d. */
static int
bad(struct kvp_decode *s, const char *stage, int has_idx, size_t idx,
    struct kvp_decode_pos *pos, const struct kvp_diag *d)
{
	kvp_dout_error(&s->dout, &s->bc, stage, has_idx, idx, d->msg);
	pos->at_offset = s->u.at_offset;
	pos->line = s->u.line;
	pos->offset = s->u.offset;
	pos->has_seq = s->bc.has_seq;
	pos->seq = s->bc.seq;
	pos->has_idx = has_idx;
	pos->idx = idx;
	return KVP_BAD;
}

/* Dynamo's shape rule (strict): a message naming the envelope's shape. */
static void
not_dynamo(const struct kvp_decode *s, struct kvp_diag *d)
{
	char flag[80] = "";

	if (s->o.strict_flag != NULL)
		snprintf(flag, sizeof flag, " (%s)", s->o.strict_flag);
	if (s->b.enc == KVP_WIRE_MAP)
		kvp_diag_set(d, 0,
		             "map envelope; Dynamo%s decodes only [ts, events, "
		             "dp_rank]",
		             flag);
	else
		kvp_diag_set(
		    d, 0,
		    "envelope array has %zu elements; Dynamo%s decodes "
		    "exactly [ts, events, dp_rank]",
		    s->b.n_elements, flag);
}

/* Strict: the first bad event rejects the whole batch. Returns -1 with d
 * set and *idx the event, or 0. */
static int
reject_batch(struct kvp_decode *s, size_t *idx, struct kvp_diag *d)
{
	struct kvp_wire_event ev;
	char msg[sizeof d->msg], flag[80] = "";

	for (*idx = 0; *idx < s->b.n_events; (*idx)++) {
		if (kvp_wire_event(s->w, &s->b, *idx, &ev, d) != 0)
			break;
		/* tags Dynamo's decoder does not know fail its batch */
		if (ev.type == KVP_WIRE_INACTIVE ||
		    ev.type == KVP_WIRE_THIRD_PARTY) {
			kvp_diag_set(d, 0,
			             "unknown event tag \"%s\" for Dynamo",
			             ev.type == KVP_WIRE_INACTIVE
			                 ? "BlockInactive"
			                 : kvp_wire_third_name(
			                       KVP_TP_BLOCK_TRANSFERRED));
			break;
		}
	}
	if (*idx == s->b.n_events)
		return 0;
	if (s->o.strict_flag != NULL)
		snprintf(flag, sizeof flag, " (%s)", s->o.strict_flag);
	snprintf(msg, sizeof msg, "%s", d->msg);
	return kvp_diag_set(d, 0, "event %zu: %s; whole batch rejected%s", *idx,
	                    msg, flag);
}

/* ---- batches ----------------------------------------------------------- */

/* Seq tracking: 1 when the batch is stale and dropped, 0 to decode it, -1
 * when out of memory. */
static int
track(struct kvp_decode *s)
{
	struct kvp_seq_result r;

	if (kvp_seqtrack_next(&s->seq, s->bc.topic, s->bc.topic_len,
	                      s->has_rank, s->rank, s->bc.worker, s->bc.seq,
	                      s->o.gap_at_start, &r) != 0)
		return -1;
	kvp_dout_seq(&s->dout, &r);
	return r.verdict == KVP_SEQ_STALE && s->o.drop_stale;
}

/* The batch just loaded into s->w: its envelope and the batch policy. Its
 * events are left for the next steps. */
static int
start_batch(struct kvp_decode *s, struct kvp_decode_pos *pos,
            struct kvp_diag *d)
{
	size_t idx;
	int rc;

	s->b.bytes = s->u.size;
	rc = kvp_wire_envelope(s->w, &s->b, d);
	if (s->o.strict && kvp_wire_not_dynamo(&s->b)) {
		not_dynamo(s, d);
		rc = -1;
	}
	if (rc != 0)
		return bad(s, "envelope", 0, 0, pos, d);
	s->has_rank = s->b.has_rank || s->o.has_dp_rank;
	s->rank = s->b.has_rank ? s->b.rank : s->o.dp_rank;
	rc = s->u.track ? track(s) : 0;
	if (rc < 0) {
		kvp_diag_set(d, 0, "out of memory");
		return KVP_FAIL;
	}
	if (rc > 0)
		return KVP_OK;
	if (s->o.batches)
		kvp_dout_batch(&s->dout, &s->bc, &s->b, s->has_rank, s->rank);
	if (s->o.strict && reject_batch(s, &idx, d) != 0)
		return bad(s, "batch", 1, idx, pos, d);
	if (s->b.n_events > 0 &&
	    kvp_dout_batch_parts(&s->dout, &s->bc, &s->b, s->has_rank,
	                         s->rank) != 0) {
		kvp_diag_set(d, 0, "memory stream: %s", strerror(errno));
		return KVP_FAIL;
	}
	s->next = 0;
	s->n_events = s->b.n_events;
	return KVP_OK;
}

/* The next event of the current batch. */
static int
next_event(struct kvp_decode *s, struct kvp_decode_pos *pos, struct kvp_diag *d)
{
	struct kvp_wire_event ev;
	size_t i = s->next++;

	if (kvp_wire_event(s->w, &s->b, i, &ev, d) != 0)
		return bad(s, "event", 1, i, pos, d);
	kvp_dout_event(&s->dout, i, &ev);
	for (int k = 0; ev.third_party != 0 && k < KVP_TP_COUNT; k++)
		s->third[k] += ev.third_party >> k & 1;
	return KVP_OK;
}

uintmax_t
kvp_decode_third_party(const struct kvp_decode *s, int i)
{
	return i >= 0 && i < KVP_TP_COUNT ? s->third[i] : 0;
}

/* The next batch of the input. */
static int
next_batch(struct kvp_decode *s, struct kvp_decode_pos *pos, struct kvp_diag *d)
{
	int rc = kvp_din_next(&s->in, s->w, &s->u, d);

	s->bc.has_seq = s->u.has_seq;
	s->bc.seq = s->u.seq;
	s->bc.topic = s->u.topic;
	s->bc.topic_len = s->u.topic_len;
	s->bc.source = s->u.source;
	s->bc.worker = s->u.worker;
	s->bc.capture = s->u.extras;
	s->bc.capture_len = s->u.extras_len;
	s->check_out = s->u.whole;
	pos->read = s->u.read;
	switch (rc) {
	case KVP_DIN_MSG:
		return start_batch(s, pos, d);
	case KVP_DIN_RESTART:
		if (kvp_seqtrack_restart(&s->seq, s->u.topic, s->u.topic_len,
		                         s->u.worker) != 0) {
			kvp_diag_set(d, 0, "out of memory");
			return KVP_FAIL;
		}
		return KVP_OK;
	case KVP_DIN_EOF:
		return KVP_END;
	case KVP_DIN_IOERR:
		kvp_diag_clear(d); /* errno and ferror() say why */
		return KVP_FAIL;
	case KVP_DIN_NOMEM:
		kvp_diag_set(d, 0, "out of memory");
		return KVP_FAIL;
	default:
		s->dead = rc == KVP_DIN_FATAL;
		return bad(s, s->u.stage, 0, 0, pos, d);
	}
}

int
kvp_decode_step(struct kvp_decode *s, struct kvp_decode_pos *pos,
                struct kvp_diag *d)
{
	pos->read = 0;
	if (s->next < s->n_events)
		return next_event(s, pos, d);
	if (s->check_out && (ferror(s->out) || !kvp_jw_ok(&s->dout.jw))) {
		/* a write error is reported when the output closes */
		if (ferror(s->out))
			kvp_diag_clear(d);
		else
			kvp_diag_set(d, 0, "out of memory");
		return KVP_FAIL;
	}
	if (!s->open || s->dead || s->finishing)
		return KVP_END;
	return next_batch(s, pos, d);
}
