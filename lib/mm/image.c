/* SPDX-License-Identifier: MIT */
/* image.c — header-only image dimensions and EXIF orientation (image.h). */
#include "mm/image.h"

#include <libexif/exif-data.h>
#include <stdlib.h>
#include <string.h>

#include "mm/stb_image_impl.h"

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

static uint32_t
le24(const uint8_t *p)
{
	return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static const char *
sniff(const uint8_t *p, size_t len)
{
	if (len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		return "jpeg";
	if (len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "png";
	if (len >= 6 &&
	    (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0))
		return "gif";
	if (len >= 2 && p[0] == 'B' && p[1] == 'M')
		return "bmp";
	if (len >= 12 && memcmp(p, "RIFF", 4) == 0 &&
	    memcmp(p + 8, "WEBP", 4) == 0)
		return "webp";
	return NULL;
}

/* Visits the RIFF chunks of a WebP file; returns a pointer to the data of
 * the first chunk named fourcc and its size, or NULL. */
static const uint8_t *
webp_chunk(const uint8_t *p, size_t len, const char *fourcc, size_t *size)
{
	size_t off = 12;

	while (off + 8 <= len) {
		size_t sz = le32(p + off + 4);

		if (memcmp(p + off, fourcc, 4) == 0) {
			*size = sz <= len - off - 8 ? sz : len - off - 8;
			return p + off + 8;
		}
		if (sz > len - off - 8)
			break;
		off += 8 + sz + (sz & 1);
	}
	return NULL;
}

static int
webp_info(const uint8_t *p, size_t len, uint32_t *w, uint32_t *h,
          struct kvp_diag *d)
{
	const uint8_t *c;

	if (len < 30)
		return kvp_diag_set(d, 0, "truncated WebP header");
	c = p + 20;
	if (memcmp(p + 12, "VP8X", 4) == 0) {
		*w = le24(c + 4) + 1;
		*h = le24(c + 7) + 1;
		return 0;
	}
	if (memcmp(p + 12, "VP8L", 4) == 0) {
		uint32_t bits;

		if (c[0] != 0x2f)
			return kvp_diag_set(d, 0, "corrupt WebP VP8L header");
		bits = le32(c + 1);
		*w = (bits & 0x3fff) + 1;
		*h = ((bits >> 14) & 0x3fff) + 1;
		return 0;
	}
	if (memcmp(p + 12, "VP8 ", 4) == 0) {
		/* 3-byte frame tag, start code 9d 01 2a, 14-bit sizes */
		if (c[3] != 0x9d || c[4] != 0x01 || c[5] != 0x2a)
			return kvp_diag_set(d, 0, "corrupt WebP VP8 header");
		*w = (uint32_t)(c[6] | c[7] << 8) & 0x3fff;
		*h = (uint32_t)(c[8] | c[9] << 8) & 0x3fff;
		if (*w == 0 || *h == 0)
			return kvp_diag_set(d, 0, "corrupt WebP VP8 header");
		return 0;
	}
	return kvp_diag_set(d, 0, "unknown WebP chunk");
}

/*
 * JPEG header guard. Debian's stb_image 2.27 trusts a DHT segment's 16
 * code-length counts: a sum over 256 (up to 4080) makes
 * stbi__build_huffman write past its size[257], code[256] and values[256]
 * tables (fixed upstream later). jpeg_guard() walks the bytes exactly as
 * stbi_info's JPEG header scan does (stbi__decode_jpeg_header: markers
 * from SOI to the first SOF0/1/2, bytes past the end read as 0, non-0xff
 * bytes between segments skipped, 0xff fill consumed) and refuses every
 * table stb would index with a value it does not check, before stb sees
 * the bytes. It also refuses, with a clear message, what stb refuses on
 * its own (DHT class or id, DQT precision or id, SOF component count,
 * sampling factors and table ids). The scan header (SOS) is never read by
 * stbi_info; an SOS before the frame header is stb's "unknown marker".
 * Anything else stb fails on (truncation, bad lengths) is left to stb.
 */
struct jrd {
	const uint8_t *p;
	size_t len, off;
};

static unsigned
j8(struct jrd *r)
{
	return r->off < r->len ? r->p[r->off++] : 0;
}

static unsigned
j16(struct jrd *r)
{
	unsigned hi = j8(r);

	return hi << 8 | j8(r);
}

static void
jskip(struct jrd *r, size_t n)
{
	r->off = n < r->len - r->off ? r->off + n : r->len;
}

/* stbi__get_marker: 0xff (none) unless at a 0xff run. */
static unsigned
jmarker(struct jrd *r)
{
	unsigned x = j8(r);

	if (x != 0xff)
		return 0xff;
	while (x == 0xff)
		x = j8(r);
	return x;
}

/* DHT: 1 on stb-safe tables, 0 when stb fails on its own, -1 refused. */
static int
jpeg_dht(struct jrd *r, struct kvp_diag *d)
{
	long L = (long)j16(r) - 2;

	while (L > 0) {
		unsigned q = j8(r), n = 0;

		if (q >> 4 > 1 || (q & 15) > 3)
			return kvp_diag_set(d, 0,
			                    "corrupt JPEG header: DHT table "
			                    "class %u id %u",
			                    q >> 4, q & 15);
		for (int i = 0; i < 16; i++)
			n += j8(r);
		if (n > 256)
			return kvp_diag_set(d, 0,
			                    "corrupt JPEG header: DHT code "
			                    "counts sum to %u, over 256",
			                    n);
		jskip(r, n);
		L -= 17 + (long)n;
	}
	return L == 0;
}

/* DQT: as jpeg_dht. */
static int
jpeg_dqt(struct jrd *r, struct kvp_diag *d)
{
	long L = (long)j16(r) - 2;

	while (L > 0) {
		unsigned q = j8(r);

		if (q >> 4 > 1 || (q & 15) > 3)
			return kvp_diag_set(d, 0,
			                    "corrupt JPEG header: DQT table "
			                    "precision %u id %u",
			                    q >> 4, q & 15);
		jskip(r, q >> 4 ? 128 : 64);
		L -= q >> 4 ? 129 : 65;
	}
	return L == 0;
}

/* One segment before the frame header, as stbi__process_marker reads it. */
static int
jpeg_segment(struct jrd *r, unsigned m, struct kvp_diag *d)
{
	unsigned L;

	if (m == 0xc4)
		return jpeg_dht(r, d);
	if (m == 0xdb)
		return jpeg_dqt(r, d);
	if (m == 0xdd) {
		if (j16(r) != 4)
			return 0;
		jskip(r, 2);
		return 1;
	}
	if ((m >= 0xe0 && m <= 0xef) || m == 0xfe) {
		if ((L = j16(r)) < 2)
			return 0;
		jskip(r, L - 2);
		return 1;
	}
	return 0; /* no marker, or one stb does not know: stb fails */
}

/* SOF0/1/2, as stbi__process_frame_header reads it for stbi_info. */
static int
jpeg_sof(struct jrd *r, struct kvp_diag *d)
{
	unsigned lf = j16(r), c;

	jskip(r, 5); /* precision, height, width: checked by stb */
	c = j8(r);
	if (c != 1 && c != 3 && c != 4)
		return kvp_diag_set(d, 0, "corrupt JPEG header: %u components",
		                    c);
	if (lf != 8 + 3 * c)
		return 0;
	for (unsigned i = 0; i < c; i++) {
		unsigned q, tq;

		jskip(r, 1);
		q = j8(r);
		tq = j8(r);
		if (q >> 4 < 1 || q >> 4 > 4 || (q & 15) < 1 || (q & 15) > 4 ||
		    tq > 3)
			return kvp_diag_set(d, 0,
			                    "corrupt JPEG header: component "
			                    "%u sampling %ux%u, table %u",
			                    i + 1, q >> 4, q & 15, tq);
	}
	return 1;
}

/* 0: stb may read the header (or will fail on its own); -1 refused. */
static int
jpeg_guard(const uint8_t *p, size_t len, struct kvp_diag *d)
{
	struct jrd r = {p, len, 0};
	unsigned m;
	int rc;

	if (jmarker(&r) != 0xd8)
		return 0;
	m = jmarker(&r);
	while (m != 0xc0 && m != 0xc1 && m != 0xc2) {
		if ((rc = jpeg_segment(&r, m, d)) <= 0)
			return rc < 0 ? -1 : 0;
		m = jmarker(&r);
		while (m == 0xff) {
			if (r.off >= r.len)
				return 0;
			m = jmarker(&r);
		}
	}
	return jpeg_sof(&r, d) < 0 ? -1 : 0;
}

/* The APP1 Exif segment of a JPEG (starting at "Exif\0\0"), or NULL. */
static const uint8_t *
jpeg_exif(const uint8_t *p, size_t len, size_t *size)
{
	size_t off = 2;

	while (off + 4 <= len) {
		uint8_t m;
		size_t seg;

		if (p[off] != 0xff)
			return NULL;
		m = p[off + 1];
		if (m == 0xff) {
			off++;
			continue;
		}
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) {
			off += 2;
			continue;
		}
		if (m == 0xda || m == 0xd9)
			return NULL;
		seg = (size_t)p[off + 2] << 8 | p[off + 3];
		if (seg < 2 || seg > len - off - 2)
			return NULL;
		if (m == 0xe1 && seg >= 8 &&
		    memcmp(p + off + 4, "Exif\0\0", 6) == 0) {
			*size = seg - 2;
			return p + off + 4;
		}
		off += 2 + seg;
	}
	return NULL;
}

/* The eXIf chunk of a PNG (bare TIFF), or NULL. */
static const uint8_t *
png_exif(const uint8_t *p, size_t len, size_t *size)
{
	size_t off = 8;

	while (off + 12 <= len) {
		size_t sz = be32(p + off);

		if (sz > len - off - 12)
			return NULL;
		if (memcmp(p + off + 4, "eXIf", 4) == 0) {
			*size = sz;
			return p + off + 8;
		}
		if (memcmp(p + off + 4, "IDAT", 4) == 0 ||
		    memcmp(p + off + 4, "IEND", 4) == 0)
			return NULL;
		off += 12 + sz;
	}
	return NULL;
}

/* Orientation from an EXIF block that starts with "Exif\0\0". */
static uint32_t
exif_orientation(const uint8_t *p, size_t size)
{
	ExifData *ed;
	ExifEntry *e;
	uint32_t o = 0;

	if (size > 0xffffffffu)
		return 0;
	ed = exif_data_new();
	if (ed == NULL)
		return 0;
	exif_data_unset_option(ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
	exif_data_set_option(ed, EXIF_DATA_OPTION_DONT_CHANGE_MAKER_NOTE);
	exif_data_load_data(ed, p, (unsigned int)size);
	e = exif_content_get_entry(ed->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
	if (e != NULL && e->format == EXIF_FORMAT_SHORT && e->components >= 1 &&
	    e->size >= 2 && e->data != NULL)
		o = exif_get_short(e->data, exif_data_get_byte_order(ed));
	if (e != NULL && (o < 1 || o > 8))
		o = KVP_IMAGE_ORIENT_INVALID;
	exif_data_unref(ed);
	return o;
}

/* Orientation from a bare TIFF block (PNG eXIf, most WebP EXIF chunks). */
static uint32_t
tiff_orientation(const uint8_t *p, size_t size)
{
	uint8_t *buf;
	uint32_t o;

	if (size >= 6 && memcmp(p, "Exif\0\0", 6) == 0)
		return exif_orientation(p, size);
	if (size > (size_t)64 << 20)
		return 0;
	buf = malloc(size + 6);
	if (buf == NULL)
		return 0;
	memcpy(buf, "Exif\0\0", 6);
	memcpy(buf + 6, p, size);
	o = exif_orientation(buf, size + 6);
	free(buf);
	return o;
}

uint32_t
kvp_image_orientation(const void *buf, size_t len, const char *format)
{
	const uint8_t *p = buf, *x;
	size_t size = 0;

	if (format == NULL && (format = sniff(p, len)) == NULL)
		return 0;
	if (strcmp(format, "jpeg") == 0) {
		x = jpeg_exif(p, len, &size);
		return x != NULL ? exif_orientation(x, size) : 0;
	}
	if (strcmp(format, "png") == 0) {
		x = png_exif(p, len, &size);
		return x != NULL ? tiff_orientation(x, size) : 0;
	}
	if (strcmp(format, "webp") == 0) {
		x = webp_chunk(p, len, "EXIF", &size);
		return x != NULL ? tiff_orientation(x, size) : 0;
	}
	return 0;
}

int
kvp_image_info(const void *buf, size_t len, uint64_t max_pixels,
               int want_orientation, struct kvp_image_info *out,
               struct kvp_diag *d)
{
	const uint8_t *p = buf;
	const char *fmt = sniff(p, len);

	memset(out, 0, sizeof *out);
	if (fmt == NULL)
		return kvp_diag_set(d, 0,
		                    len == 0 ? "empty image"
		                             : "not a JPEG, PNG, GIF, BMP or "
		                               "WebP image");
	out->format = fmt;
	if (strcmp(fmt, "webp") == 0) {
		if (webp_info(p, len, &out->width, &out->height, d) != 0)
			return -1;
	} else {
		int w, h;

		if (strcmp(fmt, "jpeg") == 0 && jpeg_guard(p, len, d) != 0)
			return -1;
		if (kvp_stbi_info(p, len, &w, &h) == 0) {
			out->width = (uint32_t)w;
			out->height = (uint32_t)h;
		} else if (strcmp(fmt, "png") == 0 && len >= 24 &&
		           memcmp(p + 12, "IHDR", 4) == 0 && be32(p + 16) &&
		           be32(p + 20)) {
			/* stb refuses PNGs over 2^30 bytes decoded; the
			 * IHDR is still exact */
			out->width = be32(p + 16);
			out->height = be32(p + 20);
		} else {
			return kvp_diag_set(
			    d, 0, "corrupt or truncated %s header", fmt);
		}
	}
	if (max_pixels != 0 && (uint64_t)out->width * out->height > max_pixels)
		return kvp_diag_set(
		    d, 0,
		    "image is %ux%u = %llu pixels, over the limit of %llu",
		    out->width, out->height,
		    (unsigned long long)out->width * out->height,
		    (unsigned long long)max_pixels);
	if (want_orientation)
		out->orientation = kvp_image_orientation(p, len, fmt);
	return 0;
}

int
kvp_image_swaps_axes(uint32_t orientation)
{
	return orientation >= 5 && orientation <= 8;
}
