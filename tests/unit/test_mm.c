/* SPDX-License-Identifier: MIT */
/* test_mm.c — lib/mm counters, families and hashing primitives against
 * docs/spec/mm-expand.md §7.5 tests 1-19 and the §3.4 table (values copied from
 * the spec, computed there with an independent Python reference); the
 * expansion core on a plain request (test 20) and the request reader. */
#include <json.h>
#include <stdlib.h>

#include "common/blockhash.h"
#include "mm/family.h"
#include "mm/mm.h"
#include "mm/mm_io.h"
#include "unit.h"

static const enum kvp_mm_family K25 = KVP_MM_KIMI_K25, K3 = KVP_MM_KIMI_K3,
                                Q2 = KVP_MM_QWEN2_VL, Q3F = KVP_MM_QWEN3_VL;

static uint64_t
cnt(enum kvp_mm_family f, uint32_t w, uint32_t h)
{
	struct kvp_mm_counter c;

	kvp_mm_counter_default(f, &c);
	return kvp_mm_count(&c, w, h);
}

static uint64_t
cnt_cfg(enum kvp_mm_family f, const char *cfg, uint32_t w, uint32_t h)
{
	struct kvp_mm_counter c;
	struct json_object *o = json_tokener_parse(cfg);
	struct kvp_diag d;
	int rc = kvp_mm_counter_from_config(f, o, &c, &d);

	json_object_put(o);
	return rc == 0 ? kvp_mm_count(&c, w, h) : UINT64_MAX;
}

#define Q25 "{\"min_pixels\":3136,\"max_pixels\":12845056}"
#define Q25CFG_KEY                                                             \
	"\"preprocessor_config\":{\"min_pixels\":3136,\"max_pixels\":"         \
	"12845056}"
#define Q3                                                                     \
	"{\"patch_size\":16,\"merge_size\":2,\"min_pixels\":3136,"             \
	"\"max_pixels\":12845056}"
#define Q3SIZE                                                                 \
	"{\"patch_size\":16,\"merge_size\":2,\"size\":"                        \
	"{\"shortest_edge\":65536,\"longest_edge\":16777216}}"

