/* SPDX-License-Identifier: MIT */
/*
 * test_output.c — lib/common/output: plain, gzip and zstd written through
 * one FILE * read back whole (through zlib's and libzstd's own one-shot
 * decoders, and through common/input); the base64 encoder against RFC
 * 4648's test vectors.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "common/base64.h"
#include "common/input.h"
#include "common/output.h"
#include "kvpipe.h"
#include "unit.h"

#define BIG ((size_t)3 << 20)

static char *
slurp_raw(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(BIG * 2);

	*n = fread(b, 1, BIG * 2, f);
	fclose(f);
	return b;
}

/* Decodes with the libraries' own decoders (not common/input). */
static size_t
decode_raw(enum kvp_input_codec c, const char *p, size_t n, char *out)
{
	if (c == KVP_INPUT_ZSTD) {
		size_t r = ZSTD_decompress(out, BIG * 2, p, n);

		return ZSTD_isError(r) ? (size_t)-1 : r;
	}
	if (c == KVP_INPUT_GZIP) {
		z_stream z;
		size_t got;

		memset(&z, 0, sizeof z);
		inflateInit2(&z, 16 + MAX_WBITS);
		z.next_in = (unsigned char *)(uintptr_t)p;
		z.avail_in = (uInt)n;
		z.next_out = (unsigned char *)out;
		z.avail_out = (uInt)(BIG * 2);
		if (inflate(&z, Z_FINISH) != Z_STREAM_END)
			return (size_t)-1;
		got = z.total_out;
		inflateEnd(&z);
		return got;
	}
	memcpy(out, p, n);
	return n;
}

static void
round_trip(enum kvp_input_codec c, const char *text, size_t len)
{
	char path[] = "/tmp/kvp-test-output-XXXXXX";
	int fd = mkstemp(path);
	struct kvp_diag d = {{0}, 0};
	struct kvp_output *o;
	struct kvp_input *in;
	char *raw, *back = malloc(BIG * 2);
	size_t n, got;

	close(fd);
	o = kvp_output_open(path, c, &d);
	CHECK(o != NULL);
	/* in pieces, as stdio hands them down */
	for (size_t i = 0; i < len; i += 100000) {
		size_t k = len - i < 100000 ? len - i : 100000;

		CHECK(fwrite(text + i, 1, k, kvp_output_file(o)) == k);
	}
	CHECK(kvp_output_close(o, &d) == KVP_OK);
	raw = slurp_raw(path, &n);
	if (c == KVP_INPUT_GZIP)
		CHECK((unsigned char)raw[0] == 0x1f);
	if (c == KVP_INPUT_ZSTD)
		CHECK((unsigned char)raw[0] == 0x28);
	if (c != KVP_INPUT_PLAIN && len > 0)
		CHECK(n < len / 2); /* the text repeats: it compressed */
	got = decode_raw(c, raw, n, back);
	CHECK_U64(got, len);
	CHECK(got == len && memcmp(back, text, len) == 0);
	/* and the input layer reads it back */
	in = kvp_input_open(path, &d);
	CHECK(in != NULL);
	got = fread(back, 1, BIG * 2, kvp_input_file(in));
	CHECK_U64(got, len);
	CHECK(memcmp(back, text, len) == 0);
	CHECK(kvp_input_codec(in) == c);
	kvp_input_close(in);
	unlink(path);
	free(raw);
	free(back);
}

static void
base64_vectors(void)
{
	static const char *const in[] = {"",     "f",     "fo",    "foo",
	                                 "foob", "fooba", "foobar"};
	static const char *const want[] = {
	    "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	unsigned char bin[256], back[256];
	char out[512];
	size_t n;

	for (size_t i = 0; i < 7; i++) {
		size_t k = strlen(in[i]);

		CHECK_U64(kvp_base64_encoded_len(k), strlen(want[i]));
		kvp_base64_encode((const unsigned char *)in[i], k, out);
		out[kvp_base64_encoded_len(k)] = '\0';
		CHECK_STR(out, want[i]);
	}
	for (int i = 0; i < 256; i++)
		bin[i] = (unsigned char)(255 - i);
	kvp_base64_encode(bin, 256, out);
	CHECK(kvp_base64_decode(out, kvp_base64_encoded_len(256), back, &n,
	                        NULL) == 0);
	CHECK_U64(n, 256);
	CHECK(memcmp(bin, back, 256) == 0);
}

int
main(void)
{
	char *text = malloc(BIG);
	size_t len = 0;
	struct kvp_diag d = {{0}, 0};

	while (len + 100 < BIG)
		len += (size_t)snprintf(
		    text + len, BIG - len,
		    "{\"seq\":%zu,\"payload_b64\":\"k8tB\"}\n", len);
	round_trip(KVP_INPUT_PLAIN, text, len);
	round_trip(KVP_INPUT_GZIP, text, len);
	round_trip(KVP_INPUT_ZSTD, text, len);
	round_trip(KVP_INPUT_ZSTD, "", 0);
	CHECK(kvp_output_codec_for("a.jsonl.zst") == KVP_INPUT_ZSTD);
	CHECK(kvp_output_codec_for("a.gz") == KVP_INPUT_GZIP);
	CHECK(kvp_output_codec_for("a.zst.1") == KVP_INPUT_PLAIN);
	CHECK(kvp_output_codec_for(NULL) == KVP_INPUT_PLAIN);
	CHECK(kvp_output_open("/nonexistent/dir/x", KVP_INPUT_PLAIN, &d) ==
	      NULL);
	CHECK(d.msg[0] != '\0');
	base64_vectors();
	free(text);
	return UNIT_DONE();
}
