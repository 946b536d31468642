/* SPDX-License-Identifier: MIT */
/*
 * test_index.c — the prefix index (lib/index.c) and its hash map
 * (lib/kmap.c). Expected values follow docs/spec/route-score.md §2 and §6.5
 * tests 8–15, 29; the kmap test checks against a direct array model.
 */
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "route/index.h"
#include "common/kmap.h"
#include "unit.h"

/* sparse: the sparse variant (load at most 3/5), the same contents. */
static void
test_kmap(int sparse)
{
	struct kvp_kmap m;
	static uint32_t model[4096];
	uint64_t x = 12345;

	int ok = 1;

	memset(model, 0, sizeof model);
	if (sparse)
		kvp_kmap_init_sparse(&m, NULL);
	else
		kvp_kmap_init(&m);
	/* Random put/del over a small key space, checked against an array. */
	for (int i = 0; i < 200000; i++) {
		uint32_t k, a, v;
		uint64_t b;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (uint32_t)(x >> 33) % 4096;
		a = k & 7;
		b = (uint64_t)(k >> 3) * 0x9e3779b97f4a7c15ULL;
		if ((x >> 20) & 1) {
			v = (uint32_t)(x >> 40) | 1;
			ok &= kvp_kmap_put(&m, a, b, v, NULL) == 0;
			model[k] = v;
		} else if ((x >> 21) & 1) { /* ref, then delete through it */
			uint32_t *r = kvp_kmap_ref(&m, a, b);

			ok &= r == NULL ? model[k] == 0 : *r == model[k];
			if (r != NULL)
				kvp_kmap_del_ref(&m, r);
			model[k] = 0;
		} else {
			ok &= kvp_kmap_del(&m, a, b) == model[k];
			model[k] = 0;
		}
	}
	CHECK(ok);
	{
		size_t live = 0;

		for (uint32_t k = 0; k < 4096; k++) {
			live += model[k] != 0;
			if (kvp_kmap_get(&m, k & 7,
			                 (uint64_t)(k >> 3) *
			                     0x9e3779b97f4a7c15ULL) != model[k])
				ok = 0;
		}
		CHECK(ok);
		/* kvp_kmap_get_many over each a's 512 keys (several batches)
		 * gives what the model holds, found or not */
		for (uint32_t a = 0; a < 8; a++) {
			static uint64_t keys[512];
			static uint32_t got[512];

			for (uint32_t j = 0; j < 512; j++)
				keys[j] = (uint64_t)j * 0x9e3779b97f4a7c15ULL;
			kvp_kmap_get_many(&m, a, keys, 512, got);
			for (uint32_t j = 0; j < 512; j++)
				if (got[j] != model[j << 3 | a])
					ok = 0;
		}
		CHECK(ok);
		CHECK_U64(m.n, live);
		/* the load bound: at most 4/5, or 3/5 when sparse */
		CHECK(m.n * 5 <= m.cap * (sparse ? 3 : 4));
	}
	kvp_kmap_fini(&m);
	{ /* an empty map finds nothing */
		uint64_t b = 1;
		uint32_t v = 7;

		kvp_kmap_get_many(&m, 0, &b, 1, &v);
		CHECK(v == 0);
	}
}

/* A map grown far past 2 MiB (its table then mapped as huge pages, first
 * reached from a calloc'd one): every key of a closed form is found, a
 * deleted half is gone and the rest stays, the load bound holds. */
static void
test_kmap_big(int sparse)
{
	struct kvp_kmap m;
	const uint32_t n = 400000; /* 16 B slots: 6-16 MiB of table */
	int ok = 1;

	if (sparse)
		kvp_kmap_init_sparse(&m, NULL);
	else
		kvp_kmap_init(&m);
	for (uint32_t k = 1; k <= n; k++)
		ok &= kvp_kmap_put(&m, k % 5, (uint64_t)k << 40, k, NULL) == 0;
	CHECK(ok);
	CHECK(kvp_kmap_bytes(&m) >= (size_t)4 << 20);
	for (uint32_t k = 1; k <= n; k += 2)
		ok &= kvp_kmap_del(&m, k % 5, (uint64_t)k << 40) == k;
	CHECK(ok);
	for (uint32_t k = 1; k <= n; k++)
		ok &= kvp_kmap_get(&m, k % 5, (uint64_t)k << 40) ==
		      (k % 2 ? 0 : k);
	CHECK(ok);
	CHECK(kvp_kmap_get(&m, 1, (uint64_t)2 << 40) == 0); /* wrong a */
	CHECK_U64(m.n, n / 2);
	CHECK(m.n * 5 <= m.cap * (sparse ? 3 : 4));
	kvp_kmap_fini(&m);
	CHECK(m.t == NULL && m.cap == 0);
}

