/* SPDX-License-Identifier: MIT */
/* test_image.c — lib/image and lib/dataurl: header-only dimensions of
 * hand-built PNG, GIF, BMP and WebP headers (sizes chosen here), the real
 * oriented JPEGs of tests/fixtures/images (stored sizes and orientation
 * from tests/fixtures/README.md and the file names), the pixel limit,
 * corrupt headers, base64 (RFC 4648 §10 vectors), data: URLs and the
 * image sources (files through the cache, data: URLs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/blockhash.h"
#include "mm/dataurl.h"
#include "mm/image.h"
#include "mm/mm_internal.h"
#include "unit.h"

#ifndef FIXTURE_IMAGES
#define FIXTURE_IMAGES "tests/fixtures/images"
#endif

static uint8_t *
slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf;
	long n;

	snprintf(path, sizeof path, "%s/%s", FIXTURE_IMAGES, name);
	f = fopen(path, "rb");
	if (f == NULL) {
		perror(path); /* make runs the unit tests from the top folder */
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void
be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void
le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* PNG signature + IHDR (CRC not checked by a header parser). */
static size_t
png(uint8_t *p, uint32_t w, uint32_t h)
{
	memcpy(p, "\x89PNG\r\n\x1a\n", 8);
	be32(p + 8, 13);
	memcpy(p + 12, "IHDR", 4);
	be32(p + 16, w);
	be32(p + 20, h);
	memcpy(p + 24, "\x08\x02\x00\x00\x00", 5);
	memset(p + 29, 0, 4);
	return 33;
}

static void
check_real(const char *name, uint32_t w, uint32_t h, uint32_t o)
{
	size_t len = 0;
	uint8_t *buf = slurp(name, &len);
	struct kvp_image_info info;
	struct kvp_diag d;

	CHECK(buf != NULL);
	if (buf == NULL)
		return;
	CHECK(kvp_image_info(buf, len, KVP_IMAGE_DEFAULT_MAX_PIXELS, 1, &info,
	                     &d) == 0);
	CHECK_U64(info.width, w);
	CHECK_U64(info.height, h);
	CHECK_U64(info.orientation, o);
	CHECK_STR(info.format, "jpeg");
	free(buf);
}

/* PNG: dimensions, the pixel limit, truncated and corrupt headers */
static void
test_png(void)
{
	uint8_t b[128];
	struct kvp_image_info info;
	struct kvp_diag d;
	size_t n;

	n = png(b, 1024, 768);
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == 0);
	CHECK_U64(info.width, 1024);
	CHECK_U64(info.height, 768);
	CHECK_U64(info.orientation, 0);
	CHECK_STR(info.format, "png");
	/* over the pixel limit: refused from the header */
	n = png(b, 2000, 1000);
	CHECK(kvp_image_info(b, n, 1999999, 0, &info, &d) == -1);
	CHECK(strstr(d.msg, "over the limit") != NULL);
	CHECK(kvp_image_info(b, n, 2000000, 0, &info, &d) == 0);
	/* larger than stb_image's own decode limit: IHDR still read */
	n = png(b, 20000, 20000);
	CHECK(kvp_image_info(b, n, KVP_IMAGE_DEFAULT_MAX_PIXELS, 0, &info,
	                     &d) == -1);
	CHECK(strstr(d.msg, "over the limit") != NULL);
	CHECK(kvp_image_info(b, n, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 20000);
	/* truncated / corrupt */
	CHECK(kvp_image_info(b, 12, 0, 0, &info, &d) == -1);
	CHECK(kvp_image_info("hello", 5, 0, 0, &info, &d) == -1);
	CHECK(kvp_image_info("", 0, 0, 0, &info, &d) == -1);
}

