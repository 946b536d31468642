/* SPDX-License-Identifier: MIT */
/* mm.c — router-side multimodal prompt expansion (mm.h). */
#if defined(__GNUC__) && !defined(__clang__)
/* The counters must round exactly as the reference (spec §3.2). */
#pragma GCC optimize("fp-contract=off")
#endif
#include "mm/mm.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/num.h"
#include "common/base64.h"
#include "mm/dataurl.h"
#include "common/blockhash.h"
#include "mm/image.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "mm/tokenizer.h"
#include "common/util.h"

/* ---- families ------------------------------------------------------------ */

static const char *const family_names[] = {
    [KVP_MM_UNKNOWN] = NULL,        [KVP_MM_KIMI_K25] = "kimi_k25",
    [KVP_MM_KIMI_K3] = "kimi_k3",   [KVP_MM_QWEN2_VL] = "qwen2_vl",
    [KVP_MM_QWEN3_VL] = "qwen3_vl", [KVP_MM_LLAVA] = "llava",
};

const char *
kvp_mm_family_name(enum kvp_mm_family f)
{
	return family_names[f];
}

const char *
kvp_mm_layout_name(enum kvp_mm_layout l)
{
	switch (l) {
	case KVP_MM_LAYOUT_REPEATED_PAD:
		return "repeated_pad";
	case KVP_MM_LAYOUT_KIMI_K3:
		return "kimi_k3";
	default:
		return NULL;
	}
}

enum kvp_mm_family
kvp_mm_family_by_name(const char *s)
{
	for (int f = KVP_MM_KIMI_K25; f <= KVP_MM_LLAVA; f++)
		if (strcmp(s, family_names[f]) == 0)
			return (enum kvp_mm_family)f;
	return KVP_MM_UNKNOWN;
}

static int
has(const char *s, const char *sub)
{
	size_t n = strlen(sub);

	for (; *s != '\0'; s++)
		if (strncasecmp(s, sub, n) == 0)
			return 1;
	return 0;
}

enum kvp_mm_family
kvp_mm_family_match(const char *s)
{
	if (has(s, "kimi_k3") || has(s, "kimi-k3") ||
	    (has(s, "kimi") && has(s, "k3")))
		return KVP_MM_KIMI_K3;
	if (has(s, "kimi_k25") || has(s, "kimi_k2_5") || has(s, "kimi_k2_6") ||
	    has(s, "kimi-k2") || has(s, "kimi_k2"))
		return KVP_MM_KIMI_K25;
	if (has(s, "qwen2_vl") || has(s, "qwen2-vl") || has(s, "qwen2_5_vl") ||
	    has(s, "qwen2.5-vl") || has(s, "qwen2_5-vl"))
		return KVP_MM_QWEN2_VL;
	if (has(s, "qwen3_vl") || has(s, "qwen3-vl") || has(s, "qwen3.5") ||
	    has(s, "qwen3_5") || has(s, "qwen3.6") || has(s, "qwen3_6"))
		return KVP_MM_QWEN3_VL;
	if (has(s, "llava-1.5") || has(s, "llava-v1.5"))
		return KVP_MM_LLAVA;
	return KVP_MM_UNKNOWN;
}

enum kvp_mm_layout
kvp_mm_family_layout(enum kvp_mm_family f)
{
	if (f == KVP_MM_UNKNOWN)
		return KVP_MM_LAYOUT_NONE;
	return f == KVP_MM_KIMI_K3 ? KVP_MM_LAYOUT_KIMI_K3
	                           : KVP_MM_LAYOUT_REPEATED_PAD;
}

uint32_t
kvp_mm_family_placeholder(enum kvp_mm_family f)
{
	switch (f) {
	case KVP_MM_KIMI_K25:
	case KVP_MM_KIMI_K3:
		return KVP_MM_KIMI_MEDIA_PAD;
	case KVP_MM_QWEN2_VL:
	case KVP_MM_QWEN3_VL:
		return 151655;
	case KVP_MM_LLAVA:
		return 32000;
	default:
		return 0;
	}
}

int64_t
kvp_mm_family_bos(enum kvp_mm_family f)
{
	return f == KVP_MM_LLAVA ? 1 : -1;
}

/* ---- counters ------------------------------------------------------------ */

void
kvp_mm_counter_default(enum kvp_mm_family f, struct kvp_mm_counter *c)
{
	memset(c, 0, sizeof *c);
	switch (f) {
	case KVP_MM_KIMI_K25:
	case KVP_MM_KIMI_K3:
		c->kind = KVP_MM_NAVIT;
		c->patch = 14;
		c->merge = 2;
		c->in_patch_limit = f == KVP_MM_KIMI_K3 ? 65536 : 16384;
		c->side_limit = 512;
		break;
	case KVP_MM_QWEN2_VL:
		c->kind = KVP_MM_SMART;
		c->patch = 14;
		c->merge = 2;
		c->min_px = 200704;
		c->max_px = 1003520;
		break;
	case KVP_MM_QWEN3_VL:
		c->kind = KVP_MM_SMART;
		c->patch = 16;
		c->merge = 2;
		c->min_px = 65536;
		c->max_px = 16777216;
		break;
	case KVP_MM_LLAVA:
	default:
		c->kind = KVP_MM_FIXED;
		c->patch = 14;
		c->fixed = 576;
		break;
	}
}

/* A positive integral parameter of a config object; 0 if absent/null. */
static int
cfg_num(const struct json_object *o, const char *key, uint64_t *out,
        struct kvp_diag *d)
{
	struct json_object *v;
	double x;

	*out = 0;
	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !kvp_json_get(o, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i > 0) {
			*out = json_object_get_uint64(v);
			return 0;
		}
	} else if (json_object_is_type(v, json_type_double)) {
		x = json_object_get_double(v);
		if (isfinite(x) && x >= 1 && x < 18446744073709551616.0 &&
		    x == floor(x)) {
			*out = (uint64_t)x;
			return 0;
		}
	}
	return kvp_diag_set(d, 0,
	                    "preprocessor_config: \"%s\" must be a positive "
	                    "integer",
	                    key);
}

