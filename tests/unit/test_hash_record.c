/* SPDX-License-Identifier: MIT */
/* test_hash_record.c — record → tokens → hashes (lib/hash_record), on both
 * the fast text path and the json-c path. Expected hashes are copied from
 * docs/spec/kv-events.md §6.5 and docs/spec/route-score.md §1.6. */
#include <string.h>

#include "common/blockhash.h"
#include "hash/hash_record.h"
#include "unit.h"

static struct kvp_hashrec r;
static struct kvp_diag d;

static int
line(const struct kvp_hashrec_opts *o, const char *s)
{
	memset(&d, 0, sizeof d);
	return kvp_hashrec_line(&r, o, s, strlen(s), &d);
}

int
main(void)
{
	struct kvp_hashrec_opts o;

	kvp_hashrec_init(&r);
	kvp_hashrec_opts_init(&o);
	CHECK(o.seed == 1337 && o.chain_seed == 1337);

	/* §6.5: [10..13] bs 2 from the record's block_size (fast path) */
	CHECK(line(&o, "{\"token_ids\":[10,11,12,13],\"block_size\":2}") == 0);
	CHECK(r.n_blocks == 2 && r.block_size == 2 && !r.eagle);
	CHECK_U64(r.local[0], 7369860969341005925u);
	CHECK_U64(r.local[1], 2046086924859723728u);
	/* the same with spaces (json-c path) */
	CHECK(line(&o, "{ \"token_ids\": [ 10, 11, 12, 13 ], \"block_size\": "
	               "2 }") == 0);
	CHECK_U64(r.local[1], 2046086924859723728u);

	/* §2.5 + §6.5: bigram pairs flatten to [10..14] and imply EAGLE */
	CHECK(line(&o, "{\"token_ids\":[[10,11],[11,12],[12,13],[13,14]],"
	               "\"block_size\":2}") == 0);
	CHECK(r.n_tokens == 5 && r.tokens[0] == 10 && r.tokens[4] == 14);
	CHECK(r.eagle && r.n_blocks == 2);
	CHECK_U64(r.local[0], 5959138341449004422u);
	CHECK_U64(r.local[1], 13917772031453556700u);
	/* kv-decode's flattened form with token_layout "bigram" */
	CHECK(line(&o, "{\"token_ids\":[10,11,12,13,14],\"block_size\":2,"
	               "\"token_layout\":\"bigram\"}") == 0);
	CHECK(r.eagle);
	CHECK_U64(r.local[1], 13917772031453556700u);
	o.eagle = KVP_EAGLE_NEVER;
	CHECK(line(&o, "{\"token_ids\":[10,11,12,13,14],\"block_size\":2,"
	               "\"token_layout\":\"bigram\"}") == 0);
	CHECK(!r.eagle && r.n_blocks == 2);
	CHECK_U64(r.local[0], 7369860969341005925u);
	o.eagle = KVP_EAGLE_AUTO;

	/* §6.5 salts: [1,2,3,4] bs 4 with lora, namespace (cache_salt) */
	o.block_size = 4;
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"lora_name\":\"adapter-a\"}") ==
	      0);
	CHECK_U64(r.local[0], 11381080598872079209u);
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"cache_salt\":\"tenant-a\"}") ==
	      0);
	CHECK_U64(r.local[0], 5738685477468498325u);
	CHECK(line(&o,
	           "{\"tokens\":[1,2,3,4],\"lora_name\":\"adapter-a\","
	           "\"cache_namespace\":\"tenant-a\",\"cache_salt\":\"x\"}") ==
	      0);
	CHECK_U64(r.local[0], 9967753091837871098u);
	/* record "" overrides the option; null leaves it */
	o.lora = "adapter-a";
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"lora_name\":\"\"}") == 0);
	CHECK_U64(r.local[0], 14643705804678351452u);
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"lora_name\":null}") == 0);
	CHECK_U64(r.local[0], 11381080598872079209u);
	o.record_overrides = 0;
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"lora_name\":\"\","
	               "\"block_size\":2}") == 0);
	CHECK(r.block_size == 4);
	CHECK_U64(r.local[0], 11381080598872079209u);
	o.record_overrides = 1;
	o.lora = NULL;

	/* §1.6 chain, and a partial trailing block dropped */
	CHECK(line(&o, "{\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11,12]}") == 0);
	CHECK(r.n_blocks == 3);
	CHECK_U64(r.seq[2], 16998148715716822651u);

	/* kvpipe records without tokens pass; others are errors */
	CHECK(line(&o, "{\"rec\":\"event\",\"type\":\"BlockRemoved\"}") == 1);
	CHECK(line(&o, "{\"rec\":\"gap\"}") == 1);
	CHECK(line(&o, "{\"rec\":\"event\",\"type\":\"BlockStored\"}") == -1);
	CHECK(strcmp(d.msg, "missing key \"tokens\" or \"token_ids\"") == 0);
	CHECK(line(&o, "{\"x\":1}") == -1);
	CHECK(line(&o, "{\"tokens\":[1,-2]}") == -1);
	CHECK(strstr(d.msg, "tokens[1]") != NULL);
	CHECK(line(&o, "{\"tokens\":[4294967295,4294967296]}") == -1);
	CHECK(strstr(d.msg, "tokens[1]: token id 4294967296") != NULL);
	CHECK(line(&o, "{\"tokens\":[1.5]}") == -1);
	CHECK(line(&o, "{\"tokens\":[\"1\"]}") == -1);
	CHECK(line(&o, "{\"tokens\":[[1]]}") == -1);
	CHECK(line(&o, "{\"tokens\":[1],\"block_size\":0}") == -1);
	CHECK(strcmp(d.msg, "block_size: must not be 0") == 0);
	CHECK(line(&o, "{\"tokens\":[1],\"lora_name\":5}") == -1);
	CHECK(line(&o, "{\"tokens\":[1,2,3,4] x") == -1);
	CHECK(d.col > 0);
	o.block_size = 0;
	CHECK(line(&o, "{\"tokens\":[1]}") == -1);
	CHECK(strstr(d.msg, "no block size") != NULL);
	o.tokens_key = "ids";
	CHECK(line(&o, "{\"tokens\":[1],\"block_size\":1}") == -1);
	CHECK(strcmp(d.msg, "missing key \"ids\"") == 0);
	CHECK(line(&o, "{\"ids\":[1],\"block_size\":1}") == 0);
	CHECK(r.n_blocks == 1);

	/* block_mm_infos: §6.5's [10,20,30,40] with mm_hash 99 */
	o.tokens_key = NULL;
	o.block_size = 4;
	CHECK(line(&o, "{\"tokens\":[10,20,30,40],\"block_mm_infos\":[{"
	               "\"mm_objects\":[{\"mm_hash\":99}]}]}") == 0);
	CHECK_U64(r.local[0], 10803746751693390359u);
	CHECK(line(&o, "{\"tokens\":[10,20,30,40],\"block_mm_infos\":[{"
	               "\"mm_objects\":[]}]}") == 0);
	CHECK_U64(r.local[0], kvp_hash_block((const uint32_t[]){10, 20, 30, 40},
	                                     4, KVP_HASH_SEED, NULL, 0));
	CHECK(line(&o, "{\"tokens\":[1],\"block_mm_infos\":[7]}") == 0);
	CHECK(r.n_blocks == 0);
	CHECK(line(&o, "{\"tokens\":[1,2,3,4],\"block_mm_infos\":[7]}") == -1);

	kvp_hashrec_fini(&r);
	return UNIT_DONE();
}