/* GIF and BMP headers */
static void
test_gif_bmp(void)
{
	uint8_t b[128];
	struct kvp_image_info info;
	struct kvp_diag d;

	/* GIF: "GIF89a" + le16 width + le16 height + flags, bg, aspect */
	memcpy(b, "GIF89a\x2c\x01\xc8\x00\x00\x00\x00", 13);
	CHECK(kvp_image_info(b, 13, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 300);
	CHECK_U64(info.height, 200);

	/* BMP: 14-byte file header + 40-byte BITMAPINFOHEADER */
	memset(b, 0, 54);
	b[0] = 'B', b[1] = 'M';
	le32(b + 2, 54 + 3 * 4);
	le32(b + 10, 54);
	le32(b + 14, 40);
	le32(b + 18, 640);
	le32(b + 22, 480);
	b[26] = 1;
	b[28] = 24;
	CHECK(kvp_image_info(b, 54, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 640);
	CHECK_U64(info.height, 480);
}

/* WebP: VP8X, VP8L and VP8 */
static void
test_webp(void)
{
	uint8_t b[128];
	struct kvp_image_info info;
	struct kvp_diag d;

	/* WebP VP8X: canvas width-1 and height-1 as 24-bit LE */
	memset(b, 0, 64);
	memcpy(b, "RIFF\0\0\0\0WEBPVP8X", 16);
	le32(b + 16, 10);
	b[24] = 0xff, b[25] = 0x0f; /* 4095 -> 4096 */
	b[27] = 0xff, b[28] = 0x0b; /* 3071 -> 3072 */
	CHECK(kvp_image_info(b, 40, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 4096);
	CHECK_U64(info.height, 3072);
	CHECK_STR(info.format, "webp");
	/* VP8L: 0x2f, 14 bits width-1, 14 bits height-1 */
	memcpy(b + 12, "VP8L", 4);
	b[20] = 0x2f;
	/* w-1 = 599, h-1 = 399: bits = 599 | 399 << 14 */
	le32(b + 21, 599u | 399u << 14);
	CHECK(kvp_image_info(b, 40, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 600);
	CHECK_U64(info.height, 400);
	/* VP8: frame tag, 9d 01 2a, le16 width, le16 height (14 bits) */
	memcpy(b + 12, "VP8 ", 4);
	memcpy(b + 20, "\0\0\0\x9d\x01\x2a", 6);
	b[26] = 0x38, b[27] = 0x00; /* 56 */
	b[28] = 0x1c, b[29] = 0x00; /* 28 */
	CHECK(kvp_image_info(b, 40, 0, 0, &info, &d) == 0);
	CHECK_U64(info.width, 56);
	CHECK_U64(info.height, 28);
	b[23] = 0;
	CHECK(kvp_image_info(b, 40, 0, 0, &info, &d) == -1);
	CHECK(kvp_image_info(b, 20, 0, 0, &info, &d) == -1);
}

/* the real JPEGs and the axis-swapping orientations */
static void
test_jpeg(void)
{
	struct kvp_image_info info;
	struct kvp_diag d;

	/* real JPEGs: Landscape 1-4 are 1800x1200 as stored, 5-8 1200x1800;
	 * Portrait the mirror; orientation N in the name */
	check_real("Landscape_1.jpg", 1800, 1200, 1);
	check_real("Landscape_3.jpg", 1800, 1200, 3);
	check_real("Landscape_5.jpg", 1200, 1800, 5);
	check_real("Landscape_6.jpg", 1200, 1800, 6);
	check_real("Landscape_8.jpg", 1200, 1800, 8);
	/* Portrait_0: tag value 0 (tests/fixtures/README.md), outside 1..8 */
	check_real("Portrait_0.jpg", 1200, 1800, KVP_IMAGE_ORIENT_INVALID);
	check_real("Portrait_1.jpg", 1200, 1800, 1);
	check_real("Portrait_6.jpg", 1800, 1200, 6);
	{
		size_t len = 0;
		uint8_t *buf = slurp("Landscape_6.jpg", &len);

		/* the first 64 bytes hold no SOF: corrupt header */
		CHECK(buf != NULL &&
		      kvp_image_info(buf, 64, 0, 1, &info, &d) == -1);
		free(buf);
	}
	CHECK(kvp_image_swaps_axes(5) && kvp_image_swaps_axes(6) &&
	      kvp_image_swaps_axes(7) && kvp_image_swaps_axes(8));
	CHECK(!kvp_image_swaps_axes(0) && !kvp_image_swaps_axes(1) &&
	      !kvp_image_swaps_axes(2) && !kvp_image_swaps_axes(3) &&
	      !kvp_image_swaps_axes(4) && !kvp_image_swaps_axes(9));
}

#ifndef FIXTURE_MM
#define FIXTURE_MM "tests/fixtures/mm-expand"
#endif

/* A JPEG header built here: SOI, then segs[0..n), then a baseline SOF0 of
 * 64x48 with one component (sampling 1x1, table 0). */
static size_t
jpeg(uint8_t *p, const uint8_t *segs, size_t n)
{
	static const uint8_t sof[] = {0xff, 0xc0, 0, 11, 8,    0, 48,
	                              0,    64,   1, 1,  0x11, 0};

	p[0] = 0xff, p[1] = 0xd8;
	memcpy(p + 2, segs, n);
	memcpy(p + 2 + n, sof, sizeof sof);
	return 2 + n + sizeof sof;
}

/* A DHT segment of one table (class 0, id 0): code-length counts c[16],
 * then sum(c) zero value bytes. */
static size_t
dht(uint8_t *p, const uint8_t c[16])
{
	size_t n = 0;

	for (int i = 0; i < 16; i++)
		n += c[i];
	p[0] = 0xff, p[1] = 0xc4;
	p[2] = (uint8_t)((19 + n) >> 8), p[3] = (uint8_t)(19 + n);
	p[4] = 0;
	memcpy(p + 5, c, 16);
	memset(p + 21, 0, n);
	return 21 + n;
}

/* Issue 15: headers stb_image 2.27 would have indexed past its tables
 * with, refused before stb reads them; messages and sums by hand. */
static void
test_jpeg_guard(void)
{
	static uint8_t b[2048], seg[1024];
	uint8_t c[16] = {0};
	struct kvp_image_info info;
	struct kvp_diag d;
	char path[512];
	FILE *f;
	size_t n;

	/* the 44-byte regression file: sixteen 0xff counts, 16 * 255 = 4080 */
	snprintf(path, sizeof path, "%s/dht_counts_4080.jpg", FIXTURE_MM);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	n = f != NULL ? fread(b, 1, sizeof b, f) : 0;
	if (f != NULL)
		fclose(f);
	CHECK_U64(n, 44);
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg,
	          "corrupt JPEG header: DHT code counts sum to 4080, over 256");
	/* 256 codes of 16 bits: the most a table holds, accepted */
	c[15] = 255, c[14] = 1;
	n = jpeg(b, seg, dht(seg, c));
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == 0);
	CHECK_U64(info.width, 64);
	CHECK_U64(info.height, 48);
	/* 257 codes: refused */
	c[14] = 2;
	n = jpeg(b, seg, dht(seg, c));
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg,
	          "corrupt JPEG header: DHT code counts sum to 257, over 256");
	/* the same after a COM segment, stray bytes and 0xff fill, which
	 * stb skips */
	memcpy(seg, "\xff\xfe\x00\x04hi\x00\x11\xff\xff", 10);
	n = dht(seg + 10, c);
	n = jpeg(b, seg, 10 + n);
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK(strstr(d.msg, "sum to 257") != NULL);
	/* DHT class 2 */
	c[14] = 1;
	dht(seg, c);
	seg[4] = 0x20;
	n = jpeg(b, seg, 21 + 256);
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg, "corrupt JPEG header: DHT table class 2 id 0");
	/* DQT: 8-bit table 0 accepted; precision 2, or id 4, refused */
	memset(seg, 0, 69);
	memcpy(seg, "\xff\xdb\x00\x43\x00", 5);
	n = jpeg(b, seg, 69);
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == 0);
	b[6] = 0x20;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg, "corrupt JPEG header: DQT table precision 2 id 0");
	b[6] = 0x04;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	/* SOF: 2 components; sampling 5x1; quantisation table 4 */
	n = jpeg(b, seg, 0);
	b[11] = 2;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg, "corrupt JPEG header: 2 components");
	b[11] = 1, b[13] = 0x51;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	CHECK_STR(d.msg,
	          "corrupt JPEG header: component 1 sampling 5x1, table 0");
	b[13] = 0x11, b[14] = 4;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == -1);
	b[14] = 0;
	CHECK(kvp_image_info(b, n, 0, 1, &info, &d) == 0);
}

