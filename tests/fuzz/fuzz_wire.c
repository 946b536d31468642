/* SPDX-License-Identifier: MIT */
/* fuzz_wire.c — bytes through the msgpack batch decoder (one payload, and
 * as a raw stream), every event, the JSON rendering, and base64.
 *
 * Differential check: lib/events reads payloads with its own cursor; here
 * every payload it accepts is also unpacked by msgpack-c and rendered
 * from msgpack-c's object tree with the same JSON rules. The two
 * renderings must be byte-identical, and every batch the raw stream
 * splits off must be the object msgpack-c unpacks at that offset (abort()
 * otherwise). */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "events/decode_out.h"
#include "events/wire.h"
#include "events/wire_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* msgpack-c gives NULL for an empty string: pass the writer a real
 * pointer, as the cursor does. */
static const char *
str_ptr(const msgpack_object_str *s)
{
	return s->ptr != NULL ? s->ptr : "";
}

static void
ref_hex(struct kvp_jw *jw, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *buf = malloc(2 * n + 1);
	size_t i;

	if (buf == NULL)
		abort();
	for (i = 0; i < n; i++) { /* p may be NULL when n is 0 */
		buf[2 * i] = hex[(unsigned char)p[i] >> 4];
		buf[2 * i + 1] = hex[(unsigned char)p[i] & 15];
	}
	kvp_jw_strn(jw, buf, 2 * n);
	free(buf);
}

static const char *
ref_tname(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "bool";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return "integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "float";
	case MSGPACK_OBJECT_STR:
		return "string";
	case MSGPACK_OBJECT_ARRAY:
		return "array";
	case MSGPACK_OBJECT_MAP:
		return "map";
	case MSGPACK_OBJECT_BIN:
		return "bin";
	case MSGPACK_OBJECT_EXT:
		return "ext";
	}
	return "unknown";
}

