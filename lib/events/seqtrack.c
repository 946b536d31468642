/* SPDX-License-Identifier: MIT */
/* seqtrack.c — per-stream seq gap and stale detection (see seqtrack.h). */
#include "events/seqtrack.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void
kvp_seqtrack_init(struct kvp_seqtrack *t)
{
	memset(t, 0, sizeof *t);
}

void
kvp_seqtrack_fini(struct kvp_seqtrack *t)
{
	for (size_t i = 0; i < t->n_streams; i++)
		free(t->streams[i].topic);
	free(t->streams);
	memset(t, 0, sizeof *t);
}

static struct kvp_seq_stream *
find_stream(struct kvp_seqtrack *t, const char *topic, size_t topic_len,
            int has_rank, int32_t rank, uint64_t worker, int *created)
{
	struct kvp_seq_stream *s;

	*created = 0;
	for (size_t i = 0; i < t->n_streams; i++) {
		s = &t->streams[i];
		if (s->worker == worker && s->has_rank == has_rank &&
		    (!has_rank || s->rank == rank) &&
		    s->topic_len == topic_len &&
		    memcmp(s->topic, topic, topic_len) == 0)
			return s;
	}
	if (kvp_grow(&t->streams, &t->cap_streams, t->n_streams + 1,
	             sizeof *t->streams) != 0)
		return NULL;
	s = &t->streams[t->n_streams];
	s->topic = malloc(topic_len + 1);
	if (s->topic == NULL)
		return NULL;
	memcpy(s->topic, topic, topic_len);
	s->topic[topic_len] = '\0';
	s->topic_len = topic_len;
	s->has_rank = has_rank;
	s->rank = rank;
	s->worker = worker;
	s->watermark = 0;
	t->n_streams++;
	*created = 1;
	return s;
}

int
kvp_seqtrack_next(struct kvp_seqtrack *t, const char *topic, size_t topic_len,
                  int has_rank, int32_t rank, uint64_t worker, uint64_t seq,
                  int gap_at_start, struct kvp_seq_result *r)
{
	int created;
	struct kvp_seq_stream *s =
	    find_stream(t, topic, topic_len, has_rank, rank, worker, &created);

	if (s == NULL)
		return -1;
	r->stream = s;
	r->got = seq;
	r->verdict = KVP_SEQ_NEXT;
	if (created) {
		r->expected = 0;
		if (gap_at_start && seq > 0)
			r->verdict = KVP_SEQ_GAP;
		s->watermark = seq;
		return 0;
	}
	r->expected = s->watermark + 1;
	if (seq <= s->watermark) {
		r->verdict = KVP_SEQ_STALE;
		return 0;
	}
	if (seq != s->watermark + 1)
		r->verdict = KVP_SEQ_GAP;
	s->watermark = seq;
	return 0;
}