static void
test_store_match(void)
{
	struct kvp_index *ix = kvp_index_new(NULL);
	uint64_t ext1[] = {1, 2, 3}, ext2[] = {11, 12, 13}, loc[] = {7, 8, 9};
	uint32_t s[8];
	size_t added, unknown;
	int64_t w1 = kvp_index_holder(ix, 1, 0, KVP_TIER_DEVICE, 1);
	int64_t w2 = kvp_index_holder(ix, 2, 0, KVP_TIER_DEVICE, 1);

	CHECK(w1 == 0 && w2 == 1);
	CHECK(kvp_index_holder(ix, 1, 0, KVP_TIER_DEVICE, 0) == 0);
	CHECK(kvp_index_holder(ix, 1, 0, KVP_TIER_HOST, 0) == -1);
	CHECK(kvp_index_store(ix, 0, 0, 0, ext1, loc, 3, &added) ==
	      KVP_STORE_OK);
	CHECK_U64(added, 3);
	CHECK(kvp_index_store(ix, 1, 0, 0, ext2, loc, 3, &added) ==
	      KVP_STORE_OK);
	CHECK(kvp_index_store(ix, 0, 0, 0, ext1, loc, 3, &added) ==
	      KVP_STORE_DUPLICATE);
	CHECK_U64(kvp_index_nodes(ix), 3);
	CHECK_U64(kvp_index_pairs(ix), 6);
	CHECK_U64(kvp_index_match(ix, loc, 3, 0, s), 3);
	CHECK_U64(s[0], 3);
	CHECK_U64(s[1], 3);

	/* §6.5 13: W1 removes its middle block. */
	CHECK_U64(kvp_index_remove(ix, 0, &ext1[1], 1, &unknown), 1);
	kvp_index_match(ix, loc, 3, 0, s);
	CHECK_U64(s[0], 1);
	CHECK_U64(s[1], 3);
	kvp_index_match(ix, loc, 3, 1, s);
	CHECK_U64(s[0], 2);
	CHECK_U64(s[1], 3);
	CHECK_U64(kvp_index_holder_info(ix, 0)->nblocks, 2);

	/* §6.5 10/12: parents are per holder. */
	{
		uint64_t e = 50, l = 99;

		CHECK(kvp_index_store(ix, 0, 1, 11, &e, &l, 1, &added) ==
		      KVP_STORE_PARENT_NOT_FOUND);
		CHECK(kvp_index_store(ix, 1, 1, 11, &e, &l, 1, &added) ==
		      KVP_STORE_OK);
	}
	/* §6.5 29: self reference. */
	{
		uint64_t e[] = {60, 60}, l[] = {1, 2};

		CHECK(kvp_index_store(ix, 0, 0, 0, e, l, 2, &added) ==
		      KVP_STORE_SELF_REFERENCE);
		e[1] = 61;
		CHECK(kvp_index_store(ix, 0, 1, 61, e, l, 2, &added) ==
		      KVP_STORE_SELF_REFERENCE);
	}
	/* clear and memory: after clearing both, no node is left. */
	CHECK(kvp_index_clear(ix, 0) == 2);
	CHECK(kvp_index_clear(ix, 1) == 4);
	CHECK_U64(kvp_index_nodes(ix), 0);
	CHECK_U64(kvp_index_pairs(ix), 0);
	CHECK_U64(kvp_index_match(ix, loc, 3, 0, s), 0);
	kvp_index_free(ix);
}

/* Re-storing an external hash with other content moves it. */
static void
test_moved(void)
{
	struct kvp_index *ix = kvp_index_new(NULL);
	uint64_t e = 5, a = 100, b = 200;
	uint32_t s[2];
	size_t added;

	(void)kvp_index_holder(ix, 1, 0, 0, 1);
	kvp_index_store(ix, 0, 0, 0, &e, &a, 1, &added);
	kvp_index_store(ix, 0, 0, 0, &e, &b, 1, &added);
	kvp_index_match(ix, &a, 1, 0, s);
	CHECK_U64(s[0], 0);
	kvp_index_match(ix, &b, 1, 0, s);
	CHECK_U64(s[0], 1);
	CHECK_U64(kvp_index_nodes(ix), 1);
	kvp_index_free(ix);
}

/* Many holders on one node (heap holder arrays), removed in turn. */
static void
test_many_holders(void)
{
	struct kvp_index *ix = kvp_index_new(NULL);
	uint64_t e = 1, l = 42;
	uint32_t s[40];
	size_t added, unknown;
	int ok = 1;

	for (uint64_t w = 0; w < 40; w++) {
		(void)kvp_index_holder(ix, w, 0, 0, 1);
		kvp_index_store(ix, (uint32_t)w, 0, 0, &e, &l, 1, &added);
	}
	kvp_index_match(ix, &l, 1, 0, s);
	for (int i = 0; i < 40; i++)
		ok &= s[i] == 1;
	CHECK(ok);
	for (uint32_t w = 0; w < 40; w += 2)
		kvp_index_remove(ix, w, &e, 1, &unknown);
	kvp_index_match(ix, &l, 1, 0, s);
	ok = 1;
	for (int i = 0; i < 40; i++)
		ok &= s[i] == (uint32_t)(i & 1);
	CHECK(ok);
	CHECK_U64(kvp_index_pairs(ix), 20);
	kvp_index_free(ix);
}