static const struct json_object *
cfg_sub(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o != NULL && kvp_json_get(o, key, &v) &&
	    json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

/* Top-level key, else the same in media_proc_cfg (Kimi). */
static int
kimi_num(const struct json_object *cfg, const char *key, const char *alt,
         uint64_t *out, struct kvp_diag *d)
{
	const struct json_object *m = cfg_sub(cfg, "media_proc_cfg");

	if (cfg_num(cfg, key, out, d) != 0)
		return -1;
	if (*out == 0 && alt != NULL && cfg_num(cfg, alt, out, d) != 0)
		return -1;
	if (*out == 0 && cfg_num(m, key, out, d) != 0)
		return -1;
	if (*out == 0 && alt != NULL && cfg_num(m, alt, out, d) != 0)
		return -1;
	return 0;
}

int
kvp_mm_counter_from_config(enum kvp_mm_family f, const struct json_object *cfg,
                           struct kvp_mm_counter *c, struct kvp_diag *d)
{
	uint64_t v;
	const struct json_object *size = cfg_sub(cfg, "size");

	kvp_mm_counter_default(f, c);
	if (cfg == NULL)
		return 0;
	switch (c->kind) {
	case KVP_MM_NAVIT:
		if (kimi_num(cfg, "patch_size", NULL, &v, d) != 0)
			return -1;
		if (v)
			c->patch = v;
		if (kimi_num(cfg, "merge_kernel_size", "merge_size", &v, d) !=
		    0)
			return -1;
		if (v)
			c->merge = v;
		if (kimi_num(cfg, "in_patch_limit", NULL, &v, d) != 0)
			return -1;
		if (v)
			c->in_patch_limit = v;
		if (kimi_num(cfg, "patch_limit_on_one_side", NULL, &v, d) != 0)
			return -1;
		if (v)
			c->side_limit = v;
		break;
	case KVP_MM_SMART:
		if (cfg_num(cfg, "patch_size", &v, d) != 0)
			return -1;
		if (v)
			c->patch = v;
		if (cfg_num(cfg, "merge_size", &v, d) != 0)
			return -1;
		if (v)
			c->merge = v;
		if (cfg_num(cfg, "min_pixels", &v, d) != 0)
			return -1;
		if (v == 0 && f == KVP_MM_QWEN3_VL &&
		    cfg_num(size, "shortest_edge", &v, d) != 0)
			return -1;
		if (v)
			c->min_px = v;
		if (cfg_num(cfg, "max_pixels", &v, d) != 0)
			return -1;
		if (v == 0 && f == KVP_MM_QWEN3_VL &&
		    cfg_num(size, "longest_edge", &v, d) != 0)
			return -1;
		if (v)
			c->max_px = v;
		break;
	case KVP_MM_FIXED: {
		uint64_t side;

		if (cfg_num(cfg, "patch_size", &v, d) != 0)
			return -1;
		if (v)
			c->patch = v;
		if (cfg_num(size, "height", &side, d) != 0)
			return -1;
		if (side == 0 && cfg_num(size, "shortest_edge", &side, d) != 0)
			return -1;
		if (side == 0)
			side = 336;
		if (side / c->patch > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "preprocessor_config: image size "
			                    "too large");
		c->fixed = (side / c->patch) * (side / c->patch);
		break;
	}
	}
	if (c->patch > UINT32_MAX || c->merge > UINT32_MAX ||
	    c->patch * c->merge > UINT32_MAX || c->side_limit > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "preprocessor_config: patch, merge "
		                    "or side limit too large");
	return 0;
}

static uint64_t
ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* MoonViT NaViT resize (spec §3.1). */
static uint64_t
count_navit(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	uint64_t ps = c->patch, s = c->side_limit * ps;
	uint64_t pw = w / ps > 1 ? w / ps : 1, ph = h / ps > 1 ? h / ps : 1;
	double scale = 1.0, x;
	uint64_t nw, nh;

	x = sqrt((double)c->in_patch_limit / ((double)pw * (double)ph));
	if (x < scale)
		scale = x;
	x = (double)s / (double)w;
	if (x < scale)
		scale = x;
	x = (double)s / (double)h;
	if (x < scale)
		scale = x;
	nw = (uint64_t)trunc((double)w * scale);
	nh = (uint64_t)trunc((double)h * scale);
	nw = nw < 1 ? 1 : nw > s ? s : nw;
	nh = nh < 1 ? 1 : nh > s ? s : nh;
	return ceil_div(nw, ps * c->merge) * ceil_div(nh, ps * c->merge);
}

/* smg's smart_resize (spec §3.2): clamp to factor before the min test. */
static uint64_t
count_smart(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	double fac = (double)(c->patch * c->merge);
	double H = h, W = w, hb, wb, beta;
	uint64_t tw, th;

	if ((W > H ? W / H : H / W) > 200) {
		hb = wb = fac;
	} else {
		hb = nearbyint(H / fac) * fac;
		wb = nearbyint(W / fac) * fac;
		if (hb < fac)
			hb = fac;
		if (wb < fac)
			wb = fac;
		if (hb * wb > (double)c->max_px) {
			beta = sqrt(H * W / (double)c->max_px);
			hb = floor(H / beta / fac) * fac;
			wb = floor(W / beta / fac) * fac;
			if (hb < fac)
				hb = fac;
			if (wb < fac)
				wb = fac;
		} else if (hb * wb < (double)c->min_px) {
			beta = sqrt((double)c->min_px / (H * W));
			hb = ceil(H * beta / fac) * fac;
			wb = ceil(W * beta / fac) * fac;
		}
	}
	th = (uint64_t)hb / c->patch;
	tw = (uint64_t)wb / c->patch;
	return th * tw / (c->merge * c->merge);
}

uint64_t
kvp_mm_count(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	if (w == 0 || h == 0)
		return 0;
	switch (c->kind) {
	case KVP_MM_NAVIT:
		return count_navit(c, w, h);
	case KVP_MM_SMART:
		return count_smart(c, w, h);
	default:
		return c->fixed;
	}
}

/* ---- hashes -------------------------------------------------------------- */

int
kvp_mm_parse_hash(const struct json_object *v, uint64_t *out,
                  struct kvp_diag *d)
{
	const char *s;
	size_t len, i;
	uint64_t x = 0;

	if (!json_object_is_type(v, json_type_string))
		return kvp_json_u64(v, 0, "mm_hash", out, d);
	s = json_object_get_string((struct json_object *)v);
	len = (size_t)json_object_get_string_len(v);
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
		if (len > 16)
			goto bad;
	} else if (len != 16 && len != 64) {
		goto bad;
	}
	for (i = 0; i < len; i++)
		if (kvp_hexval(s[i]) < 0)
			goto bad;
	for (i = 0; i < len && i < 16; i++)
		x = x << 4 | (uint64_t)kvp_hexval(s[i]);
	*out = x;
	return 0;
bad:
	return kvp_diag_set(d, 0,
	                    "mm_hash: expected a u64 or a string of 16 hex "
	                    "digits");
}

