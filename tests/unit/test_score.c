/* SPDX-License-Identifier: MIT */
/*
 * test_score.c — cost function and sampling (docs/spec/route-score.md §3.1,
 * §3.2, §6.5 tests 1, 7, 17, 22, 23) and the hash vectors the router
 * relies on (§1.6).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/blockhash.h"
#include "route/score.h"
#include "unit.h"

static int
near(double a, double b)
{
	return fabs(a - b) < 5e-7;
}

int
main(void)
{
	/* §6.5 1 */
	CHECK_U64(kvp_hash_bytes("test data", 9, 1337),
	          13226331709069118873ULL);
	/* §6.5 2 */
	{
		uint32_t t[12];
		uint64_t l[3], s[3];

		for (int i = 0; i < 12; i++)
			t[i] = (uint32_t)i;
		CHECK_U64(kvp_hash_tokens(t, 12, 4, 0, KVP_HASH_SEED,
		                          KVP_HASH_SEED, l, s),
		          3);
		CHECK_U64(l[0], 9143094415614847814ULL);
		CHECK_U64(l[1], 12124091508212882195ULL);
		CHECK_U64(l[2], 1088361764653601668ULL);
		CHECK_U64(s[0], 9143094415614847814ULL);
		CHECK_U64(s[1], 9510318385840434533ULL);
		CHECK_U64(s[2], 16998148715716822651ULL);
	}
	/* §6.5 7 */
	CHECK_U64(kvp_hash_chain(11, 22, KVP_HASH_SEED), 750553365844651409ULL);
	CHECK_U64(kvp_hash_chain(750553365844651409ULL, 33, KVP_HASH_SEED),
	          3257565445809651757ULL);

	/* §6.5 17 (doc example): (prefill, decode) (8,10) (5,5) (2,9), W 1:
	 * ISL 40, bs 4 → raw 10; overlaps 2/5/8 give prefill 8/5/2. */
	{
		double pb;

		CHECK(kvp_score_logit(1, 2, 0, 40, 4, 0, 10, &pb) == 18 &&
		      pb == 8);
		CHECK(kvp_score_logit(1, 5, 0, 40, 4, 5, 0, &pb) == 10 &&
		      pb == 5);
		CHECK(kvp_score_logit(1, 8, 0, 40, 4, 9, 0, &pb) == 11 &&
		      pb == 2);
		/* §6.5 18/19 */
		CHECK(kvp_score_logit(1, 3, 0, 100, 16, 0, 6, NULL) == 9.25);
		CHECK(kvp_score_logit(1, 0, 0, 100, 16, 0, 6, NULL) == 12.25);
		CHECK(kvp_score_logit(1, 3, 0, 100, 16, 10, 6, NULL) == 19.25);
		CHECK(kvp_score_logit(4, 3, 0, 100, 16, 10, 6, NULL) == 29);
		CHECK(kvp_score_logit(4, 0, 0, 100, 16, 0, 6, NULL) == 31);
		/* §6.5 4, 31: 3 tokens → 0.75; clamp at 0 */
		CHECK(kvp_score_logit(1, 0, 0, 3, 4, 0, 0, NULL) == 0.75);
		CHECK(kvp_score_logit(1, 3, 0, 5, 4, 0, 3, &pb) == 3 &&
		      pb == 0);
	}
	/* §3.2 / §6.5 22–23 */
	{
		double lg[3] = {0, 3, 9}, p[3], u[4] = {2, 2, 2, 2}, q[4];

		kvp_score_softmax(lg, 3, 1.0, p);
		CHECK(near(p[0], 0.479752) && near(p[1], 0.343757) &&
		      near(p[2], 0.176491));
		kvp_score_softmax(lg, 3, 0.5, p);
		CHECK(near(p[0], 0.606519) && near(p[1], 0.311397) &&
		      near(p[2], 0.082083));
		kvp_score_softmax(u, 4, 1.0, q);
		CHECK(q[0] == 0.25 && q[3] == 0.25);
		kvp_score_softmax(lg, 1, 3.0, p);
		CHECK(p[0] == 1);
	}
	/* SplitMix64 reference output (seed 0: first value). */
	{
		uint64_t st = 0;

		CHECK_U64(kvp_score_splitmix64(&st), 0xe220a8397b1dcdafULL);
	}
	return UNIT_DONE();
}
