/* SPDX-License-Identifier: MIT */
/* sniff.c — classify an input by its first line or bytes; see sniff.h. */
#define _GNU_SOURCE 1
#include "common/sniff.h"

#include <string.h>

static int
has(const char *p, size_t n, const char *needle)
{
	return memmem(p, n, needle, strlen(needle)) != NULL;
}

static int
starts(const unsigned char *p, size_t n, const char *magic, size_t m)
{
	return n >= m && memcmp(p, magic, m) == 0;
}

static enum kvp_kind
binary_kind(const unsigned char *u, size_t n)
{
	if (starts(u, n, "\x1f\x8b", 2))
		return KVP_KIND_GZIP;
	if (starts(u, n, "\x28\xb5\x2f\xfd", 4))
		return KVP_KIND_ZSTD;
	if (starts(u, n, "\x89PNG", 4))
		return KVP_KIND_PNG;
	if (starts(u, n, "\xff\xd8\xff", 3))
		return KVP_KIND_JPEG;
	/* msgpack fixarray / fixmap / array16/32 / map16/32 first, or any
	 * NUL byte: not text */
	if (n > 0 && ((u[0] >= 0x80 && u[0] <= 0x9f) || u[0] == 0xdc ||
	              u[0] == 0xdd || u[0] == 0xde || u[0] == 0xdf))
		return KVP_KIND_MSGPACK;
	if (memchr(u, '\0', n) != NULL)
		return KVP_KIND_MSGPACK;
	return KVP_KIND_UNKNOWN;
}

/* The kind of a JSON object line, by the keys it names. */
static enum kvp_kind
object_kind(const char *p, size_t n)
{
	if (has(p, n, "\"payload_b64\""))
		return KVP_KIND_CAPTURE;
	if (has(p, n, "\"rec\":\"event\"") || has(p, n, "\"rec\": \"event\""))
		return KVP_KIND_ENGINE_EVENT;
	if (has(p, n, "\"rec\":\"decision\"") ||
	    has(p, n, "\"rec\":\"summary\""))
		return KVP_KIND_DECISION;
	if (has(p, n, "\"event_id\"") && has(p, n, "\"worker_id\""))
		return KVP_KIND_ROUTER_EVENT;
	if (has(p, n, "\"hash_ids\""))
		return KVP_KIND_TRACE;
	if (has(p, n, "\"tokens\"") || has(p, n, "\"token_ids\""))
		return KVP_KIND_REQUEST;
	return KVP_KIND_UNKNOWN;
}

enum kvp_kind
kvp_sniff(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	enum kvp_kind k = binary_kind(u, n);
	size_t i = 0, end = n;

	if (k != KVP_KIND_UNKNOWN)
		return k;
	if (starts(u, n, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
		i++;
	while (end > i && (p[end - 1] == ' ' || p[end - 1] == '\t' ||
	                   p[end - 1] == '\r' || p[end - 1] == '\n'))
		end--;
	if (i < end && p[i] == '[')
		return KVP_KIND_JSON_ARRAY;
	if (end - i == 1 && p[i] == '{')
		return KVP_KIND_PRETTY_JSON;
	if (i < end && p[i] == '{')
		return object_kind(p + i, end - i);
	return KVP_KIND_UNKNOWN;
}

const char *
kvp_kind_name(enum kvp_kind k)
{
	switch (k) {
	case KVP_KIND_GZIP:
		return "gzip-compressed data";
	case KVP_KIND_ZSTD:
		return "zstd-compressed data";
	case KVP_KIND_PNG:
		return "a PNG image";
	case KVP_KIND_JPEG:
		return "a JPEG image";
	case KVP_KIND_MSGPACK:
		return "binary data (msgpack?), not NDJSON";
	case KVP_KIND_JSON_ARRAY:
		return "a JSON array, not one object per line";
	case KVP_KIND_PRETTY_JSON:
		return "pretty-printed JSON, not one object per line";
	case KVP_KIND_CAPTURE:
		return "a capture (payload_b64)";
	case KVP_KIND_ENGINE_EVENT:
		return "kv-decode output (engine events)";
	case KVP_KIND_ROUTER_EVENT:
		return "router events (kv-normalize output)";
	case KVP_KIND_DECISION:
		return "route-score output (decisions)";
	case KVP_KIND_TRACE:
		return "a Mooncake trace";
	case KVP_KIND_REQUEST:
		return "requests (token ids)";
	case KVP_KIND_UNKNOWN:
		break;
	}
	return "unrecognized input";
}
