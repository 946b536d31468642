/* SPDX-License-Identifier: MIT */
/*
 * sniff.h — what an input looks like, from its first line or bytes, so a
 * front end can say which tool reads it when a tool is given the wrong
 * stage or format. A hint, not a parser: the record readers decide what
 * is valid.
 */
#ifndef KVP_SNIFF_H
#define KVP_SNIFF_H

#include <stddef.h>

enum kvp_kind {
	KVP_KIND_UNKNOWN = 0,
	KVP_KIND_GZIP,
	KVP_KIND_ZSTD,
	KVP_KIND_PNG,
	KVP_KIND_JPEG,
	KVP_KIND_MSGPACK,      /* binary: a msgpack array or map, or NULs */
	KVP_KIND_JSON_ARRAY,   /* '[' first: one array, not NDJSON */
	KVP_KIND_PRETTY_JSON,  /* a line holding only '{' */
	KVP_KIND_CAPTURE,      /* capture JSONL: "payload_b64" */
	KVP_KIND_ENGINE_EVENT, /* kv-decode output: "rec":"event" */
	KVP_KIND_ROUTER_EVENT, /* kv-normalize output / Dynamo RouterEvent */
	KVP_KIND_DECISION,     /* route-score output */
	KVP_KIND_TRACE,        /* Mooncake trace line: "hash_ids" */
	KVP_KIND_REQUEST,      /* a request: "tokens" or "token_ids" */
};

/* Classifies the first line (or first bytes) of an input. */
enum kvp_kind kvp_sniff(const char *p, size_t n);

/* A short noun phrase for the kind ("a capture (payload_b64)"). */
const char *kvp_kind_name(enum kvp_kind k);

#endif