/* §7.5 tests 1-13 and the §3.4 rows */
static void
test_counters(void)
{
	/* 1-3 */
	CHECK_U64(cnt(K25, 600, 400), 330);
	CHECK_U64(cnt(K25, 1024, 768), 1036);
	CHECK_U64(cnt(K25, 4000, 3000), 4200);
	/* 4-6 */
	CHECK_U64(cnt(K3, 4000, 3000), 15444);
	CHECK_U64(cnt(K3, 3000, 4000), 15444);
	CHECK_U64(cnt(K3, 28, 28), 1);
	CHECK_U64(cnt(K3, 29, 29), 4);
	CHECK_U64(cnt(K3, 1, 1), 1);
	CHECK_U64(cnt(K3, 7168, 7168), 16384);
	CHECK_U64(cnt(K3, 8000, 8000), 16641);
	CHECK_U64(cnt(K3, 5000, 5000), 16641);
	/* 7 */
	CHECK_U64(cnt(K25, 1000, 1), 36);
	CHECK_U64(cnt(K3, 1, 1000), 36);
	CHECK_U64(cnt(K25, 100, 30000), 256);
	CHECK_U64(cnt(K25, 10000, 100), 768);
	/* §3.4 rows */
	CHECK_U64(cnt(K25, 4032, 3024), 4144);
	CHECK_U64(cnt(K3, 4032, 3024), 15552);
	CHECK_U64(cnt(K25, 1920, 1080), 2691);
	CHECK_U64(cnt(K25, 7168, 7168), 4096);
	CHECK_U64(cnt(K25, 8000, 8000), 4225);
	CHECK_U64(cnt(K25, 300, 200), 88);
	CHECK_U64(cnt(K25, 224, 448), 128);
	CHECK_U64(cnt(K25, 640, 480), 414);
	/* 8 */
	CHECK_U64(cnt_cfg(Q2, Q25, 1024, 768), 999);
	CHECK_U64(cnt_cfg(Q2, Q25, 28, 28), 4);
	CHECK_U64(cnt_cfg(Q2, Q25, 1, 1), 4);
	CHECK_U64(cnt_cfg(Q2, Q25, 4000, 3000), 15301);
	CHECK_U64(cnt_cfg(Q2, Q25, 10000, 100), 1428);
	CHECK_U64(cnt_cfg(Q2, Q25, 600, 400), 294);
	CHECK_U64(cnt_cfg(Q2, Q25, 8000, 8000), 16384);
	/* 9: no config -> smg defaults 200704/1003520 */
	CHECK_U64(cnt(Q2, 1400, 1400), 1225);
	CHECK_U64(cnt(Q2, 28, 28), 256);
	CHECK_U64(cnt(Q2, 300, 200), 280);
	CHECK_U64(cnt(Q2, 4000, 3000), 1230);
	CHECK_U64(cnt(Q2, 10000, 100), 1071);
	CHECK_U64(cnt_cfg(Q2, "{}", 1400, 1400), 1225);
	/* 10 */
	CHECK_U64(cnt(Q3F, 640, 480), 300);
	CHECK_U64(cnt(Q3F, 1024, 768), 768);
	CHECK_U64(cnt(Q3F, 4000, 3000), 11750);
	CHECK_U64(cnt(Q3F, 600, 400), 228);
	CHECK_U64(cnt(Q3F, 28, 28), 64);
	CHECK_U64(cnt_cfg(Q3F, Q3, 640, 480), 300);
	CHECK_U64(cnt_cfg(Q3F, Q3SIZE, 4032, 3024), 11844);
	/* 11-12 */
	CHECK_U64(cnt_cfg(Q2, Q25, 201, 1), 1);
	CHECK_U64(cnt_cfg(Q2, Q25, 1000, 1), 1);
	CHECK_U64(cnt(Q3F, 1, 1000), 1);
	CHECK_U64(cnt_cfg(Q2, Q25, 200, 1), 7);
	CHECK_U64(cnt_cfg(Q2, Q25, 100, 10), 4);
	/* 13 */
	CHECK_U64(cnt(KVP_MM_LLAVA, 1, 1), 576);
	CHECK_U64(cnt(KVP_MM_LLAVA, 4000, 3000), 576);
	CHECK_U64(
	    cnt_cfg(KVP_MM_LLAVA, "{\"size\":{\"shortest_edge\":224}}", 9, 9),
	    256);
}

/* Kimi media_proc_cfg flattening and bad values */
static void
test_kimi_config(void)
{
	/* Kimi media_proc_cfg flattening (§3.1): a K2.5-style config makes
	 * K3 count with 16384 (4000x3000 -> 4200, §3.4 K2.5 column) */
	CHECK_U64(cnt_cfg(K3,
	                  "{\"media_proc_cfg\":{\"in_patch_limit\":16384,"
	                  "\"patch_size\":14,\"merge_kernel_size\":2,"
	                  "\"patch_limit_on_one_side\":512}}",
	                  4000, 3000),
	          4200);
	CHECK_U64(cnt_cfg(K3,
	                  "{\"in_patch_limit\":65536,\"media_proc_cfg\":"
	                  "{\"in_patch_limit\":16384}}",
	                  4000, 3000),
	          15444);
	CHECK_U64(cnt_cfg(K3, "{\"in_patch_limit\":0}", 1, 1), UINT64_MAX);
	CHECK_U64(cnt_cfg(K3, "{\"patch_size\":\"x\"}", 1, 1), UINT64_MAX);
}