/* The JSON rules of kvp_dout_value(), over msgpack-c's tree. */
static void
ref_write(struct kvp_jw *jw, const msgpack_object *o)
{
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		kvp_jw_null(jw);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		kvp_jw_bool(jw, o->via.boolean);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		kvp_jw_u64(jw, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		kvp_jw_i64(jw, o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		kvp_jw_double(jw, o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		kvp_jw_strn(jw, str_ptr(&o->via.str), o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		kvp_jw_obj_begin(jw);
		kvp_jw_key(jw, "bin");
		ref_hex(jw, o->via.bin.ptr, o->via.bin.size);
		kvp_jw_obj_end(jw);
		break;
	case MSGPACK_OBJECT_EXT:
		kvp_jw_obj_begin(jw);
		kvp_jw_kv_i64(jw, "ext", o->via.ext.type);
		kvp_jw_key(jw, "hex");
		ref_hex(jw, o->via.ext.ptr, o->via.ext.size);
		kvp_jw_obj_end(jw);
		break;
	case MSGPACK_OBJECT_ARRAY:
		kvp_jw_arr_begin(jw);
		for (i = 0; i < o->via.array.size; i++)
			ref_write(jw, &o->via.array.ptr[i]);
		kvp_jw_arr_end(jw);
		break;
	case MSGPACK_OBJECT_MAP:
		kvp_jw_obj_begin(jw);
		for (i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			char kb[64];

			if (k->type == MSGPACK_OBJECT_STR) {
				kvp_jw_keyn(jw, str_ptr(&k->via.str),
				            k->via.str.size);
			} else {
				if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
					snprintf(
					    kb, sizeof kb, "%llu",
					    (unsigned long long)k->via.u64);
				else if (k->type ==
				         MSGPACK_OBJECT_NEGATIVE_INTEGER)
					snprintf(kb, sizeof kb, "%lld",
					         (long long)k->via.i64);
				else
					snprintf(kb, sizeof kb, "<%s>",
					         ref_tname(k));
				kvp_jw_key(jw, kb);
			}
			ref_write(jw, &o->via.map.ptr[i].val);
		}
		kvp_jw_obj_end(jw);
		break;
	}
}

/* ORACLE_DEPTH: msgpack-c parses with a fixed stack of 32 entries, one of
 * them the root's, so it rejects 32 nested non-empty containers with
 * MSGPACK_UNPACK_NOMEM_ERROR; kvpipe's scanner accepts 32 levels
 * (KVP_WIRE_MAX_DEPTH, the 33rd is an error). On these small inputs that
 * error means only the oracle's limit: the comparison is skipped. */

/* w holds buf[0, len), accepted by kvp_wire_load(). */
static void
differential(const struct kvp_wire *w, const void *buf, size_t len)
{
	int rc;
	msgpack_unpacked res;
	size_t off = 0, n1 = 0, n2 = 0;
	char *s1 = NULL, *s2 = NULL;
	FILE *f1 = open_memstream(&s1, &n1), *f2 = open_memstream(&s2, &n2);
	struct kvp_jw j1, j2;

	if (f1 == NULL || f2 == NULL)
		abort();
	msgpack_unpacked_init(&res);
	rc = msgpack_unpack_next(&res, buf, len, &off);
	if (rc == MSGPACK_UNPACK_NOMEM_ERROR) { /* see ORACLE_DEPTH */
		msgpack_unpacked_destroy(&res);
		fclose(f1);
		fclose(f2);
		free(s1);
		free(s2);
		return;
	}
	if (rc != MSGPACK_UNPACK_SUCCESS || off != len) {
		fprintf(stderr, "fuzz_wire: kvp_wire_load accepted what "
		                "msgpack-c rejects\n");
		abort();
	}
	kvp_jw_init(&j1, f1, 0, 0);
	kvp_jw_init(&j2, f2, 0, 0);
	kvp_dout_value(&j1, kvp_wire_root(w));
	ref_write(&j2, &res.data);
	kvp_jw_end_record(&j1);
	kvp_jw_end_record(&j2);
	kvp_jw_fini(&j1);
	kvp_jw_fini(&j2);
	fclose(f1);
	fclose(f2);
	if (n1 != n2 || memcmp(s1, s2, n1) != 0) {
		fprintf(stderr,
		        "fuzz_wire: cursor and msgpack-c differ:\n%s\n%s\n", s1,
		        s2);
		abort();
	}
	free(s1);
	free(s2);
	msgpack_unpacked_destroy(&res);
}

/* The raw stream split data at [off, off + n): msgpack-c must find the
 * same object there. */
static void
stream_oracle(const uint8_t *data, size_t size, uint64_t off, size_t n)
{
	msgpack_unpacked res;
	size_t end = 0;
	int rc;

	if (off > size || n > size - off)
		abort();
	msgpack_unpacked_init(&res);
	rc = msgpack_unpack_next(&res, (const char *)data + off, size - off,
	                         &end);
	if (rc == MSGPACK_UNPACK_NOMEM_ERROR) { /* see ORACLE_DEPTH */
		msgpack_unpacked_destroy(&res);
		return;
	}
	if (rc != MSGPACK_UNPACK_SUCCESS || end != n) {
		fprintf(stderr, "fuzz_wire: the raw stream split a batch "
		                "msgpack-c does not\n");
		abort();
	}
	msgpack_unpacked_destroy(&res);
}

static void
decode_loaded(struct kvp_wire *w, struct kvp_jw *jw, size_t size, int strict)
{
	struct kvp_wire_batch b = {0};
	struct kvp_wire_event ev;
	struct kvp_diag d;
	size_t i;

	b.bytes = size;
	kvp_dout_value(jw, kvp_wire_root(w));
	kvp_jw_end_record(jw);
	if (kvp_wire_envelope(w, &b, &d) != 0 ||
	    (strict && kvp_wire_not_dynamo(&b)))
		return;
	for (i = 0; i < b.n_events; i++) {
		if (kvp_wire_event(w, &b, i, &ev, &d) != 0)
			continue;
		kvp_jw_arr_begin(jw);
		kvp_jw_u64_array(jw, ev.hashes, ev.n_hashes);
		kvp_jw_u64_array(jw, ev.tokens, ev.n_tokens);
		kvp_dout_value(jw, ev.extra_keys);
		kvp_dout_value(jw, ev.block_mm_infos);
		for (size_t k = 0; k < ev.n_unknown; k++)
			kvp_jw_strn(jw, ev.unknown[k].p, ev.unknown[k].len);
		if (ev.medium.present)
			kvp_jw_strn(jw, ev.medium.p, ev.medium.len);
		kvp_jw_arr_end(jw);
		kvp_jw_end_record(jw);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_wire *w = kvp_wire_new();
	struct kvp_wire_stream *s;
	struct kvp_diag d;
	struct kvp_jw jw = {0};
	FILE *out = fopen("/dev/null", "w"), *in;
	unsigned char *b64;
	size_t n;
	uint64_t off;

	if (w == NULL || out == NULL)
		goto done;
	kvp_jw_init(&jw, out, 0, 0);
	if (kvp_wire_load(w, data, size, &d) == 0) {
		differential(w, data, size);
		decode_loaded(w, &jw, size, 0);
		decode_loaded(w, &jw, size, 1);
	}
	if (size > 0 && (in = fmemopen((void *)data, size, "r")) != NULL) {
		s = kvp_wire_stream_new(in, 1 << 16, NULL);
		while (s != NULL &&
		       kvp_wire_stream_next(s, w, &off, &n, &d) == 1) {
			stream_oracle(data, size, off, n);
			decode_loaded(w, &jw, n, 0);
		}
		kvp_wire_stream_free(s);
		fclose(in);
	}
	b64 = malloc(kvp_base64_decoded_max(size));
	if (b64 != NULL)
		(void)kvp_base64_decode((const char *)data, size, b64, &n, &d);
	free(b64);
done:
	kvp_wire_free(w);
	kvp_jw_fini(&jw);
	if (out != NULL)
		fclose(out);
	return 0;
}
