/* SPDX-License-Identifier: MIT */
/*
 * test_input.c — lib/common/input: plain, gzip and zstd through one FILE *,
 * members and frames, damage at a byte offset, slurp; and the line
 * reader's byte order mark.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "common/input.h"
#include "common/ndjson.h"
#include "kvpipe.h"
#include "unit.h"

static char tmpl[64];

/* Writes buf to a new temporary file; returns its path (static). */
static const char *
put_file(const void *buf, size_t len)
{
	int fd;

	snprintf(tmpl, sizeof tmpl, "/tmp/kvp-test-input-XXXXXX");
	fd = mkstemp(tmpl);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror("test_input");
		exit(2);
	}
	close(fd);
	return tmpl;
}

static size_t
gz(const char *src, size_t n, unsigned char *dst, size_t cap)
{
	z_stream z;

	memset(&z, 0, sizeof z);
	deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	z.next_in = (unsigned char *)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)cap;
	deflate(&z, Z_FINISH);
	deflateEnd(&z);
	return cap - z.avail_out;
}

static size_t
zs(const char *src, size_t n, unsigned char *dst, size_t cap)
{
	return ZSTD_compress(dst, cap, src, n, 3);
}

/* Reads path through the layer; returns the decoded bytes (malloc'd). */
static char *
read_all(const char *path, size_t *len, int *status, struct kvp_diag *d,
         enum kvp_input_codec *codec)
{
	struct kvp_input *in = kvp_input_open(path, d);
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap);

	if (in == NULL) {
		*status = -99;
		*len = 0;
		return buf;
	}
	while ((got = fread(buf + n, 1, cap - n, kvp_input_file(in))) > 0) {
		n += got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	*status = kvp_input_status(in, d);
	if (codec)
		*codec = kvp_input_codec(in);
	CHECK(ferror(kvp_input_file(in)) == (*status != KVP_OK));
	kvp_input_close(in);
	*len = n;
	return buf;
}

/* Text of n lines "line K ...\n". */
static char *
make_text(size_t lines, size_t *len)
{
	char *t = malloc(lines * 64 + 1);
	size_t n = 0;

	for (size_t i = 0; i < lines; i++)
		n += (size_t)snprintf(t + n, 64, "{\"line\":%zu,\"v\":%zu}\n",
		                      i, (i * 2654435761u) % 100003);
	*len = n;
	return t;
}

static void
check_same(const char *path, const char *want, size_t wlen,
           enum kvp_input_codec wcodec)
{
	struct kvp_diag d = {{0}, 0};
	enum kvp_input_codec codec;
	size_t len;
	int st;
	char *got = read_all(path, &len, &st, &d, &codec);

	CHECK(st == KVP_OK);
	CHECK(codec == wcodec);
	CHECK_U64(len, wlen);
	CHECK(len == wlen && memcmp(got, want, len) == 0);
	free(got);
}

static void
test_plain(void)
{
	static const char *const small[] = {"",         "a",      "\x1f",
	                                    "\x1f\x8b", "(\xb5/", "{}\n"};
	size_t tl;
	char *t = make_text(5000, &tl);

	for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
		size_t n = strlen(small[i]);
		const char *p = put_file(small[i], n);

		/* "\x1f\x8b" alone is a (truncated) gzip header */
		if (i == 3) {
			struct kvp_diag d = {{0}, 0};
			size_t len;
			int st;

			free(read_all(p, &len, &st, &d, NULL));
			CHECK(st == KVP_BAD);
			CHECK_STR(d.msg, "truncated gzip input at byte 2");
		} else {
			check_same(p, small[i], n, KVP_INPUT_PLAIN);
		}
		unlink(p);
	}
	check_same(put_file(t, tl), t, tl, KVP_INPUT_PLAIN);
	unlink(tmpl);
	free(t);
}

static void
test_codecs(void)
{
	size_t tl, cl, half;
	char *t = make_text(200000, &tl); /* ~5 MB: several slots, blocks */
	unsigned char *c = malloc(tl + (1 << 20));

	cl = gz(t, tl, c, tl + (1 << 20));
	check_same(put_file(c, cl), t, tl, KVP_INPUT_GZIP);
	unlink(tmpl);
	cl = zs(t, tl, c, tl + (1 << 20));
	check_same(put_file(c, cl), t, tl, KVP_INPUT_ZSTD);
	unlink(tmpl);

	/* two gzip members; two zstd frames after a skippable frame */
	half = tl / 2;
	cl = gz(t, half, c, tl);
	cl += gz(t + half, tl - half, c + cl, tl + (1 << 20) - cl);
	check_same(put_file(c, cl), t, tl, KVP_INPUT_GZIP);
	unlink(tmpl);
	memcpy(c, "\x50\x2a\x4d\x18\x03\x00\x00\x00xyz", 11);
	cl = 11 + zs(t, half, c + 11, tl);
	cl += zs(t + half, tl - half, c + cl, tl + (1 << 20) - cl);
	check_same(put_file(c, cl), t, tl, KVP_INPUT_ZSTD);
	unlink(tmpl);
	free(c);
	free(t);
}

/* A truncated stream: the status, the message, and every byte of the first
 * (complete) unit delivered. */
