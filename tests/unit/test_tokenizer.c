/* SPDX-License-Identifier: MIT */
/* test_tokenizer.c — lib/tokenizer: BPE merge order on a hand-written rank
 * file (expected ids derived by hand below), the Kimi split of
 * docs/spec/mm-expand.md §7.5 test 27 and §5, special tokens matched
 * atomically, bytes mode (§7.5 test 21), rank-file errors, special-token
 * files; the merge against a plain reference merger written below;
 * 100,000-letter runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mm/tokenizer.h"
#include "unit.h"

/* ranks: a 0, b 1, c 2, d 3, bc 4, ab 5, cd 6, abc 8, " " 9; base64:
 * a=YQ== b=Yg== c=Yw== d=ZA== bc=YmM= ab=YWI= cd=Y2Q= abc=YWJj */
static const char ranks[] = "YQ== 0\n"
                            "Yg== 1\n"
                            "Yw== 2\n"
                            "ZA== 3\n"
                            "YmM= 4\n"
                            "YWI= 5\n"
                            "Y2Q= 6\n"
                            "YWJj 8\n"
                            "IA== 9\n"; /* " " */

struct pieces {
	char buf[256];
	size_t n;
};

static int
collect(void *ctx, const char *p, size_t len)
{
	struct pieces *ps = ctx;

	if (ps->n + len + 2 > sizeof ps->buf)
		return -1;
	memcpy(ps->buf + ps->n, p, len);
	ps->n += len;
	ps->buf[ps->n++] = '|';
	ps->buf[ps->n] = '\0';
	return 0;
}

static const char *
split(struct kvp_tokenizer *t, const char *s)
{
	static struct pieces ps;
	struct kvp_diag d;

	ps.n = 0;
	ps.buf[0] = '\0';
	if (kvp_tok_split(t, s, strlen(s), collect, &ps, &d) != 0)
		return "(error)";
	return ps.buf;
}

static int
count_pieces(void *ctx, const char *p, size_t len)
{
	(void)p, (void)len;
	++*(size_t *)ctx;
	return 0;
}

static int
ids_eq(const struct kvp_tok_ids *ids, const uint32_t *want, size_t n)
{
	return ids->n == n && memcmp(ids->v, want, n * sizeof *want) == 0;
}

/* BPE merge order, specials matched atomically */
static void
test_bpe(void)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new(NULL, &d);
	struct kvp_tok_ids ids = {0};

	CHECK(t != NULL);
	CHECK(kvp_tok_load_ranks(t, ranks, sizeof ranks - 1, &d) == 0);
	CHECK(kvp_tok_vocab_size(t) == 9);

	/* "abcd": pairs ab 5, bc 4, cd 6 -> merge bc (lowest) -> a|bc|d;
	 * pairs abc 8, bcd none -> merge abc -> abc|d; abcd none -> [8, 3].
	 * A left-to-right merger would give ab|cd = [5, 6]. */
	CHECK(kvp_tok_encode(t, "abcd", 4, 0, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){8, 3}, 2));
	/* "dcba": no pair has a rank -> bytes [3, 2, 1, 0] */
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "dcba", 4, 0, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){3, 2, 1, 0}, 4));
	/* whole piece in the vocabulary: one id */
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "abc", 3, 0, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){8}, 1));
	/* "cd ab": split "cd", " ", "ab"? no: " ab" is one piece (optional
	 * leading non-letter + letters); " ab" has no rank -> bytes " ",
	 * then pair " a" none, "ab" 5 -> [6, 9, 5] */
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "cd ab", 5, 0, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){6, 9, 5}, 3));
	/* a byte with no rank is an error, not a guess */
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "abe", 3, 0, &ids, &d) == -1);
	CHECK(strstr(d.msg, "no rank") != NULL);

	/* specials: atomic, leftmost, only when allowed */
	CHECK(kvp_tok_add_special(t, "<|x|>", 5, 100, &d) == 0);
	CHECK(kvp_tok_add_special(t, "<|x|>ab", 7, 101, &d) == 0);
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "a<|x|>b", 7, 1, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){0, 100, 1}, 3));
	ids.n = 0; /* longest special at the leftmost position */
	CHECK(kvp_tok_encode(t, "<|x|>abc", 8, 1, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){101, 2}, 2));
	ids.n = 0; /* not allowed: '<' has no rank -> error */
	CHECK(kvp_tok_encode(t, "a<|x|>b", 7, 0, &ids, &d) == -1);
	kvp_tok_free(t);
	kvp_tok_ids_free(&ids);
}