/* ---- the context --------------------------------------------------------- */

#define CACHE_SLOTS 64

struct file_cache {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct kvp_image_info info;
	uint64_t hash;
};

struct img_in {
	const char *url, *path;
	size_t url_len;
	int has_dims, has_orient, has_hash, has_dims_ids, has_count, uuid;
	uint32_t w, h, orient, count;
	uint64_t hash;
	const struct json_object *dims_ids;
};

struct kvp_mm {
	struct kvp_mm_opts o;
	struct kvp_mm_result r;
	uint64_t *u64buf;
	size_t u64cap;
	uint32_t *orig;
	size_t orig_cap, n_orig;
	size_t tok_cap, img_cap, blk_cap, seq_cap;
	struct img_in *in;
	size_t in_cap;
	struct kvp_tok_ids dims;
	uint8_t *bytes;
	size_t bytes_cap;
	struct file_cache cache[CACHE_SLOTS];
};

struct kvp_mm *
kvp_mm_new(const struct kvp_mm_opts *o)
{
	struct kvp_mm *m = calloc(1, sizeof *m);

	if (m != NULL)
		m->o = *o;
	return m;
}

void
kvp_mm_free(struct kvp_mm *m)
{
	if (m == NULL)
		return;
	free(m->u64buf);
	free(m->orig);
	free(m->r.tokens);
	free(m->r.img);
	free(m->r.local);
	free(m->r.seq);
	free(m->in);
	kvp_tok_ids_free(&m->dims);
	free(m->bytes);
	for (int i = 0; i < CACHE_SLOTS; i++)
		free(m->cache[i].path);
	free(m);
}

const struct kvp_mm_result *
kvp_mm_result(const struct kvp_mm *m)
{
	return &m->r;
}

static int
grow(void **p, size_t *cap, size_t want, size_t elem, struct kvp_diag *d)
{
	if (kvp_grow(p, cap, want, elem) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}

static int fallback(struct kvp_mm *m, const char *reason, const char *fmt, ...)
    KVP_PRINTF(3, 4);

static int
fallback(struct kvp_mm *m, const char *reason, const char *fmt, ...)
{
	va_list ap;

	m->r.exact = 0;
	m->r.reason = reason;
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(m->r.detail, sizeof m->r.detail, fmt, ap);
		va_end(ap);
	}
	return 1;
}

/* ---- image resolution ---------------------------------------------------- */

