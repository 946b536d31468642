/* SPDX-License-Identifier: MIT */
/* test_wire.c — lib/events/wire, wire_scan and lib/common/base64. Expected
 * values: RFC 4648 §10 (base64), docs/spec/kv-events.md §6.5 (F1, byte
 * hashes) and §6.6 16. */
#include <stdint.h>
#include <string.h>

#include "common/base64.h"
#include "unit.h"
#include "events/wire.h"

static size_t
hex2bin(const char *hex, unsigned char *out)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		out[n++] = (unsigned char)v;
	}
	return n;
}

static int
b64(const char *in, const char *want)
{
	unsigned char out[64];
	size_t n;
	struct kvp_diag d;

	if (kvp_base64_decode(in, strlen(in), out, &n, &d) != 0)
		return 0;
	return n == strlen(want) && memcmp(out, want, n) == 0;
}

static int
b64_bad(const char *in, long col)
{
	unsigned char out[64];
	size_t n;
	struct kvp_diag d = {{0}, 0};

	return kvp_base64_decode(in, strlen(in), out, &n, &d) == -1 &&
	       strncmp(d.msg, "invalid base64", 14) == 0 &&
	       (col < 0 || d.col == col);
}

int
main(void)
{
	struct kvp_wire *w = kvp_wire_new();
	struct kvp_wire_batch b;
	struct kvp_wire_event ev;
	struct kvp_diag d;
	unsigned char buf[256];
	size_t n;

	/* RFC 4648 §10 test vectors, padded and unpadded */
	CHECK(b64("", ""));
	CHECK(b64("Zg==", "f"));
	CHECK(b64("Zm8=", "fo"));
	CHECK(b64("Zm9v", "foo"));
	CHECK(b64("Zm9vYg==", "foob"));
	CHECK(b64("Zm9vYmE=", "fooba"));
	CHECK(b64("Zm9vYmFy", "foobar"));
	CHECK(b64("Zm9vYg", "foob"));
	CHECK(b64_bad("Zm9v*mFy", 5));
	CHECK(b64_bad("Zg=a", -1));
	CHECK(b64_bad("Z", -1));
	CHECK(b64_bad("Zm9 ", 4));
	CHECK(b64_bad("Zh==", -1)); /* non-zero padding bits */

	/* F1 (§6.5) */
	n = hex2bin("93cb00000000000000009198ab426c6f636b53746f726564920b0cc094"
	            "0a0b0c0d02c0a3475055c000",
	            buf);
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	b.bytes = n;
	CHECK(kvp_wire_envelope(w, &b, &d) == 0 && !kvp_wire_not_dynamo(&b));
	CHECK(b.n_events == 1 && b.has_rank && b.rank == 0);
	CHECK(kvp_wire_event(w, &b, 0, &ev, &d) == 0);
	CHECK(ev.type == KVP_WIRE_STORED && ev.enc == KVP_WIRE_ARRAY);
	CHECK(ev.n_hashes == 2);
	CHECK_U64(ev.hashes[0], 11);
	CHECK_U64(ev.hashes[1], 12);
	CHECK(!ev.has_parent);
	CHECK(ev.n_tokens == 4 && ev.tokens[3] == 13);
	CHECK(ev.block_size == 2 && ev.medium.present && ev.medium.len == 3);
	CHECK(ev.hash_repr == KVP_REPR_UINT);

	/* bin 00..1f → 1736447835066146335; 0xd3 -909903196730214601 (bytes
	 * from python3-msgpack) →
	 * 17536840876979337015 (§6.5, §6.6 16) */
	n = 0;
	buf[n++] = 0x93;
	buf[n++] = 0x00;
	buf[n++] = 0x91;
	buf[n++] = 0x93;
	buf[n++] = 0xac;
	memcpy(buf + n, "BlockRemoved", 12);
	n += 12;
	buf[n++] = 0x92;
	buf[n++] = 0xc4;
	buf[n++] = 32;
	for (int i = 0; i < 32; i++)
		buf[n++] = (unsigned char)i;
	n += hex2bin("d3f35f5fdd0ae73737", buf + n);
	buf[n++] = 0xc0;
	buf[n++] = 0x00;
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	CHECK(kvp_wire_envelope(w, &b, &d) == 0);
	CHECK(kvp_wire_event(w, &b, 0, &ev, &d) == 0);
	CHECK(ev.type == KVP_WIRE_REMOVED && ev.n_hashes == 2);
	CHECK_U64(ev.hashes[0], 1736447835066146335ULL);
	CHECK_U64(ev.hashes[1], 17536840876979337015ULL);
	CHECK(ev.hash_repr == (KVP_REPR_BIN | KVP_REPR_INT));
	CHECK(!ev.medium.present);

	/* length claims: never trusted beyond the bytes present */
	n = hex2bin("ddffffffff00", buf);
	CHECK(kvp_wire_load(w, buf, n, &d) == -1);
	CHECK(strstr(d.msg, "claims 4294967295 elements") != NULL);
	CHECK(kvp_wire_scan(buf, n, 1000, 0, &d) == -1);
	n = hex2bin("92c40a", buf);
	CHECK(kvp_wire_scan(buf, n, 1 << 20, 0, &d) == 0); /* needs more */
	CHECK(kvp_wire_scan(buf, n, 1 << 20, 1, &d) == -1);
	n = hex2bin("9201c402aabb", buf);
	CHECK(kvp_wire_scan(buf, n + 3, 100, 1, &d) == 6); /* one object */
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	CHECK(kvp_wire_load(w, buf, 0, &d) == -1);
	buf[0] = 0xc1;
	CHECK(kvp_wire_load(w, buf, 1, &d) == -1);
	CHECK(strstr(d.msg, "0xc1") != NULL);

	/* Dynamo's shape: [ts, events] and {ts, events} are not it */
	n = hex2bin("920090", buf);
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	CHECK(kvp_wire_envelope(w, &b, &d) == 0 && kvp_wire_not_dynamo(&b));
	n = hex2bin("82a2747300a66576656e747390", buf);
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	CHECK(kvp_wire_envelope(w, &b, &d) == 0 && kvp_wire_not_dynamo(&b));
	CHECK(b.enc == KVP_WIRE_MAP && b.n_events == 0);
	n = hex2bin("91c0", buf); /* fails for its own reason */
	CHECK(kvp_wire_load(w, buf, n, &d) == 0);
	CHECK(kvp_wire_envelope(w, &b, &d) == -1 && !kvp_wire_not_dynamo(&b));

	kvp_wire_free(w);
	return UNIT_DONE();
}