/* the Kimi split (§5, test 27), built-in specials and bytes mode (test 21) */
static void
test_kimi(void)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t;
	struct kvp_tok_ids ids = {0};

	t = kvp_tok_new("kimi", &d);
	CHECK(t != NULL);
	CHECK_STR(split(t, "image 1024x768"), "image| |102|4|x|768|");
	CHECK_STR(split(t, "image 4000x3000"), "image| |400|0|x|300|0|");
	CHECK_STR(split(t, "image 12345x678"), "image| |123|45|x|678|");
	CHECK_STR(split(t, "image 448x448"), "image| |448|x|448|");
	CHECK_STR(split(t, "Hello world"), "Hello| world|");
	CHECK_STR(split(t, "1234567890"), "123|456|789|0|");
	CHECK_STR(split(t, "\xe4\xbd\xa0\xe5\xa5\xbdworld"),
	          "\xe4\xbd\xa0\xe5\xa5\xbd|world|");
	CHECK_STR(split(t, "don't  stop\n\nx"), "don't| | stop|\n\n|x|");
	/* bytes that are not UTF-8 still form pieces */
	CHECK_STR(split(t, "a\xff"), "a|\xff|");

	/* Kimi built-in specials and bytes mode (test 21) */
	CHECK(kvp_tok_add_kimi_specials(t, &d) == 0);
	CHECK(kvp_tok_special_id(t, "<|media_begin|>") == 163602);
	CHECK(kvp_tok_special_id(t, "<|media_content|>") == 163603);
	CHECK(kvp_tok_special_id(t, "<|media_end|>") == 163604);
	CHECK(kvp_tok_special_id(t, "<|media_pad|>") == 163605);
	CHECK(kvp_tok_special_id(t, "<|end_of_msg|>") == 163586);
	CHECK(kvp_tok_special_id(t, "<|im_end|>") == 163586);
	CHECK(kvp_tok_special_id(t, "<|reserved_token_163600|>") == 163600);
	CHECK(kvp_tok_special_id(t, "<|reserved_token_163602|>") == -1);
	kvp_tok_set_bytes(t, 1000);
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "image 56x56", 11, 0, &ids, &d) == 0);
	CHECK(ids_eq(&ids,
	             (const uint32_t[]){1105, 1109, 1097, 1103, 1101, 1032,
	                                1053, 1054, 1120, 1053, 1054},
	             11));
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "<|media_begin|>", 15, 1, &ids, &d) == 0);
	CHECK(ids_eq(&ids, (const uint32_t[]){163602}, 1));
	ids.n = 0;
	CHECK(kvp_tok_encode(t, "<|media_begin|>", 15, 0, &ids, &d) == 0);
	CHECK(ids.n == 15);
	kvp_tok_free(t);
	kvp_tok_ids_free(&ids);
}

/* other patterns compile; a bad regex is reported */
static void
test_patterns(void)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t;

	t = kvp_tok_new("cl100k", &d);
	CHECK(t != NULL);
	CHECK_STR(split(t, "image 1024x768"), "image| |102|4|x|768|");
	kvp_tok_free(t);
	t = kvp_tok_new("o200k", &d);
	CHECK(t != NULL);
	kvp_tok_free(t);
	CHECK(kvp_tok_new("(", &d) == NULL);
}

