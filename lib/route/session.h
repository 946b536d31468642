/* SPDX-License-Identifier: MIT */
/*
 * session.h — private to lib/route/: session affinity bindings
 * (session.c), which owns struct kvp_sessions. Times are the router's
 * clock (ms), passed in; ttl_ms 0 turns affinity off.
 */
#ifndef KVP_ROUTE_SESSION_H
#define KVP_ROUTE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/router.h"

struct kvp_sess {     /* a session affinity binding */
	uint64_t key; /* xxh3(session_id) */
	uint64_t worker_id;
	uint32_t dp_rank;
	uint32_t nactive; /* active requests keep it alive */
	uint64_t deadline;
	int live;
};

struct kvp_sessions {
	uint64_t ttl_ms;
	struct kvp_sess *v;
	size_t n, cap;
	struct kvp_kmap map;   /* (0, xxh3(session_id)) → sess + 1 */
	uint32_t last_release; /* sess + 1 of the last request ended */
};

void kvp_session_init(struct kvp_sessions *ss, uint64_t ttl_ms);
void kvp_session_fini(struct kvp_sessions *ss);
/* The live binding of q's session at now, or -1 (expired ones are
 * dropped); *w and *rank its worker. */
int64_t kvp_session_find(struct kvp_sessions *ss, const struct kvp_request *q,
                         uint64_t now, uint64_t *w, uint32_t *rank);
/* Binds q's session to (w, rank) (or refreshes the binding) and counts an
 * active request on it; returns slot + 1, 0 when q has no session, or -1
 * on allocation failure. */
int64_t kvp_session_bind(struct kvp_sessions *ss, const struct kvp_request *q,
                         uint64_t w, uint32_t rank, uint64_t now);
/* An active request of session slot ended at now; its idle timer
 * restarts. */
void kvp_session_release(struct kvp_sessions *ss, uint32_t slot, uint64_t now);
/* Drops a binding (its worker is gone). */
void kvp_session_drop(struct kvp_sessions *ss, int64_t slot);

#endif
