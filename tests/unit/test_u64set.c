/* SPDX-License-Identifier: MIT */
/* test_u64set.c — the open-addressing u64 set/map against a naive model
 * (a byte per key over a small key range, so probe runs collide often). */
#include <stdint.h>
#include <stdlib.h>

#include "common/u64set.h"
#include "unit.h"

#define RANGE 4096

static uint64_t rng = 88172645463325252ULL;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Keys are spread over the whole u64 range but drawn from RANGE values. */
static uint64_t
key_of(unsigned i)
{
	return (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ (i & 1 ? UINT64_MAX : 0);
}

static void
test_edge_keys(void)
{
	struct kvp_u64set s;
	uint64_t v = 0;

	kvp_u64set_init(&s, 1);
	CHECK(kvp_u64set_count(&s) == 0);
	CHECK(kvp_u64set_get(&s, 0, NULL) == 0);
	CHECK(kvp_u64set_del(&s, 0) == 0);
	CHECK(kvp_u64set_put(&s, 0, 7) == 1);
	CHECK(kvp_u64set_put(&s, UINT64_MAX, 9) == 1);
	CHECK(kvp_u64set_put(&s, 0, 8) == 0); /* replaces the value */
	CHECK(kvp_u64set_get(&s, 0, &v) == 1);
	CHECK_U64(v, 8);
	CHECK(kvp_u64set_get(&s, UINT64_MAX, &v) == 1);
	CHECK_U64(v, 9);
	CHECK_U64(kvp_u64set_count(&s), 2);
	CHECK(kvp_u64set_del(&s, 0) == 1);
	CHECK(kvp_u64set_get(&s, 0, NULL) == 0);
	CHECK(kvp_u64set_has(&s, UINT64_MAX) == 1);
	kvp_u64set_clear(&s);
	CHECK_U64(kvp_u64set_bytes(&s), 0);
	CHECK(kvp_u64set_has(&s, UINT64_MAX) == 0);
	kvp_u64set_fini(&s);
}

static void
test_random_against_model(void)
{
	static unsigned char model[RANGE];
	static uint64_t mval[RANGE];
	struct kvp_u64set s;
	size_t live = 0, bad = 0, peak = 0;

	kvp_u64set_init(&s, 1);
	for (int op = 0; op < 400000; op++) {
		unsigned k = (unsigned)(next() % RANGE);
		uint64_t v = next(), got = 0;
		int r;

		switch (next() % 3) {
		case 0:
			r = kvp_u64set_put(&s, key_of(k), v);
			if (r != (model[k] ? 0 : 1))
				bad++;
			live += !model[k];
			model[k] = 1;
			mval[k] = v;
			break;
		case 1:
			r = kvp_u64set_del(&s, key_of(k));
			if (r != model[k])
				bad++;
			live -= model[k];
			model[k] = 0;
			break;
		default:
			r = kvp_u64set_get(&s, key_of(k), &got);
			if (r != model[k] || (r && got != mval[k]))
				bad++;
		}
		if (kvp_u64set_count(&s) != live)
			bad++;
		if (kvp_u64set_bytes(&s) > peak)
			peak = kvp_u64set_bytes(&s);
	}
	CHECK_U64(bad, 0);
	/* Every member is found; iteration visits each live key once. */
	bad = 0;
	for (unsigned k = 0; k < RANGE; k++)
		if (kvp_u64set_has(&s, key_of(k)) != model[k])
			bad++;
	CHECK_U64(bad, 0);
	{
		size_t pos = 0, seen = 0;
		uint64_t key, val;

		while (kvp_u64set_next(&s, &pos, &key, &val))
			seen++;
		CHECK_U64(seen, live);
	}
	/* Memory follows the live keys: at most RANGE keys at 3/4 load. */
	CHECK(peak <= (size_t)8192 * (8 + 8 + 1));
	kvp_u64set_clear(&s);
	CHECK_U64(kvp_u64set_count(&s), 0);
}

static void
test_reset_keeps_storage(void)
{
	struct kvp_u64set s;
	size_t bytes;

	kvp_u64set_init(&s, 0);
	for (uint64_t i = 0; i < 100; i++)
		CHECK(kvp_u64set_add(&s, i) == 1);
	bytes = kvp_u64set_bytes(&s);
	kvp_u64set_reset(&s);
	CHECK_U64(kvp_u64set_count(&s), 0);
	CHECK_U64(kvp_u64set_bytes(&s), bytes);
	CHECK(kvp_u64set_has(&s, 5) == 0);
	CHECK(kvp_u64set_add(&s, 5) == 1);
	kvp_u64set_clear(&s);
}

static void
test_shrinks_after_deletes(void)
{
	struct kvp_u64set s;
	size_t peak, bad = 0;

	kvp_u64set_init(&s, 0);
	for (uint64_t i = 0; i < 100000; i++)
		bad += kvp_u64set_add(&s, i * 7919) != 1;
	CHECK_U64(bad, 0);
	peak = kvp_u64set_bytes(&s);
	for (uint64_t i = 0; i < 99990; i++)
		kvp_u64set_del(&s, i * 7919);
	CHECK_U64(kvp_u64set_count(&s), 10);
	CHECK(kvp_u64set_bytes(&s) * 100 < peak);
	for (uint64_t i = 99990; i < 100000; i++)
		CHECK(kvp_u64set_has(&s, i * 7919));
	kvp_u64set_clear(&s);
}

int
main(void)
{
	test_edge_keys();
	test_random_against_model();
	test_reset_keeps_storage();
	test_shrinks_after_deletes();
	return UNIT_DONE();
}