/* family rules (§7.4) */
static void
test_families(void)
{
	CHECK(kvp_mm_family_match("moonshotai/Kimi-K3") == K3);
	CHECK(kvp_mm_family_match("kimi_k3") == K3);
	CHECK(kvp_mm_family_match("moonshotai/Kimi-K2.5") == K25);
	CHECK(kvp_mm_family_match("kimi_k25") == K25);
	CHECK(kvp_mm_family_match("Qwen/Qwen2.5-VL-7B-Instruct") == Q2);
	CHECK(kvp_mm_family_match("qwen2_vl") == Q2);
	CHECK(kvp_mm_family_match("Qwen/Qwen3-VL-8B") == Q3F);
	CHECK(kvp_mm_family_match("qwen3_5") == KVP_MM_QWEN3_5);
	CHECK(kvp_mm_family_match("Qwen/Qwen3.6-27B") == KVP_MM_QWEN3_5);
	CHECK(kvp_mm_family_by_name("qwen3_5") == KVP_MM_QWEN3_5);
	CHECK(kvp_mm_family_placeholder(KVP_MM_QWEN3_5) == 248056);
	CHECK(kvp_mm_family_match("llava-hf/llava-1.5-7b-hf") == KVP_MM_LLAVA);
	CHECK(kvp_mm_family_match("llava") == KVP_MM_UNKNOWN);
	CHECK(kvp_mm_family_match("llava_next") == KVP_MM_UNKNOWN);
	CHECK(kvp_mm_family_match("meta-llama/Llama-4-Scout") ==
	      KVP_MM_UNKNOWN);
	CHECK(kvp_mm_family_match("google/gemma-3-27b") == KVP_MM_UNKNOWN);
	CHECK(kvp_mm_family_by_name("kimi_k3") == K3);
	CHECK(kvp_mm_family_placeholder(K3) == 163605);
	CHECK(kvp_mm_family_placeholder(Q3F) == 151655);
	CHECK(kvp_mm_family_placeholder(KVP_MM_LLAVA) == 32000);
	CHECK(kvp_mm_family_bos(KVP_MM_LLAVA) == 1);
	CHECK(kvp_mm_family_bos(K3) == -1);
}

/* tests 14-19 and 28: pad values, XXH3, block hashes */
static void
test_hashes(void)
{
	uint32_t t[16];
	uint64_t loc[4], seq[4], h;

	/* 14 */
	CHECK_U64(kvp_pad_value(0x1234), 1004660);
	CHECK_U64(kvp_pad_value(0x5678), 1022136);
	CHECK_U64(kvp_pad_value(42), 1000042);
	CHECK_U64(kvp_pad_value(0), 1000000);
	CHECK_U64(kvp_pad_value(UINT64_MAX), 1074741823);
	CHECK_U64(kvp_pad_value(0x40000005), 1000005);
	/* 15 */
	CHECK_U64(kvp_hash_bytes("", 0, 0), 0x2d06800538d394c2u);
	h = kvp_hash_bytes("https://example.com/a.png", 25, 0);
	CHECK_U64(h, 0x432b06447698eaf0u);
	CHECK_U64(kvp_pad_value(h), 916991280);
	h = kvp_hash_bytes("https://example.com/b.png", 25, 0);
	CHECK_U64(h, 0xa7be6b20e67072f4u);
	CHECK_U64(kvp_pad_value(h), 645903668);
	/* 16: canonical_content_hash layout of [D-dec] */
	{
		uint8_t b[8 * 4 + 1 + 6] = {
		    3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
		    0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5};
		CHECK_U64(kvp_hash_bytes(b, sizeof b, 0), 0x7a9bbcb11a898630u);
	}
	/* 17 */
	t[0] = 1, t[1] = 2, t[2] = 3, t[3] = 4;
	CHECK_U64(kvp_hash_block(t, 4, 1337, NULL, 0), 0xcb38e4d7fb2dca5cu);
	{
		uint32_t z[4] = {0, 0, 0, 0};
		CHECK_U64(kvp_hash_block(z, 4, 1337, NULL, 0),
		          0xb841d0df72b4a1b8u);
	}
	CHECK_U64(kvp_hash_seed(1337, "my-lora", NULL), 12827409268353072861u);
	CHECK_U64(
	    kvp_hash_block(t, 4, kvp_hash_seed(1337, "my-lora", ""), NULL, 0),
	    0xd97c824a0d4bdab1u);
	CHECK_U64(kvp_hash_seed(1337, NULL, "tenant"), 5412409220464433485u);
	/* 18 */
	{
		uint64_t mm[2] = {5, 3};
		CHECK_U64(kvp_hash_block(t, 4, 1337, mm, 2),
		          0xa00558c71cd26273u);
	}
	/* 19 */
	for (int i = 0; i < 9; i++)
		t[i] = (uint32_t)i + 1;
	CHECK(kvp_hash_tokens(t, 9, 4, 1, 1337, 0, loc, seq) == 2);
	CHECK_U64(loc[0], 0x1a92ffa9004c0851u);
	CHECK_U64(loc[1], 0x1ac55a72d61806e3u);
	/* 28: bits above 30 do not reach the pad value */
	CHECK(kvp_pad_value(0x40000005) == kvp_pad_value(0x5));
}

