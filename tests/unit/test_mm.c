/* SPDX-License-Identifier: MIT */
/* test_mm.c — lib/mm counters, families and hashing primitives against
 * spec-mm-expand.md §7.5 tests 1-19 and the §3.4 table (values copied from
 * the spec, computed there with an independent Python reference). */
#include <json.h>

#include "common/blockhash.h"
#include "mm/family.h"
#include "mm/mm_io.h"
#include "unit.h"

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
#define Q3                                                                     \
	"{\"patch_size\":16,\"merge_size\":2,\"min_pixels\":3136,"             \
	"\"max_pixels\":12845056}"
#define Q3SIZE                                                                 \
	"{\"patch_size\":16,\"merge_size\":2,\"size\":"                        \
	"{\"shortest_edge\":65536,\"longest_edge\":16777216}}"

int
main(void)
{
	enum kvp_mm_family K25 = KVP_MM_KIMI_K25, K3 = KVP_MM_KIMI_K3,
	                   Q2 = KVP_MM_QWEN2_VL, Q3F = KVP_MM_QWEN3_VL;
	uint32_t t[16];
	uint64_t loc[4], seq[4], h;
	struct kvp_diag d;

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

	/* families (§7.4) */
	CHECK(kvp_mm_family_match("moonshotai/Kimi-K3") == K3);
	CHECK(kvp_mm_family_match("kimi_k3") == K3);
	CHECK(kvp_mm_family_match("moonshotai/Kimi-K2.5") == K25);
	CHECK(kvp_mm_family_match("kimi_k25") == K25);
	CHECK(kvp_mm_family_match("Qwen/Qwen2.5-VL-7B-Instruct") == Q2);
	CHECK(kvp_mm_family_match("qwen2_vl") == Q2);
	CHECK(kvp_mm_family_match("Qwen/Qwen3-VL-8B") == Q3F);
	CHECK(kvp_mm_family_match("qwen3_5") == Q3F);
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

	/* mm_hash forms (§7.2) */
	{
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
	return UNIT_DONE();
}