static int
read_fd(struct kvp_mm *m, int fd, size_t size, size_t *len, struct kvp_diag *d)
{
	size_t got = 0;

	if (grow((void **)&m->bytes, &m->bytes_cap, size + 1, 1, d) != 0)
		return -1;
	while (got < size) {
		ssize_t n = read(fd, m->bytes + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return kvp_diag_set(d, 0, "%s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*len = got;
	return 0;
}

/* Dims, orientation and XXH3 of a file's bytes, through the cache. */
static int
image_file(struct kvp_mm *m, const char *path, struct kvp_image_info *info,
           uint64_t *hash, struct kvp_diag *d)
{
	struct stat st;
	struct file_cache *c;
	size_t len = 0;
	int fd, rc;
	struct kvp_diag id;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kvp_diag_set(d, 0, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return kvp_diag_set(d, 0, "%s: not a regular file", path);
	}
	c = &m->cache[kvp_hash_bytes(path, strlen(path), 0) % CACHE_SLOTS];
	if (c->path != NULL && strcmp(c->path, path) == 0 &&
	    c->dev == st.st_dev && c->ino == st.st_ino &&
	    c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec &&
	    c->mtime.tv_nsec == st.st_mtim.tv_nsec) {
		close(fd);
		*info = c->info;
		*hash = c->hash;
		return 0;
	}
	if ((uint64_t)st.st_size > m->o.max_image_bytes) {
		close(fd);
		return kvp_diag_set(d, 0,
		                    "%s: %lld bytes, over the image size "
		                    "limit of %zu",
		                    path, (long long)st.st_size,
		                    m->o.max_image_bytes);
	}
	rc = read_fd(m, fd, (size_t)st.st_size, &len, d);
	close(fd);
	if (rc != 0)
		return -1;
	if (kvp_image_info(m->bytes, len, m->o.max_pixels, 1, info, &id) != 0)
		return kvp_diag_set(d, 0, "%s: %s", path, id.msg);
	*hash = kvp_hash_bytes(m->bytes, len, 0);
	free(c->path);
	c->path = strdup(path);
	if (c->path != NULL) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
		c->size = st.st_size;
		c->mtime = st.st_mtim;
		c->info = *info;
		c->hash = *hash;
	}
	return 0;
}

static int
image_dataurl(struct kvp_mm *m, const char *url, size_t len,
              struct kvp_image_info *info, struct kvp_diag *d)
{
	const char *media, *payload;
	size_t media_len, payload_len, n;
	int b64;
	struct kvp_diag id;
	const uint8_t *bytes;

	if (kvp_dataurl_split(url, len, &media, &media_len, &payload,
	                      &payload_len, &b64, d) != 0)
		return -1;
	/* The media type is not checked: like Dynamo, the header decides. */
	(void)media;
	(void)media_len;
	if (b64) {
		if (kvp_base64_decoded_max(payload_len) > m->o.max_image_bytes)
			return kvp_diag_set(d, 0,
			                    "data: URL payload over the image "
			                    "size limit of %zu bytes",
			                    m->o.max_image_bytes);
		if (grow((void **)&m->bytes, &m->bytes_cap,
		         kvp_base64_decoded_max(payload_len), 1, d) != 0)
			return -1;
		if (kvp_base64_decode(payload, payload_len, m->bytes, &n,
		                      &id) != 0)
			return kvp_diag_set(d, 0, "data: URL: %s", id.msg);
		bytes = m->bytes;
	} else {
		bytes = (const uint8_t *)payload;
		n = payload_len;
	}
	if (kvp_image_info(bytes, n, m->o.max_pixels, 1, info, &id) != 0)
		return kvp_diag_set(d, 0, "data: URL: %s", id.msg);
	return 0;
}

/* Fills m->r.img[i] (hash, dims, orientation) or returns -1 with d set. */
static int
resolve_image(struct kvp_mm *m, size_t i, enum kvp_mm_policy policy,
              struct kvp_diag *d)
{
	const struct img_in *in = &m->in[i];
	struct kvp_mm_image *im = &m->r.img[i];
	struct kvp_image_info info = {0};
	uint64_t fhash = 0;
	int have_info = 0;

	if (in->url != NULL && kvp_dataurl_is(in->url, in->url_len) &&
	    !in->has_dims) {
		if (image_dataurl(m, in->url, in->url_len, &info, d) != 0)
			return -1;
		have_info = 1;
	} else if (in->path != NULL &&
	           (!in->has_dims || (!in->has_hash && in->url == NULL))) {
		if (image_file(m, in->path, &info, &fhash, d) != 0)
			return -1;
		have_info = 1;
	}
	if (in->has_hash) {
		im->mm_hash = in->hash;
		im->hash_source = "explicit";
	} else if (in->url != NULL) {
		im->mm_hash = kvp_hash_bytes(in->url, in->url_len, 0);
		im->hash_source = "url";
	} else if (in->path != NULL) {
		im->mm_hash = fhash;
		im->hash_source = "file_bytes";
	} else {
		return kvp_diag_set(d, 0, "no url, path or mm_hash");
	}
	if (in->has_dims) {
		im->width = in->w;
		im->height = in->h;
		if (m->o.max_pixels != 0 &&
		    (uint64_t)in->w * in->h > m->o.max_pixels)
			return kvp_diag_set(
			    d, 0,
			    "%ux%u is over the pixel limit of "
			    "%llu",
			    in->w, in->h, (unsigned long long)m->o.max_pixels);
	} else if (have_info) {
		im->width = info.width;
		im->height = info.height;
	} else {
		return kvp_diag_set(d, 0,
		                    "no width/height, path or data: URL "
		                    "(mm-expand never fetches http(s) URLs)");
	}
	if (im->width == 0 || im->height == 0)
		return kvp_diag_set(d, 0, "zero width or height");
	im->orientation = in->has_orient ? in->orient : info.orientation;
	if (policy == KVP_MM_EXIF_TRANSPOSED &&
	    kvp_image_swaps_axes(im->orientation)) {
		uint32_t t = im->width;

		im->width = im->height;
		im->height = t;
	}
	return 0;
}

/* ---- record parsing ------------------------------------------------------ */

static int
u32_of(const struct json_object *v, const char *what, uint32_t *out,
       struct kvp_diag *d)
{
	uint64_t x;

	if (kvp_json_u64(v, 0, what, &x, d) != 0)
		return -1;
	if (x > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32", what,
		                    (unsigned long long)x);
	*out = (uint32_t)x;
	return 0;
}

static int
opt_u32(const struct json_object *o, const char *key, uint32_t *out,
        int *present, struct kvp_diag *d)
{
	struct json_object *v;

	*present = 0;
	if (!kvp_json_get(o, key, &v))
		return 0;
	*present = 1;
	return u32_of(v, key, out, d);
}

/* A JSON array of u32 into *buf (u64 scratch reused). */
static int
u32_array(struct kvp_mm *m, const struct json_object *arr, const char *what,
          uint32_t **buf, size_t *cap, size_t *n, struct kvp_diag *d)
{
	size_t k;

	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(d, 0, "%s: expected an array", what);
	if (kvp_json_u64_array(arr, 0, what, &m->u64buf, &m->u64cap, &k, d) !=
	    0)
		return -1;
	if (grow((void **)buf, cap, k + 1, sizeof **buf, d) != 0)
		return -1;
	for (size_t i = 0; i < k; i++) {
		if (m->u64buf[i] > UINT32_MAX)
			return kvp_diag_set(
			    d, 0, "%s[%zu]: %llu does not fit in u32", what, i,
			    (unsigned long long)m->u64buf[i]);
		(*buf)[i] = (uint32_t)m->u64buf[i];
	}
	*n = k;
	return 0;
}

static int
parse_image(struct img_in *in, const struct json_object *o, size_t i,
            struct kvp_diag *d)
{
	struct json_object *v;
	int hw, hh;

	memset(in, 0, sizeof *in);
	if (!json_object_is_type(o, json_type_object))
		return kvp_diag_set(d, 0, "images[%zu]: expected an object", i);
	if (kvp_json_opt_str(o, "url", &in->url, d) != 0 ||
	    kvp_json_opt_str(o, "path", &in->path, d) != 0)
		goto err;
	if (in->url != NULL) {
		kvp_json_get(o, "url", &v);
		in->url_len = (size_t)json_object_get_string_len(v);
	}
	if (opt_u32(o, "width", &in->w, &hw, d) != 0 ||
	    opt_u32(o, "height", &in->h, &hh, d) != 0 ||
	    opt_u32(o, "exif_orientation", &in->orient, &in->has_orient, d) !=
	        0)
		goto err;
	if (opt_u32(o, "token_count", &in->count, &in->has_count, d) != 0)
		goto err;
	if (hw != hh)
		return kvp_diag_set(
		    d, 0, "images[%zu]: width and height go together", i);
	in->has_dims = hw;
	if (kvp_json_get(o, "mm_hash", &v)) {
		if (kvp_mm_parse_hash(v, &in->hash, d) != 0)
			goto err;
		in->has_hash = 1;
	}
	if (kvp_json_get(o, "uuid", &v)) {
		if (json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) == 0)
			return kvp_diag_set(d, 0,
			                    "images[%zu]: empty uuid (Dynamo "
			                    "rejects the request)",
			                    i);
		in->uuid = 1;
	}
	if (kvp_json_get(o, "dims_token_ids", &v)) {
		if (!json_object_is_type(v, json_type_array))
			return kvp_diag_set(d, 0,
			                    "images[%zu].dims_token_ids: "
			                    "expected an array",
			                    i);
		in->dims_ids = v;
		in->has_dims_ids = 1;
	}
	return 0;
err:
	if (d != NULL) {
		char msg[sizeof d->msg];

		memcpy(msg, d->msg, sizeof msg);
		kvp_diag_set(d, d->col, "images[%zu]: %s", i, msg);
	}
	return -1;
}

static int
is_empty_kwargs(const struct json_object *v)
{
	return v == NULL || (json_object_is_type(v, json_type_object) &&
	                     json_object_object_length(v) == 0);
}

/* ---- expansion ----------------------------------------------------------- */

/* Encodes a K3 control token; 0 with *id, or 1 (fallback already set). */
static int
control_token(struct kvp_mm *m, const char *name, uint32_t *id,
              struct kvp_diag *d)
{
	struct kvp_diag ed;

	m->dims.n = 0;
	if (m->o.tok == NULL) {
		*id = kvp_mm_family_placeholder(KVP_MM_KIMI_K3);
		return 0;
	}
	if (kvp_tok_encode(m->o.tok, name, strlen(name), 1, &m->dims, &ed) != 0)
		return fallback(m, "layout_unresolved", "%s: %s", name, ed.msg);
	(void)d;
	if (m->dims.n != 1)
		return fallback(m, "layout_unresolved",
		                "Kimi-K3 routing control token %s encoded to "
		                "%zu ids; expected exactly one",
		                name, m->dims.n);
	*id = m->dims.v[0];
	return 0;
}

static int
hash_blocks(struct kvp_mm *m, struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	size_t nb = kvp_hash_block_count(r->n_tokens, r->block_size, r->eagle);

	if (grow((void **)&r->local, &m->blk_cap, nb + 1, sizeof *r->local,
	         d) != 0 ||
	    grow((void **)&r->seq, &m->seq_cap, nb + 1, sizeof *r->seq, d) != 0)
		return -1;
	r->n_blocks =
	    kvp_hash_tokens(r->tokens, r->n_tokens, r->block_size, r->eagle,
	                    r->block_seed, r->chain_seed, r->local, r->seq);
	if (r->exact) {
		size_t e = r->expanded_len;

		if (r->block_size == 0)
			r->complete_blocks = 0;
		else if (r->eagle)
			r->complete_blocks =
			    e >= 1 ? (e - 1) / r->block_size : 0;
		else
			r->complete_blocks = e / r->block_size;
	} else {
		r->complete_blocks = r->n_blocks;
	}
	return 0;
}

static int
decide(struct kvp_mm *m, const struct json_object *rec,
       enum kvp_mm_policy policy, uint32_t placeholder, int64_t bos,
       const struct kvp_mm_counter *ctr, const struct json_object *kwargs,
       uint64_t other_media, struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	uint32_t ctl[3] = {KVP_MM_KIMI_MEDIA_BEGIN, KVP_MM_KIMI_MEDIA_CONTENT,
	                   KVP_MM_KIMI_MEDIA_END};
	uint64_t total, nph = 0, padded;
	size_t i, k, o;
	struct kvp_diag id;

	(void)rec;
	if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
		static const char *const names[3] = {
		    "<|media_begin|>", "<|media_content|>", "<|media_end|>"};

		for (i = 0; i < 3; i++)
			if (control_token(m, names[i], &ctl[i], d) != 0)
				return 1;
	}
	if (r->block_size == 0)
		return fallback(m, "block_size_zero", "block_size is 0");
	for (i = 0; i < r->n_img; i++)
		if (m->in[i].uuid)
			return fallback(m, "user_uuid",
			                "images[%zu] has a user uuid", i);
	if (!is_empty_kwargs(kwargs))
		return fallback(m, "mm_processor_kwargs",
		                "mm_processor_kwargs is set");
	if (other_media > 0)
		return fallback(m, "non_image_media",
		                "%llu non-image media part(s)",
		                (unsigned long long)other_media);
	for (i = 0; i < r->n_img; i++)
		if (resolve_image(m, i, policy, &id) != 0)
			return fallback(m, "dims_unresolved", "images[%zu]: %s",
			                i, id.msg);
	for (i = 0; i < m->n_orig; i++)
		nph += m->orig[i] == placeholder;
	if (nph != r->n_img)
		return fallback(m, "placeholder_count_mismatch",
		                "placeholder token %u occurs %llu times for "
		                "%zu image(s)",
		                placeholder, (unsigned long long)nph, r->n_img);
	/* counts, K3 dims ids, total length (checked arithmetic) */
	m->dims.n = 0;
	total = m->n_orig - r->n_img + (bos >= 0);
	for (i = 0; i < r->n_img; i++) {
		struct kvp_mm_image *im = &r->img[i];

		im->count = m->in[i].has_count
		                ? m->in[i].count
		                : kvp_mm_count(ctr, im->width, im->height);
		im->pad = kvp_pad_value(im->mm_hash);
		if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
			int len =
			    snprintf(im->dims_text, sizeof im->dims_text,
			             "image %ux%u", im->width, im->height);

			im->dims_off = m->dims.n;
			if (m->in[i].has_dims_ids) {
				uint32_t *tmp = NULL;
				size_t cap = 0, n;

				if (u32_array(m, m->in[i].dims_ids,
				              "dims_token_ids", &tmp, &cap, &n,
				              d) != 0) {
					free(tmp);
					return -1;
				}
				for (k = 0; k < n; k++)
					if (kvp_tok_ids_push(&m->dims,
					                     tmp[k]) != 0) {
						free(tmp);
						return kvp_diag_set(
						    d, 0, "out of memory");
					}
				free(tmp);
			} else if (m->o.tok != NULL &&
			           kvp_tok_encode(m->o.tok, im->dims_text,
			                          (size_t)len, 0, &m->dims,
			                          &id) != 0) {
				return fallback(
				    m, "expansion_failed",
				    "images[%zu]: dims text \"%s\": "
				    "%s",
				    i, im->dims_text, id.msg);
			}
			im->dims_len = m->dims.n - im->dims_off;
			total += 3 + im->dims_len;
		}
		total += im->count;
		if (total > KVP_MM_MAX_ROUTING_TOKENS)
			return fallback(m, "too_long",
			                "expanded prompt longer than %u tokens",
			                KVP_MM_MAX_ROUTING_TOKENS);
	}
	padded = ceil_div(total, r->block_size) * r->block_size;
	if (padded > KVP_MM_MAX_ROUTING_TOKENS)
		return fallback(m, "too_long",
		                "padded routing sequence of %llu tokens is "
		                "longer than %u",
		                (unsigned long long)padded,
		                KVP_MM_MAX_ROUTING_TOKENS);
	if (grow((void **)&r->tokens, &m->tok_cap, (size_t)padded + 1,
	         sizeof *r->tokens, d) != 0)
		return -1;
	o = 0;
	if (bos >= 0)
		r->tokens[o++] = (uint32_t)bos;
	for (i = 0, k = 0; i < m->n_orig; i++) {
		struct kvp_mm_image *im;

		if (m->orig[i] != placeholder || k >= r->n_img) {
			r->tokens[o++] = m->orig[i];
			continue;
		}
		im = &r->img[k++];
		if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
			r->tokens[o++] = ctl[0];
			memcpy(r->tokens + o, m->dims.v + im->dims_off,
			       im->dims_len * sizeof *r->tokens);
			o += im->dims_len;
			r->tokens[o++] = ctl[1];
		}
		for (uint64_t j = 0; j < im->count; j++)
			r->tokens[o++] = im->pad;
		if (r->layout == KVP_MM_LAYOUT_KIMI_K3)
			r->tokens[o++] = ctl[2];
	}
	r->expanded_len = o;
	while (o < padded)
		r->tokens[o++] = 0;
	r->n_tokens = o;
	r->exact = 1;
	r->reason = NULL;
	return 0;
}