/* mm_hash forms (§7.2) */
static void
test_mm_hash(void)
{
	struct kvp_diag d;
	struct json_object *v;
	uint64_t x = 0;

	v = json_object_new_string("432b06447698eaf0");
	CHECK(kvp_mm_parse_hash(v, &x, &d) == 0);
	CHECK_U64(x, 0x432b06447698eaf0u);
	json_object_put(v);
	v = json_object_new_string("0x1234");
	CHECK(kvp_mm_parse_hash(v, &x, &d) == 0);
	CHECK_U64(x, 0x1234);
	json_object_put(v);
	v = json_object_new_string("1234567890123456"
	                           "00000000000000000000000000000000"
	                           "0000000000000000");
	CHECK(kvp_mm_parse_hash(v, &x, &d) == 0);
	CHECK_U64(x, 0x1234567890123456u);
	json_object_put(v);
	v = json_object_new_string("xyz");
	CHECK(kvp_mm_parse_hash(v, &x, &d) == -1);
	json_object_put(v);
	v = json_object_new_uint64(18446744073709551615u);
	CHECK(kvp_mm_parse_hash(v, &x, &d) == 0);
	CHECK_U64(x, UINT64_MAX);
	json_object_put(v);
}

/* the family of a request: explicit family, else model, else model_type */
static void
test_resolve(void)
{
	const char *named = NULL;

	CHECK(kvp_mm_family_resolve("kimi_k3", "Qwen/Qwen2.5-VL-7B", NULL,
	                            &named) == K3);
	CHECK_STR(named, "kimi_k3");
	CHECK(kvp_mm_family_resolve("Kimi-K2.5-x", NULL, NULL, &named) == K25);
	CHECK(kvp_mm_family_resolve("gemma", "Qwen/Qwen2.5-VL-7B", NULL,
	                            &named) == KVP_MM_UNKNOWN);
	CHECK_STR(named, "gemma");
	CHECK(kvp_mm_family_resolve(NULL, "Qwen/Qwen2.5-VL-7B", "kimi_k3",
	                            &named) == Q2);
	CHECK(kvp_mm_family_resolve(NULL, "foo", "qwen3_vl", &named) == Q3F);
	CHECK_STR(named, "foo");
	CHECK(kvp_mm_family_resolve(NULL, NULL, NULL, &named) ==
	      KVP_MM_UNKNOWN);
	CHECK_STR(named, "");
}

/* issue 29 §1's video examples; the last cases tell the rules apart
 * (expected values also from tests/fixtures/mm-expand/video_ref.py) */
static void
grid_is(enum kvp_mm_video_rule rule, uint64_t frames, uint32_t w, uint32_t h,
        uint64_t t, uint64_t gh, uint64_t gw)
{
	struct kvp_mm_video_counter c;
	uint64_t g[3] = {0, 0, 0};
	const char *why = NULL;

	kvp_mm_video_counter_default(&c);
	CHECK(kvp_mm_video_grid(&c, rule, frames, w, h, g, &why) == 0);
	CHECK_U64(g[0], t);
	CHECK_U64(g[1], gh);
	CHECK_U64(g[2], gw);
}

