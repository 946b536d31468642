/* SPDX-License-Identifier: MIT */
/* hash.c — Dynamo XXH3 block and sequence hashes (see hash.h). */
#define XXH_INLINE_ALL
#include "common/blockhash.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>
/* Inlined so the short fixed-size hashes (16-byte chain steps, one block)
 * are specialized by the compiler; the header trips -Wmaybe-uninitialized
 * in its streaming code. */
#if defined(__clang__)
#include <xxhash.h>
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <xxhash.h>
#pragma GCC diagnostic pop
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KVP_LITTLE_ENDIAN 1
#else
#define KVP_LITTLE_ENDIAN 0
#endif

static void
put_le64(unsigned char *b, uint64_t v)
{
#if KVP_LITTLE_ENDIAN
	/* One 8-byte store: byte stores read back as a word by XXH3 would
	 * stall store forwarding on every (latency-bound) chain step. */
	memcpy(b, &v, sizeof v);
#else
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
#endif
}

uint64_t
kvp_hash_bytes(const void *p, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, len, seed);
}

uint64_t
kvp_hash_seed(uint64_t base, const char *lora, const char *ns)
{
	uint64_t s = base;

	if (lora != NULL && *lora != '\0')
		s += XXH3_64bits_withSeed(lora, strlen(lora), 0);
	if (ns != NULL && *ns != '\0')
		s += XXH3_64bits_withSeed(ns, strlen(ns), 1);
	return s;
}

size_t
kvp_hash_block_count(size_t n, uint32_t bs, int eagle)
{
	if (bs == 0 || n == 0)
		return 0;
	return eagle ? (n - 1) / bs : n / bs;
}

/* Tokens as little-endian u32 into the XXH3 state. */
static void
update_tokens(XXH3_state_t *st, const uint32_t *t, size_t n)
{
#if KVP_LITTLE_ENDIAN
	XXH3_64bits_update(st, t, n * sizeof *t);
#else
	unsigned char b[256];
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		b[k++] = (unsigned char)t[i];
		b[k++] = (unsigned char)(t[i] >> 8);
		b[k++] = (unsigned char)(t[i] >> 16);
		b[k++] = (unsigned char)(t[i] >> 24);
		if (k == sizeof b) {
			XXH3_64bits_update(st, b, k);
			k = 0;
		}
	}
	XXH3_64bits_update(st, b, k);
#endif
}

uint64_t
kvp_hash_block(const uint32_t *tokens, size_t n, uint64_t seed,
               const uint64_t *mm, size_t n_mm)
{
	XXH3_state_t st;
	uint64_t last = 0;

#if KVP_LITTLE_ENDIAN
	if (n_mm == 0)
		return XXH3_64bits_withSeed(tokens, n * sizeof *tokens, seed);
#endif
	/* A stack state must be initialized before reset: xxhash 0.8.1
	 * compares the old seed to skip rebuilding its secret. */
	XXH3_INITSTATE(&st);
	XXH3_64bits_reset_withSeed(&st, seed);
	update_tokens(&st, tokens, n);
	/* Append mm hashes in ascending order without sorting in place:
	 * repeatedly take the smallest value not yet taken (duplicates are
	 * each appended). Blocks carry a handful of objects at most. */
	for (size_t done = 0; done < n_mm;) {
		uint64_t min = UINT64_MAX;
		size_t cnt = 0;

		for (size_t i = 0; i < n_mm; i++) {
			if (done > 0 && mm[i] <= last)
				continue;
			if (mm[i] < min) {
				min = mm[i];
				cnt = 1;
			} else if (mm[i] == min) {
				cnt++;
			}
		}
		for (size_t c = 0; c < cnt; c++) {
			unsigned char b[8];

			put_le64(b, min);
			XXH3_64bits_update(&st, b, 8);
		}
		done += cnt;
		last = min;
	}
	return XXH3_64bits_digest(&st);
}

uint64_t
kvp_hash_chain(uint64_t parent, uint64_t local, uint64_t chain_seed)
{
	unsigned char b[16];

	put_le64(b, parent);
	put_le64(b + 8, local);
	return XXH3_64bits_withSeed(b, sizeof b, chain_seed);
}

void
kvp_hasher_init(struct kvp_hasher *h, uint64_t seed, uint64_t chain_seed)
{
	h->seed = seed;
	h->chain_seed = chain_seed;
	h->prev_seq = 0;
	h->n = 0;
}

void
kvp_hasher_block(struct kvp_hasher *h, const uint32_t *tokens, size_t n,
                 const uint64_t *mm, size_t n_mm, uint64_t *local,
                 uint64_t *seq)
{
	uint64_t l = kvp_hash_block(tokens, n, h->seed, mm, n_mm);
	uint64_t s =
	    h->n == 0 ? l : kvp_hash_chain(h->prev_seq, l, h->chain_seed);

	h->prev_seq = s;
	h->n++;
	if (local)
		*local = l;
	if (seq)
		*seq = s;
}

size_t
kvp_hash_tokens(const uint32_t *tokens, size_t n, uint32_t bs, int eagle,
                uint64_t seed, uint64_t chain_seed, uint64_t *local,
                uint64_t *seq)
{
	size_t nb = kvp_hash_block_count(n, bs, eagle);
	size_t win = (size_t)bs + (eagle ? 1 : 0);
	struct kvp_hasher h;

	kvp_hasher_init(&h, seed, chain_seed);
	for (size_t i = 0; i < nb; i++)
		kvp_hasher_block(&h, tokens + i * bs, win, NULL, 0, &local[i],
		                 seq ? &seq[i] : NULL);
	return nb;
}

uint32_t
kvp_pad_value(uint64_t mm_hash)
{
	return (uint32_t)(1000000u + (mm_hash & ((1u << 30) - 1)));
}

uint64_t
kvp_hash_mm_identifier(const char *s, size_t len)
{
	if (len == 64) {
		uint64_t v = 0;
		size_t i;

		for (i = 0; i < 64 && kvp_hexval(s[i]) >= 0; i++)
			if (i < 16)
				v = (v << 4) | (uint64_t)kvp_hexval(s[i]);
		if (i == 64)
			return v;
	}
	return XXH3_64bits_withSeed(s, len, 0);
}

const char *
kvp_hash_lib_version(void)
{
	static char v[32];
	unsigned n = XXH_versionNumber();

	snprintf(v, sizeof v, "%u.%u.%u", n / 10000, (n / 100) % 100, n % 100);
	return v;
}