int
kvp_mm_expand(struct kvp_mm *m, const struct json_object *rec,
              struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	struct json_object *v, *images = NULL, *cfg = NULL, *kwargs = NULL;
	const char *family = NULL, *model_type = NULL, *model = NULL;
	const char *lora = NULL, *ns = NULL, *pol = NULL;
	enum kvp_mm_policy policy = m->o.policy;
	uint64_t bs = m->o.block_size, other_media = 0;
	uint32_t placeholder = 0;
	int64_t bos;
	int has_ph, present, rc;
	struct kvp_mm_counter ctr;
	size_t i;

	r->id = kvp_json_get(rec, "id", &v) ? v : NULL;
	r->exact = 0;
	r->reason = NULL;
	r->detail[0] = '\0';
	r->family = KVP_MM_UNKNOWN;
	r->layout = KVP_MM_LAYOUT_NONE;
	r->n_img = 0;
	r->n_tokens = 0;
	r->expanded_len = 0;
	r->n_blocks = r->complete_blocks = 0;
	r->chain_seed = m->o.chain_seed;
	r->eagle = 0;

	if (kvp_json_req_array(rec, "token_ids", &v, d) != 0 ||
	    u32_array(m, v, "token_ids", &m->orig, &m->orig_cap, &m->n_orig,
	              d) != 0)
		return -1;
	if (kvp_json_opt_u64(rec, "block_size", 0, &bs, &present, d) != 0)
		return -1;
	if (bs > UINT32_MAX)
		return kvp_diag_set(d, 0, "block_size: too large");
	r->block_size = (uint32_t)bs;
	if (kvp_json_opt_str(rec, "lora_name", &lora, d) != 0 ||
	    kvp_json_opt_str(rec, "cache_namespace", &ns, d) != 0 ||
	    (ns == NULL && kvp_json_opt_str(rec, "cache_salt", &ns, d) != 0) ||
	    kvp_json_opt_str(rec, "family", &family, d) != 0 ||
	    kvp_json_opt_str(rec, "model_type", &model_type, d) != 0 ||
	    kvp_json_opt_str(rec, "model", &model, d) != 0 ||
	    kvp_json_opt_str(rec, "dims_policy", &pol, d) != 0)
		return -1;
	if (kvp_json_get(rec, "is_eagle", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return kvp_diag_set(d, 0,
			                    "is_eagle: expected a boolean");
		r->eagle = json_object_get_boolean(v);
	}
	if (pol != NULL) {
		if (strcmp(pol, "encoded") == 0)
			policy = KVP_MM_ENCODED;
		else if (strcmp(pol, "exif_transposed") == 0)
			policy = KVP_MM_EXIF_TRANSPOSED;
		else
			return kvp_diag_set(d, 0,
			                    "dims_policy: expected \"encoded\" "
			                    "or \"exif_transposed\"");
	}
	if (kvp_json_get(rec, "preprocessor_config", &cfg) &&
	    !json_object_is_type(cfg, json_type_object))
		return kvp_diag_set(d, 0,
		                    "preprocessor_config: expected an object");
	kvp_json_get(rec, "mm_processor_kwargs", &kwargs);
	if (kvp_json_opt_u64(rec, "other_media", 0, &other_media, &present,
	                     d) != 0)
		return -1;
	if (opt_u32(rec, "placeholder_token_id", &placeholder, &has_ph, d) != 0)
		return -1;
	if (kvp_json_get(rec, "images", &images) &&
	    !json_object_is_type(images, json_type_array))
		return kvp_diag_set(d, 0, "images: expected an array");
	r->n_img = images != NULL ? json_object_array_length(images) : 0;
	if (grow((void **)&m->in, &m->in_cap, r->n_img + 1, sizeof *m->in, d) !=
	        0 ||
	    grow((void **)&r->img, &m->img_cap, r->n_img + 1, sizeof *r->img,
	         d) != 0)
		return -1;
	for (i = 0; i < r->n_img; i++) {
		if (parse_image(&m->in[i], json_object_array_get_idx(images, i),
		                i, d) != 0)
			return -1;
		memset(&r->img[i], 0, sizeof r->img[i]);
	}

	/* family and counter */
	if (family != NULL) {
		r->family = kvp_mm_family_by_name(family);
		if (r->family == KVP_MM_UNKNOWN)
			r->family = kvp_mm_family_match(family);
	} else {
		if (model != NULL)
			r->family = kvp_mm_family_match(model);
		if (r->family == KVP_MM_UNKNOWN && model_type != NULL)
			r->family = kvp_mm_family_match(model_type);
	}
	bos = kvp_mm_family_bos(r->family);
	if (kvp_json_get(rec, "bos_token_id", &v)) {
		uint32_t b = 0;

		if (json_object_is_type(v, json_type_boolean) &&
		    !json_object_get_boolean(v))
			bos = -1;
		else if (u32_of(v, "bos_token_id", &b, d) != 0)
			return -1;
		else
			bos = b;
	}
	if (r->family != KVP_MM_UNKNOWN &&
	    kvp_mm_counter_from_config(r->family, cfg, &ctr, d) != 0)
		return -1;
	r->block_seed = kvp_hash_seed(KVP_HASH_SEED, lora, ns);

	rc = 0;
	if (r->n_img == 0)
		rc = fallback(m, "no_images", NULL);
	else if (r->family == KVP_MM_UNKNOWN)
		rc = fallback(m, "unsupported_model",
		              "no counter for family/model \"%s\"",
		              family       ? family
		              : model      ? model
		              : model_type ? model_type
		                           : "");
	if (rc == 0) {
		r->layout = kvp_mm_family_layout(r->family);
		if (!has_ph)
			placeholder = kvp_mm_family_placeholder(r->family);
		rc = decide(m, rec, policy, placeholder, bos, &ctr, kwargs,
		            other_media, d);
		if (rc < 0)
			return -1;
	}
	if (rc > 0) {
		/* fallback: the original token_ids, complete blocks only */
		if (grow((void **)&r->tokens, &m->tok_cap, m->n_orig + 1,
		         sizeof *r->tokens, d) != 0)
			return -1;
		memcpy(r->tokens, m->orig, m->n_orig * sizeof *r->tokens);
		r->n_tokens = m->n_orig;
		r->expanded_len = 0;
		r->exact = 0;
	}
	return hash_blocks(m, d);
}

/* ---- output -------------------------------------------------------------- */

/*
 * A token array. Pad runs are long (hundreds to thousands of one value):
 * the first element goes through the writer, the rest of a run is the
 * same ",N" text written in chunks (the writer's comma state is already
 * past the first element).
 */
static void
write_tokens(struct kvp_jw *w, const uint32_t *t, size_t n)
{
	char chunk[1024];
	size_t i = 0, j;

	kvp_jw_arr_begin(w);
	while (i < n) {
		for (j = i + 1; j < n && t[j] == t[i]; j++)
			;
		kvp_jw_u64(w, t[i]);
		if (j - i > 2) {
			int len = snprintf(chunk, sizeof chunk, ",%u", t[i]);
			size_t per = sizeof chunk / (size_t)len,
			       left = j - i - 1;

			for (size_t k = 1; k < per; k++)
				memcpy(chunk + k * (size_t)len, chunk,
				       (size_t)len);
			while (left > 0) {
				size_t c = left < per ? left : per;

				kvp_jw_raw(w, chunk, (size_t)len * c);
				left -= c;
			}
		} else if (j - i == 2) {
			kvp_jw_u64(w, t[i]);
		}
		i = j;
	}
	kvp_jw_arr_end(w);
}

void
kvp_mm_write(const struct kvp_mm *m, struct kvp_jw *w)
{
	const struct kvp_mm_result *r = &m->r;
	const char *s;
	size_t i;

	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "mm_expand");
	kvp_jw_key(w, "id");
	if (r->id != NULL)
		kvp_jw_json(w, r->id);
	else
		kvp_jw_null(w);
	kvp_jw_kv_str(w, "status", r->exact ? "exact" : "fallback");
	if (r->reason != NULL)
		kvp_jw_kv_str(w, "reason", r->reason);
	else
		kvp_jw_kv_null(w, "reason");
	if (r->detail[0] != '\0')
		kvp_jw_kv_str(w, "detail", r->detail);
	else
		kvp_jw_kv_null(w, "detail");
	s = kvp_mm_family_name(r->family);
	if (s != NULL)
		kvp_jw_kv_str(w, "family", s);
	else
		kvp_jw_kv_null(w, "family");
	s = kvp_mm_layout_name(r->layout);
	if (s != NULL)
		kvp_jw_kv_str(w, "layout", s);
	else
		kvp_jw_kv_null(w, "layout");
	if (r->exact) {
		kvp_jw_key(w, "image_token_counts");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++)
			kvp_jw_u64(w, r->img[i].count);
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "image_dims");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++) {
			kvp_jw_arr_begin(w);
			kvp_jw_u64(w, r->img[i].width);
			kvp_jw_u64(w, r->img[i].height);
			kvp_jw_arr_end(w);
		}
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "image_orientations");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++)
			kvp_jw_u64(w, r->img[i].orientation);
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "dims_texts");
		if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
			kvp_jw_arr_begin(w);
			for (i = 0; i < r->n_img; i++)
				kvp_jw_str(w, r->img[i].dims_text);
			kvp_jw_arr_end(w);
		} else {
			kvp_jw_null(w);
		}
		kvp_jw_key(w, "mm_hashes");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++)
			kvp_jw_hash(w, r->img[i].mm_hash);
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "mm_hashes_hex");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++) {
			char hex[17];

			snprintf(hex, sizeof hex, "%016llx",
			         (unsigned long long)r->img[i].mm_hash);
			kvp_jw_str(w, hex);
		}
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "mm_hash_source");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++)
			kvp_jw_str(w, r->img[i].hash_source);
		kvp_jw_arr_end(w);
		kvp_jw_key(w, "pad_values");
		kvp_jw_arr_begin(w);
		for (i = 0; i < r->n_img; i++)
			kvp_jw_u64(w, r->img[i].pad);
		kvp_jw_arr_end(w);
		kvp_jw_kv_u64(w, "expanded_prompt_len", r->expanded_len);
	} else {
		static const char *const nulls[] = {
		    "image_token_counts", "image_dims", "image_orientations",
		    "dims_texts",         "mm_hashes",  "mm_hashes_hex",
		    "mm_hash_source",     "pad_values", "expanded_prompt_len"};

		for (i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
			kvp_jw_kv_null(w, nulls[i]);
	}
	kvp_jw_key(w, "routing_token_ids");
	write_tokens(w, r->tokens, r->n_tokens);
	kvp_jw_kv_u64(w, "block_size", r->block_size);
	kvp_jw_kv_bool(w, "is_eagle", r->eagle);
	kvp_jw_kv_u64(w, "num_blocks", r->n_blocks);
	kvp_jw_kv_u64(w, "complete_blocks", r->complete_blocks);
	kvp_jw_kv_hash(w, "block_seed", r->block_seed);
	kvp_jw_kv_hash(w, "chain_seed", r->chain_seed);
	kvp_jw_key(w, "block_mm_infos");
	kvp_jw_arr_begin(w);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "block_hashes");
	kvp_jw_hash_array(w, r->local, r->n_blocks);
	kvp_jw_key(w, "sequence_hashes");
	kvp_jw_hash_array(w, r->seq, r->n_blocks);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* ---- specials and encode mode -------------------------------------------- */

