/* SPDX-License-Identifier: MIT */
/*
 * merge.h — route-score's record loop: a replay's streams (replay/config.h:
 * its event and request streams, or its one input, or standard input)
 * opened through the input layer, merged by time (replay/route_src.h) and
 * read through kvp_cli_loop() (cli.h). Bad lines and records are reported
 * as every tool reports them ("tool: FILE:LINE[:COL]: msg", the hint for
 * another stage's input), under -k and the error cap.
 */
#ifndef KVP_FE_MERGE_H
#define KVP_FE_MERGE_H

#include <stdint.h>

#include "common/diag.h"
#include "common/jsonw.h"
#include "fe/cli.h"
#include "replay/config.h"
#include "replay/route_input.h"

/* Where the loop is, for the handler's messages, and what it rejected. */
struct kvp_cli_merged {
	const char *name; /* the current record's input, as messages name it */
	uintmax_t line;   /* its line */
	uint64_t bad;     /* bad lines and records reported */
};

/* Handles one record: 0, or -1 when it is bad (d says why). */
typedef int (*kvp_rin_fn)(void *ctx, struct kvp_rin *rec, struct kvp_diag *d);

/* Reads o's streams in time order and calls fn(ctx, rec, d) for each
 * record; stops at the first failed write on jw (reported when the output
 * closes). at is kept current. Returns the exit status. */
int kvp_cli_each_merged(const struct kvp_replay_opts *o,
                        const struct kvp_cli *c, const struct kvp_jw *jw,
                        kvp_rin_fn fn, void *ctx, struct kvp_cli_merged *at);

#endif