/* rank-file errors name the line */
static void
test_rank_errors(void)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t;

	t = kvp_tok_new(NULL, &d);
	CHECK(kvp_tok_load_ranks(t, "YQ== 0\nYQ== 1\n", 14, &d) == -1);
	CHECK(d.col == 2);
	CHECK(kvp_tok_load_ranks(t, "Yg== x\n", 7, &d) == -1);
	CHECK(kvp_tok_load_ranks(t, "!!!! 3\n", 7, &d) == -1);
	CHECK(kvp_tok_load_ranks(t, "Yw==\n", 5, &d) == -1);
	CHECK(kvp_tok_load_ranks_file(t, "/nonexistent/tiktoken.model", &d) ==
	      -1);
	kvp_tok_free(t);
	/* issue 15: a rank given twice (tiktoken refuses it) names both
	 * lines; a vocabulary with no token is an error, not a tokenizer
	 * that fails every record */
	t = kvp_tok_new(NULL, &d);
	CHECK(kvp_tok_load_ranks(t, "YQ== 0\nYg== 1\nYw== 1\n", 21, &d) == -1);
	CHECK(d.col == 3);
	CHECK_STR(d.msg, "line 3: duplicate rank 1 (also on line 2)");
	kvp_tok_free(t);
	t = kvp_tok_new(NULL, &d);
	CHECK(kvp_tok_load_ranks(t, "", 0, &d) == -1);
	CHECK_STR(d.msg, "no tokens: empty vocabulary");
	CHECK(kvp_tok_load_ranks(t, "\n\r\n\n", 4, &d) == -1);
	CHECK(d.col == 0);
	CHECK(kvp_tok_load_ranks_file(t, "/dev/null", &d) == -1);
	CHECK_STR(d.msg, "/dev/null: no tokens: empty vocabulary");
	CHECK(kvp_tok_vocab_size(t) == 0);
	/* a cleared vocabulary loads again: no duplicate left behind */
	CHECK(kvp_tok_load_ranks(t, ranks, sizeof ranks - 1, &d) == 0);
	kvp_tok_clear_ranks(t);
	CHECK(kvp_tok_vocab_size(t) == 0);
	CHECK(kvp_tok_load_ranks(t, ranks, sizeof ranks - 1, &d) == 0);
	CHECK(kvp_tok_vocab_size(t) == 9);
	kvp_tok_free(t);
}

/* ---- BPE against a reference --------------------------------------------
 * ref_encode is tiktoken's encode of one piece written plainly here: a
 * piece that is a token is that token; otherwise parts start as bytes; while
 * some adjacent pair is a token, merge the pair of lowest rank (the leftmost of
 * equal ranks). Quadratic, with a linear vocabulary search: an independent
 * model of the merge order. */
struct ref_vocab {
	char tok[64][8];
	uint32_t rank[64];
	size_t n;
};

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static int64_t
ref_rank(const struct ref_vocab *v, const char *p, size_t len)
{
	for (size_t i = 0; i < v->n; i++)
		if (strlen(v->tok[i]) == len && memcmp(v->tok[i], p, len) == 0)
			return v->rank[i];
	return -1;
}

/* Ids of text[0..n) into out; -1 when a final part has no rank. piece:
 * text is a whole piece (not a stretch of one). */
static int
ref_merge(const struct ref_vocab *v, const char *text, size_t n, int piece,
          uint32_t *out, size_t *nout)
{
	static size_t b[1024];
	size_t parts = n;

	if (piece && ref_rank(v, text, n) >= 0) { /* a whole-piece token */
		out[0] = (uint32_t)ref_rank(v, text, n);
		*nout = 1;
		return 0;
	}
	for (size_t i = 0; i <= n; i++)
		b[i] = i;
	for (;;) {
		int64_t best = -1;
		size_t bi = 0;

		for (size_t i = 0; i + 1 < parts; i++) {
			int64_t r = ref_rank(v, text + b[i], b[i + 2] - b[i]);

			if (r >= 0 && (best < 0 || r < best))
				best = r, bi = i;
		}
		if (best < 0)
			break;
		memmove(&b[bi + 1], &b[bi + 2], (parts - bi - 1) * sizeof *b);
		parts--;
	}
	for (size_t i = 0; i < parts; i++) {
		int64_t r = ref_rank(v, text + b[i], b[i + 1] - b[i]);

		if (r < 0)
			return -1;
		out[i] = (uint32_t)r;
	}
	*nout = parts;
	return 0;
}

static int
ref_encode(const struct ref_vocab *v, const char *text, size_t n, uint32_t *out,
           size_t *nout)
{
	return ref_merge(v, text, n, 1, out, nout);
}

/* A random vocabulary over "abc": the three bytes and up to 61 distinct
 * tokens of 2..7 letters, with shuffled distinct ranks; as a rank file. */