int
kvp_mm_load_specials(struct kvp_tokenizer *t, const char *path,
                     struct kvp_diag *d)
{
	struct json_object *root, *dec;
	int rc = 0;

	root = json_object_from_file(path);
	if (root == NULL)
		return kvp_diag_set(d, 0, "%s: %s", path,
		                    json_util_get_last_err() != NULL
		                        ? json_util_get_last_err()
		                        : "cannot read JSON");
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return kvp_diag_set(d, 0, "%s: expected a JSON object", path);
	}
	kvp_tok_clear_specials(t);
	if (kvp_json_get(root, "added_tokens_decoder", &dec) &&
	    json_object_is_type(dec, json_type_object)) {
		json_object_object_foreach(dec, key, val)
		{
			struct json_object *c;
			uint64_t id;
			const char *err;

			if (kvp_parse_u64(key, UINT32_MAX, &id, &err) != 0 ||
			    !json_object_is_type(val, json_type_object) ||
			    !kvp_json_get(val, "content", &c) ||
			    !json_object_is_type(c, json_type_string)) {
				rc = kvp_diag_set(d, 0,
				                  "%s: added_tokens_decoder "
				                  "entry \"%s\": expected "
				                  "{\"content\": NAME}",
				                  path, key);
				break;
			}
			if (kvp_tok_add_special(
			        t, json_object_get_string(c),
			        (size_t)json_object_get_string_len(c),
			        (uint32_t)id, d) != 0) {
				rc = -1;
				break;
			}
		}
	} else {
		json_object_object_foreach(root, key, val)
		{
			uint32_t id = 0;

			if (u32_of(val, key, &id, d) != 0 ||
			    kvp_tok_add_special(t, key, strlen(key), id, d) !=
			        0) {
				rc = -1;
				break;
			}
		}
	}
	json_object_put(root);
	return rc;
}

