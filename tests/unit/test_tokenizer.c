/* SPDX-License-Identifier: MIT */
/* test_tokenizer.c — lib/tokenizer: BPE merge order on a hand-written rank
 * file (expected ids derived by hand below), the Kimi split of spec-mm-expand
 * §7.5 test 27 and §5, special tokens matched atomically, bytes mode
 * (§7.5 test 21), rank-file errors, special-token files. */
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
	test_specials_file();
	return UNIT_DONE();
}