static void
ref_vocab_make(struct ref_vocab *v, char *file, size_t cap)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789+/";
	uint32_t perm[64];
	size_t off = 0;

	v->n = 0;
	for (int c = 0; c < 3; c++)
		v->tok[v->n][0] = (char)('a' + c), v->tok[v->n++][1] = '\0';
	for (int k = 0, tries = 0; v->n < 64 && tries < 200; tries++, k++) {
		size_t len = 2 + rnd(6);
		char tk[8];

		for (size_t i = 0; i < len; i++)
			tk[i] = (char)('a' + rnd(3));
		tk[len] = '\0';
		if (ref_rank(v, tk, len) < 0 && rnd(64) < 20)
			memcpy(v->tok[v->n++], tk, len + 1);
	}
	for (size_t i = 0; i < v->n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = v->n - 1; i > 0; i--) {
		size_t j = rnd((uint32_t)i + 1);
		uint32_t x = perm[i];

		perm[i] = perm[j], perm[j] = x;
	}
	for (size_t i = 0; i < v->n; i++) {
		const uint8_t *s = (const uint8_t *)v->tok[i];
		size_t len = strlen(v->tok[i]);

		v->rank[i] = perm[i] * 3 + 1; /* gaps: ids need not be dense */
		for (size_t k = 0; k < len; k += 3) { /* base64 of the token */
			uint32_t w =
			    (uint32_t)s[k] << 16 |
			    (k + 1 < len ? (uint32_t)s[k + 1] << 8 : 0) |
			    (k + 2 < len ? s[k + 2] : 0);

			file[off++] = b64[w >> 18];
			file[off++] = b64[(w >> 12) & 63];
			file[off++] = k + 1 < len ? b64[(w >> 6) & 63] : '=';
			file[off++] = k + 2 < len ? b64[w & 63] : '=';
		}
		off += (size_t)snprintf(file + off, cap - off, " %u\n",
		                        v->rank[i]);
	}
}

/* kvp_tok_encode (heap merging) gives exactly the reference's ids on
 * 50 random vocabularies x 20 random texts of 1..160 letters */
static void
test_bpe_reference(void)
{
	static char file[64 * 32], text[301];
	static uint32_t want[300];
	struct ref_vocab v;
	struct kvp_tok_ids ids = {0};
	struct kvp_diag d;
	int same = 0, cases = 0, errors = 0;

	for (int round = 0; round < 50; round++) {
		struct kvp_tokenizer *t = kvp_tok_new("[a-c]+", &d);

		ref_vocab_make(&v, file, sizeof file);
		CHECK(t != NULL &&
		      kvp_tok_load_ranks(t, file, strlen(file), &d) == 0);
		for (int k = 0; t != NULL && k < 20; k++) {
			size_t n = 1 + rnd(160), nw = 0;
			int rw, rg;

			for (size_t i = 0; i < n; i++) /* runs make ties */
				text[i] = (char)('a' + (rnd(4) ? rnd(2) : 2));
			rw = ref_encode(&v, text, n, want, &nw);
			ids.n = 0;
			rg = kvp_tok_encode(t, text, n, 0, &ids, &d);
			cases++;
			errors += rw != 0;
			same += rw == rg &&
			        (rw != 0 || (ids.n == nw &&
			                     memcmp(ids.v, want, nw * 4) == 0));
		}
		kvp_tok_free(t);
	}
	CHECK_U64(same, cases);
	CHECK(errors < cases); /* most texts encode */
	kvp_tok_ids_free(&ids);
}

/* One long piece (300,000+ letters, so the first candidates are
 * radix-sorted) of short a/b/c segments joined by 'd', which no token
 * holds: no merge crosses a 'd', so the ids are the reference's ids of
 * each segment (merged from bytes: a segment is not a piece) joined by
 * d's id. */
static void
test_bpe_long_reference(void)
{
	static char file[64 * 32 + 16], text[320000];
	static uint32_t want[320000], seg[64];
	struct ref_vocab v;
	struct kvp_tok_ids ids = {0};
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new("[a-d]+", &d);
	size_t n = 0, nw = 0;
	int ok = 1;

	ref_vocab_make(&v, file, sizeof file - 16);
	memcpy(file + strlen(file), "ZA== 1000\n", 11); /* d */
	CHECK(t != NULL && kvp_tok_load_ranks(t, file, strlen(file), &d) == 0);
	while (n < 300000) {
		size_t len = 1 + rnd(40), ns = 0;

		for (size_t i = 0; i < len; i++)
			text[n + i] = (char)('a' + (rnd(4) ? rnd(2) : 2));
		if (ref_merge(&v, text + n, len, 0, seg, &ns) != 0)
			continue; /* a segment with no encoding: try another */
		memcpy(want + nw, seg, ns * sizeof *seg);
		nw += ns;
		n += len;
		text[n++] = 'd';
		want[nw++] = 1000;
	}
	ok = t != NULL && kvp_tok_encode(t, text, n, 0, &ids, &d) == 0;
	CHECK(ok);
	CHECK_U64(ids.n, nw);
	CHECK(ok && ids.n == nw && memcmp(ids.v, want, nw * 4) == 0);
	kvp_tok_free(t);
	kvp_tok_ids_free(&ids);
}

