/* SPDX-License-Identifier: MIT */
/*
 * hint.c — when the first record of an input is rejected, say what the
 * input looks like and which tool reads it (wrong stage, wrong format).
 */
#include "fe/cli.h"
#include "fe/err.h"

#include <string.h>

#include "common/sniff.h"

/* The advice for kind k given to tool, or NULL when tool reads k (the
 * record really is bad) or there is nothing useful to say. */
/* lint: table-driven */
static const char *
advice(const char *tool, enum kvp_kind k)
{
	int decode = strcmp(tool, "kv-decode") == 0;
	int route = strcmp(tool, "route-score") == 0;

	switch (k) {
	case KVP_KIND_CAPTURE:
		if (decode)
			return NULL;
		return route ? "decode and normalize it first: kv-decode FILE "
		               "| kv-normalize --block-size N | route-score "
		               "--block-size N --events - --requests REQS"
		             : "decode it first: kv-decode FILE | kv-normalize "
		               "--block-size N";
	case KVP_KIND_ENGINE_EVENT:
		if (route)
			return "normalize it first: kv-normalize --block-size "
			       "N "
			       "FILE | route-score --block-size N --events - "
			       "--requests REQS";
		if (strcmp(tool, "mm-expand") == 0 || decode)
			return "kv-normalize reads it";
		return NULL;
	case KVP_KIND_ROUTER_EVENT:
		if (route)
			return NULL;
		return "it is already normalized: route-score --events FILE "
		       "reads it";
	case KVP_KIND_DECISION:
		if (strcmp(tool, "kv-diff") == 0 ||
		    strcmp(tool, "kv-report") == 0)
			return NULL;
		return "it is route-score's output: kv-diff and kv-report "
		       "read it";
	case KVP_KIND_TRACE:
		return route ? "read it with route-score --trace mooncake FILE"
		             : "route-score --trace mooncake reads it";
	case KVP_KIND_REQUEST:
		if (strcmp(tool, "kv-normalize") == 0 || decode)
			return "requests go to mm-expand, kv-hash or "
			       "route-score "
			       "--requests";
		return NULL;
	case KVP_KIND_MSGPACK:
		return decode ? NULL
		              : "kv-decode reads msgpack batches "
		                "(kv-decode --in raw FILE)";
	case KVP_KIND_GZIP:
	case KVP_KIND_ZSTD:
		return "decompress it first (zcat or zstdcat FILE | tool)";
	case KVP_KIND_PNG:
	case KVP_KIND_JPEG:
		return "mm-expand reads images that a request names (a path "
		       "or a data: URL)";
	case KVP_KIND_JSON_ARRAY:
		return "write one object per line first: jq -c '.[]' FILE | "
		       "tool";
	case KVP_KIND_PRETTY_JSON:
		return "write one object per line first: jq -c . FILE | tool";
	case KVP_KIND_UNKNOWN:
		break;
	}
	return NULL;
}

/* Copies advice a into buf with "FILE" and "tool" replaced by the input's
 * and the tool's names. */
static void
expand(char *buf, size_t size, const char *a, const char *name)
{
	size_t used = 0;

	while (*a != '\0' && used + 1 < size) {
		const char *w = NULL;

		if (strncmp(a, "FILE", 4) == 0)
			w = name;
		else if (strncmp(a, "tool", 4) == 0)
			w = kvp_getprogname();
		if (w != NULL) {
			size_t n = strlen(w);

			if (n > size - 1 - used)
				n = size - 1 - used;
			memcpy(buf + used, w, n);
			used += n;
			a += 4;
		} else {
			buf[used++] = *a++;
		}
	}
	buf[used] = '\0';
}

void
kvp_cli_hint(const char *name, const char *p, size_t n)
{
	enum kvp_kind k = kvp_sniff(p, n);
	const char *a = advice(kvp_getprogname(), k);
	char buf[512];

	if (a == NULL)
		return;
	expand(buf, sizeof buf, a, name);
	kvp_warnx("%s: this is %s; %s", name, kvp_kind_name(k), buf);
}