/* base64: RFC 4648 §10 */
static void
test_base64(void)
{
	uint8_t out[64];
	struct kvp_diag d;
	size_t n;

	CHECK(kvp_base64_decode("", 0, out, &n, &d) == 0 && n == 0);
	CHECK(kvp_base64_decode("Zg==", 4, out, &n, &d) == 0 && n == 1 &&
	      memcmp(out, "f", 1) == 0);
	CHECK(kvp_base64_decode("Zm8=", 4, out, &n, &d) == 0 && n == 2 &&
	      memcmp(out, "fo", 2) == 0);
	CHECK(kvp_base64_decode("Zm9vYmFy", 8, out, &n, &d) == 0 && n == 6 &&
	      memcmp(out, "foobar", 6) == 0);
	CHECK(kvp_base64_decode("Zm9vYg", 6, out, &n, &d) == 0 && n == 4 &&
	      memcmp(out, "foob", 4) == 0);
	CHECK(kvp_base64_decode("Zm9v*mFy", 8, out, &n, &d) == -1);
	CHECK(d.col == 5);
	CHECK(kvp_base64_decode("Zm9vY", 5, out, &n, &d) == -1);
	CHECK(kvp_base64_decode("Zm9=", 4, out, &n, &d) == -1);
	CHECK(kvp_base64_decode("Zg=", 3, out, &n, &d) == -1);
	CHECK(kvp_base64_decode("Z===", 4, out, &n, &d) == -1);
}