/* issue 15: a run of 100,000 letters (Kimi split) needs more than PCRE2's
 * default 32 KiB JIT stack; it is one piece, as any shorter run */
static void
test_long_run(void)
{
	static char text[200001];
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new("kimi", &d);
	struct kvp_tok_ids ids = {0};
	size_t n = 0;

	CHECK(t != NULL);
	if (t == NULL)
		return;
	memset(text, 'a', 100000);
	CHECK(kvp_tok_load_ranks(t, "YQ== 7\nYWE= 8\n", 14, &d) == 0);
	/* "aa" rank 8 merges pairs left to right: 50,000 ids of 8 */
	CHECK(kvp_tok_encode(t, text, 100000, 0, &ids, &d) == 0);
	CHECK_U64(ids.n, 50000);
	for (size_t i = 0; i < ids.n; i++)
		n += ids.v[i] == 8;
	CHECK_U64(n, 50000);
	/* a space and 100,000 capitals: " A..." one piece, then the rest */
	text[0] = ' ';
	memset(text + 1, 'A', 100000);
	n = 0;
	CHECK(kvp_tok_split(t, text, 100001, count_pieces, &n, &d) == 0);
	CHECK_U64(n, 1);
	/* 100,000 two-byte letters (U+00E9) */
	for (size_t i = 0; i < 100000; i++)
		text[2 * i] = (char)0xc3, text[2 * i + 1] = (char)0xa9;
	n = 0;
	CHECK(kvp_tok_split(t, text, 200000, count_pieces, &n, &d) == 0);
	CHECK_U64(n, 1);
	kvp_tok_free(t);
	kvp_tok_ids_free(&ids);
}

/* special-token tables from JSON files (mm-expand --special-tokens) */
static void
test_specials_file(void)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new(NULL, &d);
	char path[] = "/tmp/test_tokenizer.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	CHECK(t != NULL && f != NULL);
	if (t == NULL || f == NULL)
		return;
	CHECK(kvp_tok_add_kimi_specials(t, &d) == 0);
	CHECK(kvp_tok_load_specials(
	          t, "tests/fixtures/mm-expand/specials-k3.json", &d) == 0);
	CHECK(kvp_tok_special_id(t, "<|media_begin|>") == 163602);
	CHECK(kvp_tok_special_id(t, "<|media_pad|>") == 163605);
	CHECK(kvp_tok_special_id(t, "<|im_end|>") == -1); /* replaced */
	CHECK(kvp_tok_load_specials(
	          t, "tests/fixtures/mm-expand/specials-no-begin.json", &d) ==
	      0);
	CHECK(kvp_tok_special_id(t, "<|media_content|>") == 163603);
	CHECK(kvp_tok_special_id(t, "<|media_begin|>") == -1);
	fputs("{\"<|a|>\": 4294967296}", f);
	fclose(f);
	CHECK(kvp_tok_load_specials(t, path, &d) == -1);
	CHECK_STR(d.msg, "<|a|>: 4294967296 does not fit in u32");
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f != NULL) {
		fputs("{\"added_tokens_decoder\": {\"x\": {}}}", f);
		fclose(f);
	}
	CHECK(kvp_tok_load_specials(t, path, &d) == -1);
	CHECK(strstr(d.msg, "added_tokens_decoder entry \"x\"") != NULL);
	unlink(path);
	CHECK(kvp_tok_load_specials(t, path, &d) == -1);
	CHECK(strncmp(d.msg, path, strlen(path)) == 0);
	kvp_tok_free(t);
}

int
main(void)
{
	test_bpe();
	test_kimi();
	test_patterns();
	test_rank_errors();
	test_bpe_reference();
	test_bpe_long_reference();
	test_long_run();
	test_specials_file();
	return UNIT_DONE();
}