int
kvp_mm_encode_record(struct kvp_tokenizer *t, const struct json_object *rec,
                     struct kvp_tok_ids *ids, struct kvp_jw *w,
                     struct kvp_diag *d)
{
	struct json_object *v, *id = NULL;
	int allow = 0;

	if (!kvp_json_get(rec, "text", &v) ||
	    !json_object_is_type(v, json_type_string))
		return kvp_diag_set(d, 0, "\"text\": expected a string");
	if (kvp_json_get(rec, "allow_special", &id)) {
		if (!json_object_is_type(id, json_type_boolean))
			return kvp_diag_set(
			    d, 0, "allow_special: expected a boolean");
		allow = json_object_get_boolean(id);
	}
	ids->n = 0;
	if (kvp_tok_encode(t, json_object_get_string(v),
	                   (size_t)json_object_get_string_len(v), allow, ids,
	                   d) != 0)
		return -1;
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "tokens");
	kvp_jw_key(w, "id");
	if (kvp_json_get(rec, "id", &id))
		kvp_jw_json(w, id);
	else
		kvp_jw_null(w);
	kvp_jw_kv_u64(w, "n_tokens", ids->n);
	kvp_jw_key(w, "token_ids");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < ids->n; i++)
		kvp_jw_u64(w, ids->v[i]);
	kvp_jw_arr_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
	return 0;
}