static void
test_video_grid(void)
{
	static const enum kvp_mm_video_rule both[] = {
	    KVP_MM_VIDEO_ROUND_HALF_EVEN, KVP_MM_VIDEO_LEGACY_CEIL};
	const enum kvp_mm_video_rule rhe = both[0], leg = both[1];
	struct kvp_mm_video_counter c;
	struct kvp_mm_video_ids ids;
	uint64_t g[3];
	const char *why;

	for (int i = 0; i < 2; i++) {
		grid_is(both[i], 4, 426, 240, 2, 16, 26);
		grid_is(both[i], 30, 1280, 720, 15, 42, 76);
		grid_is(both[i], 31, 1920, 1080, 16, 42, 74);
		grid_is(both[i], 32, 1920, 1080, 16, 40, 72);
		grid_is(both[i], 2, 32, 32, 1, 4, 4);
		grid_is(both[i], 10, 64, 48, 5, 4, 4);
	}
	grid_is(leg, 5, 3760, 1120, 3, 76, 256);
	grid_is(rhe, 5, 3760, 1120, 3, 70, 236);
	/* 5 frames: round-half-even budgets 4 (fits), legacy 6 (over) */
	grid_is(rhe, 5, 2304, 2240, 3, 140, 144);
	grid_is(leg, 5, 2304, 2240, 3, 138, 142);
	grid_is(leg, 1, 64, 64, 1, 4, 4);
	kvp_mm_video_counter_default(&c);
	CHECK(kvp_mm_video_grid(&c, rhe, 1, 64, 64, g, &why) == -1);
	CHECK(kvp_mm_video_grid(&c, leg, 0, 64, 64, g, &why) == -1);
	CHECK(kvp_mm_video_grid(&c, leg, 2, 31, 64, g, &why) == -1);
	CHECK(kvp_mm_video_grid(&c, leg, 2, 32 * 201, 32, g, &why) == -1);
	CHECK(kvp_mm_family_video(KVP_MM_QWEN3_VL, &ids) == 1);
	CHECK(ids.video == 151656 && ids.vision_start == 151652 &&
	      ids.vision_end == 151653);
	CHECK(kvp_mm_family_video(KVP_MM_QWEN3_5, &ids) == 1);
	CHECK(ids.video == 248057 && ids.vision_start == 248053 &&
	      ids.vision_end == 248054);
	CHECK(kvp_mm_family_video(KVP_MM_QWEN2_VL, &ids) == 0);
	CHECK(kvp_mm_family_video(KVP_MM_KIMI_K3, &ids) == 0);
}

static struct kvp_mm *
new_mm(void)
{
	struct kvp_mm_opts o = {
	    16,       0,    KVP_MM_ENCODED, 0,
	    1u << 20, NULL, NULL,           KVP_MM_VIDEO_ROUND_HALF_EVEN,
	    0};

	return kvp_mm_new(&o);
}

/* test 20 as a plain request: no JSON on the way in or out */
static void
test_core(void)
{
	static const uint32_t tokens[] = {10, 11, 151655, 12};
	static const uint32_t want[] = {
	    10, 11, 916991280, 916991280, 916991280, 916991280, 12, 0};
	struct kvp_mm_image_req img = {0};
	struct kvp_mm_req req = {0};
	struct kvp_mm *m = new_mm();
	const struct kvp_mm_result *r;
	struct kvp_diag d;

	img.url = "https://example.com/a.png";
	img.url_len = 25;
	img.has_dims = 1;
	img.w = img.h = 56;
	req.tokens = tokens;
	req.n_tokens = 4;
	req.has_block_size = 1;
	req.block_size = 4;
	req.family = Q2;
	kvp_mm_counter_default(Q2, &req.counter);
	req.counter.min_px = 3136;
	req.counter.max_px = 12845056;
	req.img = &img;
	req.n_img = 1;
	req.bad_dims_ids = SIZE_MAX;
	CHECK(m != NULL && kvp_mm_expand(m, &req, &d) == 0);
	r = kvp_mm_result(m);
	CHECK(r->exact && r->reason == NULL);
	CHECK(r->layout == KVP_MM_LAYOUT_REPEATED_PAD);
	CHECK_U64(r->img[0].count, 4);
	CHECK_U64(r->img[0].mm_hash, 0x432b06447698eaf0u);
	CHECK(r->n_tokens == 8 && memcmp(r->tokens, want, sizeof want) == 0);
	CHECK_U64(r->expanded_len, 7);
	CHECK(r->n_blocks == 2 && r->complete_blocks == 1);
	CHECK_U64(r->local[0], 0x72bff3acd8fb641au);
	CHECK_U64(r->local[1], 0x5abcea3bd7ce27dau);
	CHECK_U64(r->seq[1], 0xb462923ce57bda5eu);
	CHECK_U64(r->block_seed, 1337);

	/* fallbacks keep the original tokens, complete blocks only */
	req.family = KVP_MM_UNKNOWN;
	req.named = "gemma";
	CHECK(kvp_mm_expand(m, &req, &d) == 0);
	CHECK(!r->exact && strcmp(r->reason, "unsupported_model") == 0);
	CHECK_STR(r->detail, "no counter for family/model \"gemma\"");
	CHECK(r->n_tokens == 4 && r->n_blocks == 1);
	req.family = Q2;
	req.n_img = 0;
	CHECK(kvp_mm_expand(m, &req, &d) == 0);
	CHECK(!r->exact && strcmp(r->reason, "no_images") == 0);
	CHECK_STR(r->detail, "");
	kvp_mm_free(m);
}