/* The repeat check (one pass over a small set, or sorting past 64)
 * against the quadratic definition, on short lists of few distinct
 * values, the zero hash included. */
static void
test_self_reference_model(void)
{
	uint64_t x = 7, bad = 0;

	for (int t = 0; t < 20000; t++) {
		struct kvp_index *ix = kvp_index_new(NULL);
		uint64_t e[80], l[80], parent;
		size_t n, added;
		int has_parent, want = 0, st;

		(void)kvp_index_holder(ix, 0, 0, KVP_TIER_DEVICE, 1);
		(void)kvp_index_holder(ix, 1, 0, KVP_TIER_DEVICE, 1);
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (x >> 40) % 80;
		has_parent = (x >> 20) & 1;
		parent = (x >> 30) % 3 == 0 ? 0 : (x >> 50) % 200;
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			e[i] = (x >> 33) % (n * 4) * 0x9e3779b97f4a7c15ULL;
			l[i] = i;
		}
		for (size_t i = 0; i < n; i++) {
			want |= has_parent && e[i] == parent;
			for (size_t j = i + 1; j < n; j++)
				want |= e[i] == e[j];
		}
		if (has_parent) /* the parent itself must be there */
			(void)kvp_index_store(ix, 0, 0, 0, &parent, l, 1,
			                      &added);
		st =
		    kvp_index_store(ix, 0, has_parent, parent, e, l, n, &added);
		bad += (st == KVP_STORE_SELF_REFERENCE) != want;
		if (!has_parent)
			bad +=
			    (kvp_index_store_from(ix, 1, e, l, n, 0, &added) ==
			     KVP_STORE_SELF_REFERENCE) != want;
		kvp_index_free(ix);
	}
	CHECK_U64(bad, 0);
}

/* kvp_index_store_from with the prefix the match reports, on random
 * chains of four holders, against kvp_index_store from the root in a
 * second index: the same status, additions, pairs, nodes and scores. */
static void
test_store_from(void)
{
	struct kvp_index *a = kvp_index_new(NULL),
	                 *b = kvp_index_new_sparse(NULL);
	uint64_t x = 99, bad = 0;
	uint32_t sa[4], sb[4];

	for (uint32_t h = 0; h < 4; h++) {
		(void)kvp_index_holder(a, h, 0, KVP_TIER_DEVICE, 1);
		(void)kvp_index_holder(b, h, 0, KVP_TIER_DEVICE, 1);
	}
	for (int t = 0; t < 20000; t++) {
		uint64_t loc[12], ext[12];
		size_t n, ada, adb, un;
		uint32_t h;
		int sta, stb;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		h = (uint32_t)(x >> 60) % 4;
		n = 1 + (x >> 40) % 12;
		for (size_t i = 0; i < n; i++) { /* few distinct paths */
			loc[i] = (x >> (i * 5)) % 3 + 1;
			ext[i] = (i ? ext[i - 1] * 31 : 7) + loc[i];
		}
		if ((x >> 10) % 4 == 0) { /* an expiry-like removal */
			size_t k = (x >> 14) % n;

			bad += kvp_index_remove(a, h, &ext[k], 1, &un) !=
			       kvp_index_remove(b, h, &ext[k], 1, &un);
			continue;
		}
		kvp_index_match(b, loc, n, 0, sb);
		sta = kvp_index_store(a, h, 0, 0, ext, loc, n, &ada);
		/* a fully held chain: a promise past its end is clamped */
		stb = kvp_index_store_from(b, h, ext, loc, n,
		                           sb[h] == n ? n + 3 : sb[h], &adb);
		bad += sta != stb || ada != adb ||
		       kvp_index_pairs(a) != kvp_index_pairs(b) ||
		       kvp_index_nodes(a) != kvp_index_nodes(b);
		kvp_index_match(a, loc, n, 0, sa);
		kvp_index_match(b, loc, n, 0, sb);
		bad += memcmp(sa, sb, sizeof sa) != 0;
	}
	CHECK_U64(bad, 0);
	CHECK(kvp_index_pairs(a) > 0);
	kvp_index_free(a);
	kvp_index_free(b);
}

int
main(void)
{
	test_kmap(0);
	test_kmap(1);
	test_kmap_big(0);
	test_kmap_big(1);
	test_store_match();
	test_moved();
	test_many_holders();
	test_self_reference_model();
	test_store_from();
	return UNIT_DONE();
}