static void
test_damage(void)
{
	size_t tl, cl, c1, len;
	char *t = make_text(100000, &tl), *got;
	unsigned char *c = malloc(tl + (1 << 20));
	struct kvp_diag d = {{0}, 0};
	char want[128];
	int st;

	for (int z = 0; z < 2; z++) {
		c1 = (z ? zs : gz)(t, tl / 2, c, tl);
		cl = c1 + (z ? zs : gz)(t + tl / 2, tl - tl / 2, c + c1, tl);
		cl = c1 + (cl - c1) / 2; /* cut the second unit */
		got = read_all(put_file(c, cl), &len, &st, &d, NULL);
		unlink(tmpl);
		CHECK(st == KVP_BAD);
		snprintf(want, sizeof want, "truncated %s input at byte %zu",
		         z ? "zstd" : "gzip", cl);
		CHECK_STR(d.msg, want);
		CHECK(len >= tl / 2 && len < tl);
		CHECK(memcmp(got, t, len) == 0);
		free(got);

		/* corrupt the second unit in its middle */
		cl = c1 + (z ? zs : gz)(t + tl / 2, tl - tl / 2, c + c1, tl);
		memset(c + c1 + (cl - c1) / 2, 0xff, 16);
		got = read_all(put_file(c, cl), &len, &st, &d, NULL);
		unlink(tmpl);
		CHECK(st == KVP_BAD);
		CHECK(strncmp(d.msg, "corrupt ", 8) == 0);
		CHECK(strstr(d.msg, z ? "zstd" : "gzip") != NULL);
		CHECK(strtoull(strrchr(d.msg, ' ') + 1, NULL, 10) >= c1);
		/* the first unit is whole; what the decoder made of the
		 * damaged one before it noticed is not checked */
		CHECK(len >= tl / 2);
		CHECK(memcmp(got, t, tl / 2) == 0);
		free(got);
	}
	free(c);
	free(t);
}

/* Position, size, a pipe, an early close while the thread runs ahead. */
static void
test_pos_and_close(void)
{
	size_t tl, cl;
	char *t = make_text(200000, &tl);
	unsigned char *c = malloc(tl);
	struct kvp_diag d = {{0}, 0};
	struct kvp_input *in;
	char buf[4096];
	int p[2];

	cl = zs(t, tl, c, tl);
	in = kvp_input_open(put_file(c, cl), &d);
	unlink(tmpl);
	CHECK(in != NULL);
	CHECK(kvp_input_size(in) == (int64_t)cl);
	CHECK(kvp_input_pos(in) == 0);
	CHECK(fread(buf, 1, sizeof buf, kvp_input_file(in)) == sizeof buf);
	CHECK(memcmp(buf, t, sizeof buf) == 0);
	CHECK(getc(kvp_input_file(in)) == (unsigned char)t[sizeof buf]);
	CHECK(kvp_input_pos(in) > 0 && kvp_input_pos(in) <= cl);
	CHECK(kvp_input_status(in, &d) == KVP_OK);
	kvp_input_close(in); /* before the end: the thread stops */
	kvp_input_close(NULL);

	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "{\"a\":1}\n", 8) == 8);
	close(p[1]);
	in = kvp_input_open_fd(p[0], 1, &d);
	CHECK(kvp_input_size(in) == -1);
	CHECK(fgets(buf, sizeof buf, kvp_input_file(in)) != NULL);
	CHECK_STR(buf, "{\"a\":1}\n");
	CHECK(getc(kvp_input_file(in)) == EOF);
	CHECK(kvp_input_pos(in) == 8);
	kvp_input_close(in);

	CHECK(kvp_input_open("/nonexistent/x", &d) == NULL);
	CHECK_STR(d.msg, "No such file or directory");
	free(c);
	free(t);
}

static void
test_slurp(void)
{
	unsigned char c[256];
	size_t cl = gz("hello\n", 6, c, sizeof c), len = 0;
	struct kvp_diag d = {{0}, 0};
	char *buf = NULL;

	CHECK(kvp_input_slurp(put_file(c, cl), 100, &buf, &len, &d) == KVP_OK);
	CHECK(len == 6 && strcmp(buf, "hello\n") == 0);
	free(buf);
	CHECK(kvp_input_slurp(tmpl, 3, &buf, &len, &d) == KVP_BAD);
	CHECK(kvp_input_slurp(put_file(c, cl - 3), 100, &buf, &len, &d) ==
	      KVP_BAD);
	unlink(tmpl);
	CHECK(kvp_input_slurp("/nonexistent/x", 100, &buf, &len, &d) ==
	      KVP_FAIL);
}

/* The line reader skips a UTF-8 BOM on the first line only. */
static void
test_bom(void)
{
	static char text[] = "\xef\xbb\xbf{\"a\":1}\n\xef\xbb\xbf{}\n";
	FILE *f = fmemopen(text, sizeof text - 1, "r");
	struct kvp_lines r;
	char *line;
	size_t len;

	kvp_lines_init(&r, f, 1024);
	CHECK(kvp_lines_next(&r, &line, &len) == KVP_LINE_OK);
	CHECK(len == 7 && strcmp(line, "{\"a\":1}") == 0);
	CHECK(kvp_lines_next(&r, &line, &len) == KVP_LINE_OK);
	CHECK(len == 5 && memcmp(line, "\xef\xbb\xbf{}", 5) == 0);
	CHECK(kvp_lines_next(&r, &line, &len) == KVP_LINE_EOF);
	kvp_lines_fini(&r);
	fclose(f);
}

int
main(void)
{
	test_plain();
	test_codecs();
	test_damage();
	test_pos_and_close();
	test_slurp();
	test_bom();
	CHECK(strlen(kvp_input_zlib_version()) > 0);
	CHECK(strlen(kvp_input_zstd_version()) > 0);
	return UNIT_DONE();
}
