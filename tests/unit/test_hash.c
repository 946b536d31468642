/* SPDX-License-Identifier: MIT */
/* test_hash.c — lib/hash against the worked vectors of
 * docs/spec/route-score.md §1.6 and docs/spec/kv-events.md §6.5 (computed
 * there independently with xxhash 0.8.1); values are copied from the specs. */
#include "common/blockhash.h"
#include "unit.h"

static void
seq_tokens(uint32_t *t, uint32_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t[i] = from + (uint32_t)i;
}

int
main(void)
{
	uint32_t t[32];
	uint64_t loc[8], seq[8];

	CHECK_U64(kvp_hash_bytes("test data", 9, 1337), 13226331709069118873u);
	seq_tokens(t, 0, 12);
	CHECK(kvp_hash_tokens(t, 12, 4, 0, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      seq) == 3);
	CHECK_U64(loc[0], 9143094415614847814u);
	CHECK_U64(loc[1], 12124091508212882195u);
	CHECK_U64(loc[2], 1088361764653601668u);
	CHECK_U64(seq[0], loc[0]);
	CHECK_U64(seq[1], 9510318385840434533u);
	CHECK_U64(seq[2], 16998148715716822651u);
	/* partial trailing block dropped */
	CHECK(kvp_hash_tokens(t, 11, 4, 0, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      seq) == 2);
	CHECK(kvp_hash_block_count(3, 4, 0) == 0);
	CHECK(kvp_hash_block_count(12, 0, 0) == 0);

	seq_tokens(t, 0, 32);
	CHECK(kvp_hash_tokens(t, 32, 16, 0, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      seq) == 2);
	CHECK_U64(loc[0], 15310707395893867146u);
	CHECK_U64(loc[1], 15292316782987903195u);
	CHECK_U64(seq[1], 13769157705258532664u);

	seq_tokens(t, 1, 4);
	CHECK_U64(kvp_hash_block(t, 4, KVP_HASH_SEED, NULL, 0),
	          14643705804678351452u);

	/* seeds */
	CHECK_U64(kvp_hash_bytes("adapter-a", 9, 0), 8842669519798866845u);
	CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, "adapter-a", NULL),
	          8842669519798868182u);
	CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, NULL, "tenant-a"),
	          1948188790972764086u);
	CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, "adapter-a", "tenant-a"),
	          10790858310771630931u);
	CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, "", ""), 1337);
	seq_tokens(t, 0, 4);
	CHECK_U64(
	    kvp_hash_block(
	        t, 4, kvp_hash_seed(KVP_HASH_SEED, "adapter-a", NULL), NULL, 0),
	    6665157333201000639u);
	CHECK_U64(kvp_hash_block(t, 4,
	                         kvp_hash_seed(KVP_HASH_SEED, NULL, "tenant-a"),
	                         NULL, 0),
	          17009624042690211646u);
	CHECK_U64(kvp_hash_block(
	              t, 4,
	              kvp_hash_seed(KVP_HASH_SEED, "adapter-a", "tenant-a"),
	              NULL, 0),
	          8269515957840517240u);
	seq_tokens(t, 1, 4);
	CHECK_U64(
	    kvp_hash_block(
	        t, 4, kvp_hash_seed(KVP_HASH_SEED, "adapter-a", NULL), NULL, 0),
	    11381080598872079209u);
	CHECK_U64(kvp_hash_block(t, 4,
	                         kvp_hash_seed(KVP_HASH_SEED, NULL, "tenant-a"),
	                         NULL, 0),
	          5738685477468498325u);
	CHECK_U64(kvp_hash_block(
	              t, 4,
	              kvp_hash_seed(KVP_HASH_SEED, "adapter-a", "tenant-a"),
	              NULL, 0),
	          9967753091837871098u);

	/* chain from local hashes [11, 22, 33] */
	CHECK_U64(kvp_hash_chain(11, 22, KVP_HASH_SEED), 750553365844651409u);
	CHECK_U64(kvp_hash_chain(750553365844651409u, 33, KVP_HASH_SEED),
	          3257565445809651757u);

	/* docs/spec/kv-events.md §6.5: [10..13] bs 2, EAGLE [10..14] bs 2 */
	seq_tokens(t, 10, 5);
	CHECK(kvp_hash_tokens(t, 4, 2, 0, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      NULL) == 2);
	CHECK_U64(loc[0], 7369860969341005925u);
	CHECK_U64(loc[1], 2046086924859723728u);
	CHECK(kvp_hash_tokens(t, 5, 2, 1, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      NULL) == 2);
	CHECK_U64(loc[0], 5959138341449004422u);
	CHECK_U64(loc[1], 13917772031453556700u);
	CHECK(kvp_hash_block_count(4, 2, 1) == 1);

	/* mm hash 99 on [10,20,30,40] */
	{
		uint32_t m[4] = {10, 20, 30, 40};
		uint64_t mm = 99;

		CHECK_U64(kvp_hash_block(m, 4, KVP_HASH_SEED, &mm, 1),
		          10803746751693390359u);
	}
	/* pad value and the frontend hash of [10,20,p,p] */
	CHECK(kvp_pad_value(9533257059414191570u) == 49115154);
	{
		uint32_t p = kvp_pad_value(9533257059414191570u);
		uint32_t m[4] = {10, 20, p, p};

		CHECK_U64(kvp_hash_block(m, 4, KVP_HASH_SEED, NULL, 0),
		          71881790567603244u);
	}
	CHECK_U64(kvp_hash_mm_identifier("opaque-renderer-image-0", 23),
	          14437604544409538977u);
	{
		const char *hex =
		    "0123456789abcdef00112233445566778899aabbccddeeff"
		    "fedcba9876543210";
		CHECK(strlen(hex) == 64);
		CHECK_U64(kvp_hash_mm_identifier(hex, 64), 81985529216486895u);
	}
	/* mm hashes are hashed sorted ascending whatever their order */
	{
		uint32_t m[2] = {1, 2};
		uint64_t a[3] = {5, 3, 5}, b[3] = {3, 5, 5};

		CHECK_U64(kvp_hash_block(m, 2, 7, a, 3),
		          kvp_hash_block(m, 2, 7, b, 3));
	}

	/* docs/spec/route-score.md §1.1: Dynamo's block-count tests (bs
	 * 11/32/64: 1 hash for bs and bs + 1 tokens, 2 for 2 * bs + 1) and the
	 * EAGLE test (6 tokens, bs 2: 3 normal hashes, 2 EAGLE hashes). */
	{
		const uint32_t sizes[] = {11, 32, 64};

		for (size_t i = 0; i < 3; i++) {
			uint32_t bs = sizes[i];

			CHECK(kvp_hash_block_count(bs, bs, 0) == 1);
			CHECK(kvp_hash_block_count(bs + 1, bs, 0) == 1);
			CHECK(kvp_hash_block_count(2 * bs + 1, bs, 0) == 2);
		}
		CHECK(kvp_hash_block_count(6, 2, 0) == 3);
		CHECK(kvp_hash_block_count(6, 2, 1) == 2);
		CHECK(kvp_hash_block_count(0, 2, 1) == 0);
		CHECK(kvp_hash_block_count(1, 2, 1) == 0);
	}
	/* §1.4: a namespace and a LoRA with the same string must differ. */
	CHECK(kvp_hash_seed(KVP_HASH_SEED, "same", NULL) !=
	      kvp_hash_seed(KVP_HASH_SEED, NULL, "same"));

	/* docs/spec/mm-expand.md §7.5 tests 14-20 (the hashing primitives
	 * and the first end-to-end case; hex there, written as hex here). */
	CHECK(kvp_pad_value(0x1234) == 1004660);
	CHECK(kvp_pad_value(0x5678) == 1022136);
	CHECK(kvp_pad_value(42) == 1000042);
	CHECK(kvp_pad_value(0) == 1000000);
	CHECK(kvp_pad_value(UINT64_MAX) == 1074741823);
	CHECK(kvp_pad_value(0x40000005) == 1000005);
	CHECK_U64(kvp_hash_bytes("", 0, 0), 0x2d06800538d394c2u);
	CHECK_U64(kvp_hash_mm_identifier("https://example.com/a.png", 25),
	          0x432b06447698eaf0u);
	CHECK(kvp_pad_value(0x432b06447698eaf0u) == 916991280);
	CHECK_U64(kvp_hash_mm_identifier("https://example.com/b.png", 25),
	          0xa7be6b20e67072f4u);
	CHECK(kvp_pad_value(0xa7be6b20e67072f4u) == 645903668);
	{
		uint32_t a[4] = {1, 2, 3, 4}, z[4] = {0, 0, 0, 0};
		uint64_t mm[2] = {5, 3};

		CHECK_U64(kvp_hash_block(a, 4, KVP_HASH_SEED, NULL, 0),
		          0xcb38e4d7fb2dca5cu);
		CHECK_U64(kvp_hash_block(z, 4, KVP_HASH_SEED, NULL, 0),
		          0xb841d0df72b4a1b8u);
		CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, "my-lora", NULL),
		          12827409268353072861u);
		CHECK_U64(kvp_hash_block(
		              a, 4,
		              kvp_hash_seed(KVP_HASH_SEED, "my-lora", NULL),
		              NULL, 0),
		          0xd97c824a0d4bdab1u);
		CHECK_U64(kvp_hash_seed(KVP_HASH_SEED, NULL, "tenant"),
		          5412409220464433485u);
		CHECK_U64(kvp_hash_block(a, 4, KVP_HASH_SEED, mm, 2),
		          0xa00558c71cd26273u);
	}
	seq_tokens(t, 1, 9);
	CHECK(kvp_hash_tokens(t, 9, 4, 1, KVP_HASH_SEED, KVP_HASH_SEED, loc,
	                      NULL) == 2);
	CHECK_U64(loc[0], 0x1a92ffa9004c0851u);
	CHECK_U64(loc[1], 0x1ac55a72d61806e3u);
	/* item 20: [10,11,P,P,P,P,12] plus one 0, P = 916991280, bs 4 */
	{
		uint32_t p = 916991280, r[8] = {10, 11, p, p, p, p, 12, 0};

		CHECK(kvp_hash_tokens(r, 8, 4, 0, KVP_HASH_SEED, 0, loc, seq) ==
		      2);
		CHECK_U64(loc[0], 0x72bff3acd8fb641au);
		CHECK_U64(loc[1], 0x5abcea3bd7ce27dau);
		CHECK_U64(seq[0], 0x72bff3acd8fb641au);
		CHECK_U64(seq[1], 0xb462923ce57bda5eu);
		CHECK_U64(kvp_hash_chain(0x72bff3acd8fb641au,
		                         0x5abcea3bd7ce27dau, KVP_HASH_SEED),
		          0xba11fc9dbbe80d24u);
	}
	/* The incremental hasher gives the same as kvp_hash_tokens(). */
	{
		struct kvp_hasher h;
		uint64_t l, s;

		seq_tokens(t, 0, 12);
		kvp_hasher_init(&h, KVP_HASH_SEED, KVP_HASH_SEED);
		for (size_t i = 0; i < 3; i++)
			kvp_hasher_block(&h, t + 4 * i, 4, NULL, 0, &l, &s);
		CHECK_U64(l, 1088361764653601668u);
		CHECK_U64(s, 16998148715716822651u);
		CHECK(h.n == 3);
	}
	return UNIT_DONE();
}
