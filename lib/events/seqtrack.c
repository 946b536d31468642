/* SPDX-License-Identifier: MIT */
/* seqtrack.c — per-stream seq gap and stale detection (see seqtrack.h). */
#include "events/seqtrack.h"

#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/util.h"

void
kvp_seqtrack_init(struct kvp_seqtrack *t)
{
	memset(t, 0, sizeof *t);
	kvp_u64set_init(&t->find, 1);
	kvp_u64set_init(&t->restart, 0);
}

void
kvp_seqtrack_fini(struct kvp_seqtrack *t)
{
	for (size_t i = 0; i < t->n_streams; i++)
		free(t->streams[i].topic);
	free(t->streams);
	kvp_u64set_clear(&t->find);
	kvp_u64set_clear(&t->restart);
	memset(t, 0, sizeof *t);
}

static uint64_t
stream_key(const char *topic, size_t topic_len, int has_rank, int32_t rank,
           uint64_t worker)
{
	uint64_t h = kvp_hash_bytes(topic, topic_len, 0);

	h = kvp_hash_chain(h, worker, 1);
	return kvp_hash_chain(
	    h, has_rank ? (uint64_t)(uint32_t)rank : 1ULL << 32, 2);
}

/* The key of a restart: topic and worker, any rank. */
static uint64_t
restart_key(const char *topic, size_t topic_len, uint64_t worker)
{
	return kvp_hash_chain(kvp_hash_bytes(topic, topic_len, 0), worker, 3);
}

int
kvp_seqtrack_restart(struct kvp_seqtrack *t, const char *topic,
                     size_t topic_len, uint64_t worker)
{
	return kvp_u64set_add(&t->restart,
	                      restart_key(topic, topic_len, worker)) < 0
	           ? -1
	           : 0;
}

static int
same_stream(const struct kvp_seq_stream *s, const char *topic, size_t topic_len,
            int has_rank, int32_t rank, uint64_t worker)
{
	return s->worker == worker && s->has_rank == has_rank &&
	       (!has_rank || s->rank == rank) && s->topic_len == topic_len &&
	       memcmp(s->topic, topic, topic_len) == 0;
}

/* The stream, found through the hash table (a 64-bit key collision, never
 * seen in practice, falls back to a scan); NULL when it is new. */
static struct kvp_seq_stream *
lookup(struct kvp_seqtrack *t, uint64_t key, const char *topic,
       size_t topic_len, int has_rank, int32_t rank, uint64_t worker)
{
	uint64_t idx;

	if (!kvp_u64set_get(&t->find, key, &idx))
		return NULL;
	if (same_stream(&t->streams[idx], topic, topic_len, has_rank, rank,
	                worker))
		return &t->streams[idx];
	for (size_t i = 0; i < t->n_streams; i++)
		if (same_stream(&t->streams[i], topic, topic_len, has_rank,
		                rank, worker))
			return &t->streams[i];
	return NULL;
}

static struct kvp_seq_stream *
find_stream(struct kvp_seqtrack *t, const char *topic, size_t topic_len,
            int has_rank, int32_t rank, uint64_t worker, int *created)
{
	uint64_t key = stream_key(topic, topic_len, has_rank, rank, worker);
	struct kvp_seq_stream *s;

	*created = 0;
	s = lookup(t, key, topic, topic_len, has_rank, rank, worker);
	if (s != NULL)
		return s;
	if (kvp_grow(&t->streams, &t->cap_streams, t->n_streams + 1,
	             sizeof *t->streams) != 0)
		return NULL;
	s = &t->streams[t->n_streams];
	s->topic = malloc(topic_len + 1);
	if (s->topic == NULL)
		return NULL;
	if (!kvp_u64set_get(&t->find, key, NULL) &&
	    kvp_u64set_put(&t->find, key, t->n_streams) < 0) {
		free(s->topic);
		return NULL;
	}
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
	if (kvp_u64set_count(&t->restart) > 0 &&
	    kvp_u64set_del(&t->restart,
	                   restart_key(topic, topic_len, worker)) == 1 &&
	    !created) {
		r->verdict = KVP_SEQ_RESTART;
		r->expected = s->watermark + 1;
		s->watermark = seq;
		return 0;
	}
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
