/* SPDX-License-Identifier: MIT */
/* test_hash.c — lib/hash against the worked vectors of
 * spec-route-score.md §1.6 and spec-kv-events.md §6.5 (computed there
 * independently with xxhash 0.8.1); values are copied from the specs. */
#include "hash.h"
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

	/* kv-events §6.5: [10..13] bs 2, EAGLE [10..14] bs 2 */
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
	return UNIT_DONE();
}