/* a bad dims_token_ids is an error only where the K3 layout needs it */
static void
test_lazy_dims_ids(void)
{
	static const uint32_t tokens[] = {163605};
	struct kvp_mm_image_req img = {0};
	struct kvp_mm_req req = {0};
	struct kvp_mm *m = new_mm();
	struct kvp_diag d;

	img.url = "u";
	img.url_len = 1;
	img.has_dims = img.has_dims_ids = 1;
	img.w = img.h = 28;
	req.tokens = tokens;
	req.n_tokens = 1;
	req.family = K25;
	kvp_mm_counter_default(K25, &req.counter);
	req.img = &img;
	req.n_img = 1;
	req.bad_dims_ids = 0;
	kvp_diag_set(&req.bad_dims_diag, 0, "dims_token_ids[0]: bad");
	CHECK(m != NULL && kvp_mm_expand(m, &req, &d) == 0);
	CHECK(kvp_mm_result(m)->exact);
	req.family = K3;
	kvp_mm_counter_default(K3, &req.counter);
	CHECK(kvp_mm_expand(m, &req, &d) == -1);
	CHECK_STR(d.msg, "dims_token_ids[0]: bad");
	kvp_mm_free(m);
}

static int
read_req(const char *json, struct kvp_mm_reqbuf *b, struct kvp_mm_req *req,
         struct kvp_diag *d, struct json_object **rec)
{
	*rec = json_tokener_parse(json);
	return *rec != NULL ? kvp_mm_req_from_json(*rec, b, req, d) : -2;
}

/* the request reader: fields, resolved family and counter, errors */
static void
test_reader(void)
{
	struct kvp_mm_reqbuf b;
	struct kvp_mm_req req;
	struct json_object *rec;
	struct kvp_diag d;

	kvp_mm_reqbuf_init(&b);
	CHECK(read_req("{\"family\":\"qwen2_vl\"," Q25CFG_KEY
	               ",\"token_ids\":[10,11,151655,12],\"block_size\":4,"
	               "\"images\":[{\"url\":\"https://example.com/"
	               "a.png\",\"width\":56,\"height\":56}]}",
	               &b, &req, &d, &rec) == 0);
	CHECK(req.n_tokens == 4 && req.tokens[2] == 151655);
	CHECK(req.has_block_size && req.block_size == 4);
	CHECK(req.family == Q2 && req.counter.min_px == 3136);
	CHECK(req.n_img == 1 && req.img[0].url_len == 25);
	CHECK(req.img[0].has_dims && req.img[0].w == 56);
	CHECK(!req.has_bos && !req.has_policy && !req.kwargs_set);
	json_object_put(rec);
	/* dims ids are kept per image; a bad one is only remembered */
	CHECK(read_req("{\"token_ids\":[],\"images\":[{\"dims_token_ids\":"
	               "[1,2]},{\"dims_token_ids\":[3]},"
	               "{\"dims_token_ids\":[-1]}]}",
	               &b, &req, &d, &rec) == 0);
	CHECK(req.img[0].n_dims_ids == 2 && req.img[0].dims_ids[1] == 2);
	CHECK(req.img[1].n_dims_ids == 1 && req.img[1].dims_ids[0] == 3);
	CHECK(req.bad_dims_ids == 2);
	CHECK(strstr(req.bad_dims_diag.msg, "dims_token_ids[0]") != NULL);
	json_object_put(rec);
	CHECK(read_req("{\"token_ids\":[1],\"images\":[{\"width\":1}]}", &b,
	               &req, &d, &rec) == -1);
	CHECK_STR(d.msg, "images[0]: width and height go together");
	json_object_put(rec);
	CHECK(read_req("{\"images\":[]}", &b, &req, &d, &rec) == -1);
	CHECK_STR(d.msg, "missing key \"token_ids\" (or \"tokens\")");
	json_object_put(rec);
	kvp_mm_reqbuf_fini(&b);
}

int
main(void)
{
	test_counters();
	test_kimi_config();
	test_families();
	test_video_grid();
	test_resolve();
	test_hashes();
	test_mm_hash();
	test_core();
	test_lazy_dims_ids();
	test_reader();
	return UNIT_DONE();
}