/* data: URLs */
static void
test_dataurl(void)
{
	const char *media, *payload;
	size_t ml, pl;
	int b64;
	struct kvp_diag d;

	const char *u;

	u = "data:image/png;base64,Zm9v";

	CHECK(kvp_dataurl_split(u, strlen(u), &media, &ml, &payload, &pl, &b64,
	                        &d) == 0);
	CHECK(ml == 9 && memcmp(media, "image/png", 9) == 0);
	CHECK(pl == 4 && memcmp(payload, "Zm9v", 4) == 0 && b64);
	u = "data:,abc";
	CHECK(kvp_dataurl_split(u, strlen(u), &media, &ml, &payload, &pl, &b64,
	                        &d) == 0);
	CHECK(ml == 0 && pl == 3 && !b64);
	u = "data:image/png;base64";
	CHECK(kvp_dataurl_split(u, strlen(u), &media, &ml, &payload, &pl, &b64,
	                        &d) == -1);
	CHECK(!kvp_dataurl_is("https://x", 9));
	CHECK(kvp_dataurl_is("DATA:x", 6));
}

/* image sources: a file twice (the second from the cache, until the
 * file changes), a data: URL, the size limit */
static void
test_imgsrc(void)
{
	struct kvp_imgsrc s;
	struct kvp_image_info info;
	struct kvp_diag d;
	uint8_t b[64];
	/* png(300, 200) */
	static const char url[] =
	    "data:image/png;base64,"
	    "iVBORw0KGgoAAAANSUhEUgAAASwAAADICAIAAAAAAAAA";
	char path[] = "/tmp/test_image.XXXXXX";
	size_t n = png(b, 640, 480);
	uint64_t h = 0;
	int fd = mkstemp(path);

	kvp_imgsrc_init(&s, 0, 1000);
	CHECK(fd >= 0 && write(fd, b, n) == (ssize_t)n);
	CHECK(kvp_imgsrc_file(&s, path, &info, &h, &d) == 0);
	CHECK(info.width == 640 && info.height == 480);
	CHECK_U64(h, kvp_hash_bytes(b, n, 0));
	h = 0;
	CHECK(kvp_imgsrc_file(&s, path, &info, &h, &d) == 0);
	CHECK_U64(h, kvp_hash_bytes(b, n, 0));
	n = png(b, 300, 200);
	CHECK(pwrite(fd, b, n, 0) == (ssize_t)n && write(fd, "x", 1) == 1);
	CHECK(kvp_imgsrc_file(&s, path, &info, &h, &d) == 0);
	CHECK(info.width == 300 && info.height == 200);
	if (fd >= 0)
		close(fd);
	unlink(path);
	CHECK(kvp_imgsrc_file(&s, path, &info, &h, &d) == -1);
	CHECK(kvp_imgsrc_file(&s, "/", &info, &h, &d) == -1);
	CHECK_STR(d.msg, "/: not a regular file");
	/* a FIFO with no writer: refused at once, never opened (issue 15) */
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(kvp_imgsrc_file(&s, path, &info, &h, &d) == -1);
	CHECK(strstr(d.msg, ": not a regular file") != NULL);
	unlink(path);
	CHECK(kvp_imgsrc_file(&s, "/dev/null", &info, &h, &d) == -1);
	CHECK_STR(d.msg, "/dev/null: not a regular file");
	CHECK(kvp_imgsrc_dataurl(&s, url, sizeof url - 1, &info, &d) == 0);
	CHECK(info.width == 300 && info.height == 200);
	CHECK(kvp_imgsrc_dataurl(&s, "data:,x", 7, &info, &d) == -1);
	kvp_imgsrc_fini(&s);
	kvp_imgsrc_init(&s, 0, 10);
	CHECK(kvp_imgsrc_dataurl(&s, url, sizeof url - 1, &info, &d) == -1);
	CHECK(strstr(d.msg, "over the image size limit of 10") != NULL);
	kvp_imgsrc_fini(&s);
}

int
main(void)
{
	test_png();
	test_gif_bmp();
	test_webp();
	test_jpeg();
	test_jpeg_guard();
	test_base64();
	test_dataurl();
	test_imgsrc();
	return UNIT_DONE();
}
