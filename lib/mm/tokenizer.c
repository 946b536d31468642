/* SPDX-License-Identifier: MIT */
/* tokenizer.c — tiktoken-compatible BPE with PCRE2 pre-tokenization
 * (tokenizer.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "mm/tokenizer.h"

#include <errno.h>
#include <json.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/input.h"
#include "kvpipe.h"
#include "common/blockhash.h"
#include "common/ndjson.h"
#include "common/num.h"
#include "common/util.h"

/*
 * Kimi's split pattern (docs/spec/mm-expand.md §5). The original uses class
 * intersection ([...&&[^\p{Han}]]), which PCRE2 lacks; each such class is
 * written as a negative lookahead for \p{Han} followed by the class.
 */
#define KIMI_UPPER "(?:(?!\\p{Han})[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])"
#define KIMI_LOWER "(?:(?!\\p{Han})[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])"
#define CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
static const char kimi_pattern[] =
    "[\\p{Han}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?" KIMI_UPPER "*" KIMI_LOWER "+" CONTRACTION
    "|[^\\r\\n\\p{L}\\p{N}]?" KIMI_UPPER "+" KIMI_LOWER "*" CONTRACTION
    "|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+";

static const char cl100k_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Qwen (qwen.tiktoken, and Qwen2's to Qwen3-VL's tokenizer.json): cl100k's
 * with single digits. */
static const char qwen_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

#define O2_UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define O2_LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
static const char o200k_pattern[] =
    "[^\\r\\n\\p{L}\\p{N}]?" O2_UPPER "*" O2_LOWER "+" CONTRACTION
    "|[^\\r\\n\\p{L}\\p{N}]?" O2_UPPER "+" O2_LOWER "*" CONTRACTION
    "|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+";

#define NO_RANK UINT32_MAX

struct entry {
	uint32_t off, len; /* bytes in arena; len 0: empty slot */
	uint32_t rank;
};

struct rank_line {
	uint32_t rank; /* NO_RANK: empty slot */
	uint32_t line;
};

struct special {
	char *name;
	size_t len;
	uint32_t id;
};

struct kvp_tokenizer {
	pcre2_code *re;
	pcre2_match_data *md;
	int jit;
	int bytes_mode;
	uint32_t bytes_base;
	/* rank table: open addressing over an arena of token bytes */
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct entry *tab;
	size_t tab_cap, n_ranks;
	/* specials */
	struct special *sp;
	size_t n_sp, sp_cap;
	uint8_t sp_first[256]; /* first bytes of specials */
	size_t max_tok_len;    /* longest token: longer pairs have no rank */
	/* ranks seen (rank -> line), for duplicate-rank errors */
	struct rank_line *rl;
	size_t rl_cap;
	/* JIT stack for long texts (NULL: PCRE2's default 32 KiB) */
	pcre2_jit_stack *jstack;
	pcre2_match_context *mctx;
	size_t jstack_max;
	/* BPE scratch (struct bpe) */
	uint32_t *next, *prev, *rank;
	uint64_t *run, *heap;
	size_t run_cap, heap_cap;
	size_t scratch_cap;
};

void
kvp_tok_ids_free(struct kvp_tok_ids *ids)
{
	free(ids->v);
	ids->v = NULL;
	ids->n = ids->cap = 0;
}

int
kvp_tok_ids_push(struct kvp_tok_ids *ids, uint32_t v)
{
	if (ids->n == ids->cap) {
		size_t nc = ids->cap ? ids->cap * 2 : 64;
		uint32_t *nv = realloc(ids->v, nc * sizeof *nv);

		if (nv == NULL)
			return -1;
		ids->v = nv;
		ids->cap = nc;
	}
	ids->v[ids->n++] = v;
	return 0;
}

static int
ids_push(struct kvp_tok_ids *ids, uint32_t v, struct kvp_diag *d)
{
	if (ids->n == ids->cap) {
		size_t nc = ids->cap ? ids->cap * 2 : 64;
		uint32_t *nv = realloc(ids->v, nc * sizeof *nv);

		if (nv == NULL)
			return kvp_diag_set(d, 0, "out of memory");
		ids->v = nv;
		ids->cap = nc;
	}
	ids->v[ids->n++] = v;
	return 0;
}

const char *
kvp_tok_pattern(const char *name)
{
	if (strcmp(name, "kimi") == 0)
		return kimi_pattern;
	if (strcmp(name, "cl100k") == 0 || strcmp(name, "cl100k_base") == 0)
		return cl100k_pattern;
	if (strcmp(name, "o200k") == 0 || strcmp(name, "o200k_base") == 0)
		return o200k_pattern;
	if (strcmp(name, "qwen") == 0)
		return qwen_pattern;
	return NULL;
}

struct kvp_tokenizer *
kvp_tok_new(const char *pattern, struct kvp_diag *d)
{
	struct kvp_tokenizer *t;
	const char *re;
	int err;
	PCRE2_SIZE erroff;

	t = calloc(1, sizeof *t);
	if (t == NULL) {
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	re = pattern == NULL ? kimi_pattern : kvp_tok_pattern(pattern);
	if (re == NULL)
		re = pattern;
	t->re = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
	                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
	                      &err, &erroff, NULL);
	if (t->re == NULL) {
		PCRE2_UCHAR msg[160];

		pcre2_get_error_message(err, msg, sizeof msg);
		kvp_diag_set(d, (long)erroff + 1, "split pattern: %s",
		             (const char *)msg);
		free(t);
		return NULL;
	}
	t->jit = pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE) == 0;
	t->md = pcre2_match_data_create_from_pattern(t->re, NULL);
	if (t->md == NULL) {
		pcre2_code_free(t->re);
		free(t);
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	return t;
}

void
kvp_tok_free(struct kvp_tokenizer *t)
{
	if (t == NULL)
		return;
	pcre2_match_data_free(t->md);
	pcre2_code_free(t->re);
	free(t->arena);
	free(t->tab);
	for (size_t i = 0; i < t->n_sp; i++)
		free(t->sp[i].name);
	free(t->sp);
	free(t->rl);
	pcre2_match_context_free(t->mctx);
	pcre2_jit_stack_free(t->jstack);
	free(t->next);
	free(t->prev);
	free(t->heap);
	free(t->rank);
	free(t->run);
	free(t);
}

void
kvp_tok_set_bytes(struct kvp_tokenizer *t, uint32_t base)
{
	t->bytes_mode = 1;
	t->bytes_base = base;
}

size_t
kvp_tok_vocab_size(const struct kvp_tokenizer *t)
{
	return t->n_ranks;
}

void
kvp_tok_clear_ranks(struct kvp_tokenizer *t)
{
	if (t->tab != NULL)
		memset(t->tab, 0, t->tab_cap * sizeof *t->tab);
	for (size_t i = 0; i < t->rl_cap; i++)
		t->rl[i].rank = NO_RANK;
	t->n_ranks = 0;
	t->arena_len = 0;
	t->max_tok_len = 0;
}

/* ---- rank table ---------------------------------------------------------- */

static size_t
slot_of(const struct kvp_tokenizer *t, const uint8_t *p, size_t len)
{
	size_t mask = t->tab_cap - 1;
	size_t i = (size_t)kvp_hash_bytes(p, len, 0) & mask;

	for (;;) {
		const struct entry *e = &t->tab[i];

		if (e->len == 0 ||
		    (e->len == len && memcmp(t->arena + e->off, p, len) == 0))
			return i;
		i = (i + 1) & mask;
	}
}

static uint32_t
rank_of(const struct kvp_tokenizer *t, const uint8_t *p, size_t len)
{
	const struct entry *e;

	if (t->tab_cap == 0 || len == 0 || len > t->max_tok_len)
		return NO_RANK;
	e = &t->tab[slot_of(t, p, len)];
	return e->len != 0 ? e->rank : NO_RANK;
}

static int
grow_table(struct kvp_tokenizer *t, struct kvp_diag *d)
{
	size_t nc = t->tab_cap ? t->tab_cap * 2 : 1024;
	struct entry *old = t->tab;
	size_t oc = t->tab_cap;

	t->tab = calloc(nc, sizeof *t->tab);
	if (t->tab == NULL) {
		t->tab = old;
		return kvp_diag_set(d, 0, "out of memory");
	}
	t->tab_cap = nc;
	for (size_t i = 0; i < oc; i++)
		if (old[i].len != 0)
			t->tab[slot_of(t, t->arena + old[i].off, old[i].len)] =
			    old[i];
	free(old);
	return 0;
}

static int
add_rank(struct kvp_tokenizer *t, const uint8_t *p, size_t len, uint32_t rank,
         long line, struct kvp_diag *d)
{
	size_t s;

	if ((t->n_ranks + 1) * 2 > t->tab_cap && grow_table(t, d) != 0)
		return -1;
	s = slot_of(t, p, len);
	if (t->tab[s].len != 0)
		return kvp_diag_set(d, line, "duplicate token (rank %u)", rank);
	if (t->arena_len + len > t->arena_cap) {
		size_t nc = t->arena_cap ? t->arena_cap * 2 : 65536;
		uint8_t *na;

		while (nc < t->arena_len + len)
			nc *= 2;
		if (nc > UINT32_MAX)
			return kvp_diag_set(d, line, "vocabulary too large");
		na = realloc(t->arena, nc);
		if (na == NULL)
			return kvp_diag_set(d, 0, "out of memory");
		t->arena = na;
		t->arena_cap = nc;
	}
	memcpy(t->arena + t->arena_len, p, len);
	t->tab[s].off = (uint32_t)t->arena_len;
	t->tab[s].len = (uint32_t)len;
	t->tab[s].rank = rank;
	t->arena_len += len;
	if (len > t->max_tok_len)
		t->max_tok_len = len;
	t->n_ranks++;
	return 0;
}

/* Records that rank was given on line; when an earlier line gave it, sets
 * *first to that line and returns 1. 0 when new, -1 on no memory. */
static int
rank_seen(struct kvp_tokenizer *t, uint32_t rank, uint32_t line,
          uint32_t *first)
{
	size_t mask, i;

	if ((t->n_ranks + 1) * 2 > t->rl_cap) {
		size_t nc = t->rl_cap ? t->rl_cap * 2 : 1024;
		struct rank_line *n = malloc(nc * sizeof *n), *o = t->rl;

		if (n == NULL)
			return -1;
		for (size_t k = 0; k < nc; k++)
			n[k].rank = NO_RANK;
		for (size_t k = 0; k < t->rl_cap; k++) {
			if (o[k].rank == NO_RANK)
				continue;
			for (i = (o[k].rank * 2654435761u) & (nc - 1);
			     n[i].rank != NO_RANK; i = (i + 1) & (nc - 1))
				;
			n[i] = o[k];
		}
		free(o);
		t->rl = n;
		t->rl_cap = nc;
	}
	mask = t->rl_cap - 1;
	for (i = (rank * 2654435761u) & mask; t->rl[i].rank != NO_RANK;
	     i = (i + 1) & mask)
		if (t->rl[i].rank == rank) {
			*first = t->rl[i].line;
			return 1;
		}
	t->rl[i].rank = rank;
	t->rl[i].line = line;
	return 0;
}

/* One "BASE64 RANK" line, p..le (no newline). */
static int
load_line(struct kvp_tokenizer *t, const char *p, const char *le, long line,
          struct kvp_diag *d)
{
	const char *sp = memchr(p, ' ', (size_t)(le - p));
	uint8_t buf[1024];
	size_t blen;
	uint64_t rank = 0;
	uint32_t first = 0;
	struct kvp_diag bd;
	int seen;

	if (sp == NULL || sp == p || sp + 1 == le)
		return kvp_diag_set(d, line,
		                    "line %ld: expected \"BASE64 RANK\"", line);
	if (kvp_base64_decoded_max((size_t)(sp - p)) > sizeof buf)
		return kvp_diag_set(d, line, "line %ld: token too long", line);
	if (kvp_base64_decode(p, (size_t)(sp - p), buf, &blen, &bd) != 0)
		return kvp_diag_set(d, line, "line %ld: %s", line, bd.msg);
	if (blen == 0)
		return kvp_diag_set(d, line, "line %ld: empty token", line);
	for (const char *q = sp + 1; q < le; q++) {
		if (*q < '0' || *q > '9' || rank > UINT32_MAX / 10)
			return kvp_diag_set(d, line, "line %ld: bad rank",
			                    line);
		rank = rank * 10 + (uint64_t)(*q - '0');
	}
	if (rank >= NO_RANK || line > UINT32_MAX)
		return kvp_diag_set(d, line, "line %ld: bad rank", line);
	/* tiktoken refuses a rank given twice: two tokens, one id */
	seen = rank_seen(t, (uint32_t)rank, (uint32_t)line, &first);
	if (seen < 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (seen)
		return kvp_diag_set(d, line,
		                    "line %ld: duplicate rank %llu (also on "
		                    "line %u)",
		                    line, (unsigned long long)rank, first);
	if (add_rank(t, buf, blen, (uint32_t)rank, line, d) != 0) {
		if (d != NULL && d->msg[0] == 'd') {
			char m[sizeof d->msg];

			memcpy(m, d->msg, sizeof m);
			kvp_diag_set(d, line, "line %ld: %s", line, m);
		}
		return -1;
	}
	return 0;
}

int
kvp_tok_load_ranks(struct kvp_tokenizer *t, const char *data, size_t len,
                   struct kvp_diag *d)
{
	const char *p = data, *end = data + len;
	long line = 0;
	size_t before = t->n_ranks;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl != NULL ? nl : end;

		line++;
		if (le > p && le[-1] == '\r')
			le--;
		if (le > p && load_line(t, p, le, line, d) != 0)
			return -1;
		p = nl != NULL ? nl + 1 : end;
	}
	if (t->n_ranks == before)
		return kvp_diag_set(d, 0, "no tokens: empty vocabulary");
	return 0;
}

int
kvp_tok_load_ranks_file(struct kvp_tokenizer *t, const char *path,
                        struct kvp_diag *d)
{
	struct kvp_diag id = {{0}, 0};
	char *buf = NULL;
	size_t len = 0;
	int rc;

	/* Through the input layer: a .gz or .zst model file reads as well. */
	if (kvp_input_slurp(path, SIZE_MAX / 2, &buf, &len, &id) != KVP_OK)
		return kvp_diag_set(d, 0, "%s: %s", path, id.msg);
	rc = kvp_tok_load_ranks(t, buf, len, d);
	free(buf);
	if (rc != 0 && d != NULL && d->col == 0) { /* no line: name the file */
		char m[sizeof d->msg];

		memcpy(m, d->msg, sizeof m);
		kvp_diag_set(d, 0, "%s: %s", path, m);
	}
	return rc;
}

/* ---- specials ------------------------------------------------------------ */

int
kvp_tok_add_special(struct kvp_tokenizer *t, const char *name, size_t len,
                    uint32_t id, struct kvp_diag *d)
{
	struct special *s;

	if (len == 0)
		return kvp_diag_set(d, 0, "empty special token name");
	for (size_t i = 0; i < t->n_sp; i++)
		if (t->sp[i].len == len &&
		    memcmp(t->sp[i].name, name, len) == 0) {
			t->sp[i].id = id;
			return 0;
		}
	if (t->n_sp == t->sp_cap) {
		size_t nc = t->sp_cap ? t->sp_cap * 2 : 64;
		struct special *ns = realloc(t->sp, nc * sizeof *ns);

		if (ns == NULL)
			return kvp_diag_set(d, 0, "out of memory");
		t->sp = ns;
		t->sp_cap = nc;
	}
	s = &t->sp[t->n_sp];
	s->name = malloc(len + 1);
	if (s->name == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	memcpy(s->name, name, len);
	s->name[len] = '\0';
	s->len = len;
	s->id = id;
	t->n_sp++;
	t->sp_first[(unsigned char)name[0]] = 1;
	return 0;
}

void
kvp_tok_clear_specials(struct kvp_tokenizer *t)
{
	for (size_t i = 0; i < t->n_sp; i++)
		free(t->sp[i].name);
	t->n_sp = 0;
	memset(t->sp_first, 0, sizeof t->sp_first);
}

int64_t
kvp_tok_special_id(const struct kvp_tokenizer *t, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < t->n_sp; i++)
		if (t->sp[i].len == len &&
		    memcmp(t->sp[i].name, name, len) == 0)
			return t->sp[i].id;
	return -1;
}

/* added_tokens_decoder: {"ID": {"content": NAME, ...}, ...} */
static int
load_decoder(struct kvp_tokenizer *t, const char *path,
             const struct json_object *dec, struct kvp_diag *d)
{
	json_object_object_foreach((struct json_object *)dec, key, val)
	{
		struct json_object *c;
		uint64_t id;
		const char *err;

		if (kvp_num_parse_u64(key, UINT32_MAX, &id, &err) != 0 ||
		    !json_object_is_type(val, json_type_object) ||
		    !kvp_json_get(val, "content", &c) ||
		    !json_object_is_type(c, json_type_string))
			return kvp_diag_set(d, 0,
			                    "%s: added_tokens_decoder entry "
			                    "\"%s\": expected {\"content\": "
			                    "NAME}",
			                    path, key);
		if (kvp_tok_add_special(t, json_object_get_string(c),
		                        (size_t)json_object_get_string_len(c),
		                        (uint32_t)id, d) != 0)
			return -1;
	}
	return 0;
}

/* {"NAME": ID, ...} */
static int
load_flat(struct kvp_tokenizer *t, const struct json_object *root,
          struct kvp_diag *d)
{
	json_object_object_foreach((struct json_object *)root, key, val)
	{
		uint64_t id;

		if (kvp_json_u64(val, 0, key, &id, d) != 0)
			return -1;
		if (id > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "%s: %llu does not fit in u32", key,
			                    (unsigned long long)id);
		if (kvp_tok_add_special(t, key, strlen(key), (uint32_t)id, d) !=
		    0)
			return -1;
	}
	return 0;
}

int
kvp_tok_load_specials(struct kvp_tokenizer *t, const char *path,
                      struct kvp_diag *d)
{
	struct json_object *root, *dec;
	struct kvp_diag fd = {{0}, 0};
	enum json_tokener_error je = json_tokener_success;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	/* Through the input layer: a .gz or .zst file reads as well. */
	if (kvp_input_slurp(path, SIZE_MAX / 2, &buf, &len, &fd) != KVP_OK)
		return kvp_diag_set(d, 0, "%s: %s", path, fd.msg);
	root = json_tokener_parse_verbose(buf, &je);
	free(buf);
	if (root == NULL)
		return kvp_diag_set(d, 0, "%s: invalid JSON: %s", path,
		                    json_tokener_error_desc(je));
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return kvp_diag_set(d, 0, "%s: expected a JSON object", path);
	}
	kvp_tok_clear_specials(t);
	if (kvp_json_get(root, "added_tokens_decoder", &dec) &&
	    json_object_is_type(dec, json_type_object))
		rc = load_decoder(t, path, dec, d);
	else
		rc = load_flat(t, root, d);
	json_object_put(root);
	return rc;
}

/* Kimi K2 (tiktoken tokenizer) and K3 names for the reserved ids. */
static const struct {
	uint32_t id;
	const char *name;
} kimi_names[] = {
    {163584, "[BOS]"},
    {163585, "[EOS]"},
    {163586, "<|im_end|>"},
    {163587, "<|im_user|>"},
    {163588, "<|im_assistant|>"},
    {163590, "<|start_header_id|>"},
    {163591, "<|end_header_id|>"},
    {163593, "[EOT]"},
    {163594, "<|im_system|>"},
    {163595, "<|tool_calls_section_begin|>"},
    {163596, "<|tool_calls_section_end|>"},
    {163597, "<|tool_call_begin|>"},
    {163598, "<|tool_call_argument_begin|>"},
    {163599, "<|tool_call_end|>"},
    {163601, "<|im_middle|>"},
    {163602, "<|media_begin|>"},
    {163603, "<|media_content|>"},
    {163604, "<|media_end|>"},
    {163605, "<|media_pad|>"},
    {163606, "<think>"},
    {163607, "</think>"},
    {163838, "[UNK]"},
    {163839, "[PAD]"},
    /* K3 names (same ids) */
    {163586, "<|end_of_msg|>"},
    {163587, "<|open|>"},
    {163588, "<|close|>"},
    {163589, "<|sep|>"},
    {163590, "[start_header_id]"},
    {163591, "[end_header_id]"},
    {163649, "<osagent_mode>"},
};

int
kvp_tok_add_kimi_specials(struct kvp_tokenizer *t, struct kvp_diag *d)
{
	size_t n = sizeof kimi_names / sizeof kimi_names[0];

	for (uint32_t id = 163584; id <= 163839; id++) {
		int named = 0;
		char name[40];
		int len;

		for (size_t i = 0; i < n; i++)
			if (kimi_names[i].id == id) {
				named = 1;
				break;
			}
		if (named)
			continue;
		len = snprintf(name, sizeof name, "<|reserved_token_%u|>", id);
		if (kvp_tok_add_special(t, name, (size_t)len, id, d) != 0)
			return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (kvp_tok_add_special(t, kimi_names[i].name,
		                        strlen(kimi_names[i].name),
		                        kimi_names[i].id, d) != 0)
			return -1;
	return 0;
}

/* Leftmost special in text[from..len), longest at that position. */
static const struct special *
find_special(const struct kvp_tokenizer *t, const char *text, size_t len,
             size_t from, size_t *at)
{
	for (size_t i = from; i < len; i++) {
		const struct special *best = NULL;

		if (!t->sp_first[(unsigned char)text[i]])
			continue;
		for (size_t k = 0; k < t->n_sp; k++) {
			const struct special *s = &t->sp[k];

			if (s->len <= len - i &&
			    memcmp(text + i, s->name, s->len) == 0 &&
			    (best == NULL || s->len > best->len))
				best = s;
		}
		if (best != NULL) {
			*at = i;
			return best;
		}
	}
	return NULL;
}

/* ---- BPE ----------------------------------------------------------------- */

/*
 * Byte-pair merging in O(n log n), with the same result as tiktoken's
 * quadratic loop (lowest rank first, the leftmost of equal ranks). Parts
 * are a linked list named by their first byte: part i is bytes
 * i..next[i], prev[i] the part before it, rank[i] the rank of part i
 * merged with the next part (NO_RANK: none, or part i is gone).
 *
 * Candidates are keys rank << 32 | i, so keys order by rank, then
 * leftmost. They wait in two queues: run, an array sorted ascending and
 * read from its head, and heap, a binary min-heap; the next merge is the
 * smaller head. The first keys are sorted into run; a new key goes to the tail
 * of run when it is not below it, to the heap otherwise. A key is pushed
 * whenever a part's rank is set; a popped key that no longer matches
 * rank[] is stale and skipped (a part's pair only grows, and ranks are
 * unique, so a stale key never matches again). Merging runs of one token
 * ("abab...") touches only run, in order: linear. At most 3 keys per byte.
 */
struct bpe_q {
	uint64_t *run, *heap;
	size_t head, n_run, n_heap;
};

static int
scratch(struct kvp_tokenizer *t, size_t n, struct kvp_diag *d)
{
	uint32_t **arrs[] = {&t->next, &t->prev, &t->rank};

	if (n >= UINT32_MAX / 4)
		return kvp_diag_set(d, 0, "text piece of %zu bytes: over 1 GiB",
		                    n);
	if (kvp_grow(&t->run, &t->run_cap, n + 1, sizeof *t->run) != 0 ||
	    kvp_grow(&t->heap, &t->heap_cap, n + 1, sizeof *t->heap) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (n <= t->scratch_cap)
		return 0;
	for (size_t k = 0; k < sizeof arrs / sizeof arrs[0]; k++) {
		uint32_t *na = realloc(*arrs[k], (n + 1) * sizeof *na);

		if (na == NULL)
			return kvp_diag_set(d, 0, "out of memory");
		*arrs[k] = na;
	}
	t->scratch_cap = n;
	return 0;
}

static int
cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sorts the keys k[0..n) (distinct); tmp holds n keys. A long piece is
 * radix-sorted on the rank, stably, so positions stay in order. */
static void
sort_keys(uint64_t *k, uint64_t *tmp, size_t n)
{
	uint32_t *cnt;

	if (n < 16) {
		for (size_t i = 1; i < n; i++) {
			uint64_t x = k[i];
			size_t j = i;

			for (; j > 0 && k[j - 1] > x; j--)
				k[j] = k[j - 1];
			k[j] = x;
		}
		return;
	}
	if (n < 65536 || (cnt = malloc(65536 * sizeof *cnt)) == NULL) {
		qsort(k, n, sizeof *k, cmp_key);
		return;
	}
	for (int shift = 32; shift < 64; shift += 16) {
		uint32_t sum = 0;

		memset(cnt, 0, 65536 * sizeof *cnt);
		for (size_t i = 0; i < n; i++)
			cnt[(k[i] >> shift) & 0xffff]++;
		for (size_t b = 0; b < 65536; b++) {
			uint32_t c = cnt[b];

			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(k[i] >> shift) & 0xffff]++] = k[i];
		memcpy(k, tmp, n * sizeof *k);
	}
	free(cnt);
}

static void
heap_push(uint64_t *h, size_t slot, uint64_t key)
{
	while (slot > 0 && key < h[(slot - 1) / 2]) {
		h[slot] = h[(slot - 1) / 2];
		slot = (slot - 1) / 2;
	}
	h[slot] = key;
}

static uint64_t
heap_pop(uint64_t *h, size_t n) /* n: size after the pop */
{
	uint64_t top = h[0], key = h[n];
	size_t slot = 0;

	for (;;) {
		size_t c = 2 * slot + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1] < h[c])
			c++;
		if (h[c] >= key)
			break;
		h[slot] = h[c];
		slot = c;
	}
	h[slot] = key;
	return top;
}

/* Sets part's rank and queues its key; -1 on no memory. */
static int
bpe_set(struct kvp_tokenizer *t, struct bpe_q *q, uint32_t part, uint32_t r)
{
	uint64_t key = (uint64_t)r << 32 | part;

	t->rank[part] = r;
	if (r == NO_RANK)
		return 0;
	if (q->head == q->n_run || key >= q->run[q->n_run - 1]) {
		if (q->head > 0 && q->n_run == t->run_cap) { /* compact */
			memmove(q->run, q->run + q->head,
			        (q->n_run - q->head) * sizeof *q->run);
			q->n_run -= q->head;
			q->head = 0;
		}
		if (kvp_grow(&t->run, &t->run_cap, q->n_run + 1,
		             sizeof *t->run) != 0)
			return -1;
		q->run = t->run;
		q->run[q->n_run++] = key;
		return 0;
	}
	if (kvp_grow(&t->heap, &t->heap_cap, q->n_heap + 1, sizeof *t->heap) !=
	    0)
		return -1;
	q->heap = t->heap;
	heap_push(q->heap, q->n_heap++, key);
	return 0;
}

/* The smallest queued key; 0 when both queues are empty. */
static int
bpe_next(struct bpe_q *q, uint64_t *key)
{
	int from_run;

	if (q->head == q->n_run && q->n_heap == 0)
		return 0;
	from_run = q->n_heap == 0 ||
	           (q->head < q->n_run && q->run[q->head] < q->heap[0]);
	if (from_run)
		*key = q->run[q->head++];
	else
		*key = heap_pop(q->heap, --q->n_heap);
	return 1;
}

/* Rank of part i merged with the part after it. */
static uint32_t
pair_rank(const struct kvp_tokenizer *t, const uint8_t *p, uint32_t len,
          uint32_t i)
{
	uint32_t j = t->next[i];

	if (j >= len)
		return NO_RANK;
	return rank_of(t, p + i, t->next[j] - i);
}

/* Merges p[0..len) (len >= 2) into parts (t->next); -1 on no memory. */
static int
bpe_merge(struct kvp_tokenizer *t, const uint8_t *p, uint32_t len)
{
	struct bpe_q q = {t->run, t->heap, 0, 0, 0};
	uint64_t key;

	for (uint32_t i = 0; i < len; i++) {
		t->next[i] = i + 1;
		t->prev[i] = i > 0 ? i - 1 : NO_RANK;
	}
	for (uint32_t i = 0; i < len; i++) {
		t->rank[i] = pair_rank(t, p, len, i);
		if (t->rank[i] != NO_RANK)
			q.run[q.n_run++] = (uint64_t)t->rank[i] << 32 | i;
	}
	for (size_t i = 1; i < q.n_run; i++)
		if (q.run[i] < q.run[i - 1]) {
			sort_keys(q.run, q.heap, q.n_run);
			break;
		}
	while (bpe_next(&q, &key)) {
		uint32_t i = (uint32_t)key, j = t->next[i];

		if (t->rank[i] != key >> 32)
			continue; /* stale */
		/* merge parts i and j: j goes */
		t->rank[j] = NO_RANK;
		t->next[i] = t->next[j];
		if (t->next[i] < len)
			t->prev[t->next[i]] = i;
		if (bpe_set(t, &q, i, pair_rank(t, p, len, i)) != 0 ||
		    (t->prev[i] != NO_RANK &&
		     bpe_set(t, &q, t->prev[i],
		             pair_rank(t, p, len, t->prev[i])) != 0))
			return -1;
	}
	return 0;
}

static int
bpe_piece(struct kvp_tokenizer *t, const uint8_t *p, size_t len,
          struct kvp_tok_ids *ids, struct kvp_diag *d)
{
	uint32_t r;

	if (t->bytes_mode) {
		for (size_t i = 0; i < len; i++)
			if (ids_push(ids, t->bytes_base + p[i], d) != 0)
				return -1;
		return 0;
	}
	r = rank_of(t, p, len);
	if (r != NO_RANK)
		return ids_push(ids, r, d);
	if (scratch(t, len, d) != 0)
		return -1;
	if (len >= 2 && bpe_merge(t, p, (uint32_t)len) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (len == 1)
		t->next[0] = 1;
	for (uint32_t a = 0; a < len; a = t->next[a]) {
		uint32_t b = t->next[a];

		r = rank_of(t, p + a, b - a);
		if (r == NO_RANK)
			return kvp_diag_set(d, 0,
			                    "byte sequence (first byte 0x%02x, "
			                    "%u bytes) has no rank in the "
			                    "vocabulary",
			                    p[a], b - a);
		if (ids_push(ids, r, d) != 0)
			return -1;
	}
	return 0;
}

/*
 * PCRE2's JIT matcher runs on a stack of its own, 32 KiB by default. The
 * Kimi pattern's lookahead classes take about 8 bytes of it per byte of a
 * letter run (PCRE2 10.42: a run of 4,092 letters overflowed it), so a
 * text over 2 KiB gets a stack of 12 bytes per byte plus 64 KiB, grown
 * for a longer text and kept (PCRE2 maps it lazily: only the depth a
 * match reaches is touched). A match that still overflows is run again
 * by the interpreter.
 */
static pcre2_match_context *
jit_context(struct kvp_tokenizer *t, size_t len)
{
	pcre2_jit_stack *js;
	size_t need;

	if (!t->jit || len <= 2048)
		return NULL;
	need = len < (SIZE_MAX - 65536) / 12 ? 12 * len + 65536 : SIZE_MAX / 2;
	if (need <= t->jstack_max)
		return t->mctx;
	if (t->mctx == NULL &&
	    (t->mctx = pcre2_match_context_create(NULL)) == NULL)
		return NULL;
	js = pcre2_jit_stack_create(32768, need, NULL);
	if (js == NULL) /* no memory: the interpreter takes over */
		return t->mctx;
	pcre2_jit_stack_free(t->jstack);
	t->jstack = js;
	t->jstack_max = need;
	pcre2_jit_stack_assign(t->mctx, NULL, js);
	return t->mctx;
}

/* The next match at or after pos: pcre2_match's return code. */
static int
match_at(struct kvp_tokenizer *t, const char *text, size_t len, size_t pos,
         pcre2_match_context *mc)
{
	int rc = PCRE2_ERROR_JIT_STACKLIMIT;

	if (t->jit)
		rc = pcre2_jit_match(t->re, (PCRE2_SPTR)text, len, pos, 0,
		                     t->md, mc);
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
		rc = pcre2_match(t->re, (PCRE2_SPTR)text, len, pos,
		                 PCRE2_NO_JIT, t->md, NULL);
	return rc;
}

int
kvp_tok_split(struct kvp_tokenizer *t, const char *text, size_t len,
              kvp_tok_piece_fn fn, void *ctx, struct kvp_diag *d)
{
	size_t pos = 0;
	pcre2_match_context *mc = jit_context(t, len);

	while (pos < len) {
		int rc = match_at(t, text, len, pos, mc);
		PCRE2_SIZE *ov;
		size_t s, e;

		if (rc == PCRE2_ERROR_NOMATCH) {
			s = e = len;
		} else if (rc < 0) {
			PCRE2_UCHAR msg[120];

			pcre2_get_error_message(rc, msg, sizeof msg);
			return kvp_diag_set(d, (long)pos + 1, "split: %s",
			                    (const char *)msg);
		} else {
			ov = pcre2_get_ovector_pointer(t->md);
			s = ov[0];
			e = ov[1];
		}
		if (s > pos && fn(ctx, text + pos, s - pos) != 0)
			return -1;
		if (s == len)
			break;
		if (e == s) /* empty match: take one byte */
			e = s + 1;
		if (fn(ctx, text + s, e - s) != 0)
			return -1;
		pos = e;
	}
	return 0;
}

struct enc_ctx {
	struct kvp_tokenizer *t;
	struct kvp_tok_ids *ids;
	struct kvp_diag *d;
};

static int
enc_piece(void *vctx, const char *piece, size_t len)
{
	struct enc_ctx *c = vctx;

	return bpe_piece(c->t, (const uint8_t *)piece, len, c->ids, c->d);
}

static int
encode_ordinary(struct kvp_tokenizer *t, const char *text, size_t len,
                struct kvp_tok_ids *ids, struct kvp_diag *d)
{
	struct enc_ctx c = {t, ids, d};

	if (len == 0)
		return 0;
	if (t->bytes_mode)
		return bpe_piece(t, (const uint8_t *)text, len, ids, d);
	return kvp_tok_split(t, text, len, enc_piece, &c, d);
}

int
kvp_tok_encode(struct kvp_tokenizer *t, const char *text, size_t len,
               int allow_special, struct kvp_tok_ids *ids, struct kvp_diag *d)
{
	size_t pos = 0;

	if (!allow_special || t->n_sp == 0)
		return encode_ordinary(t, text, len, ids, d);
	while (pos < len) {
		size_t at;
		const struct special *s = find_special(t, text, len, pos, &at);

		if (s == NULL)
			return encode_ordinary(t, text + pos, len - pos, ids,
			                       d);
		if (encode_ordinary(t, text + pos, at - pos, ids, d) != 0 ||
		    ids_push(ids, s->id, d) != 0)
			return -1;
		pos = at + s->len;
	}
	return 0;
}

const char *
kvp_tok_lib_version(void)
{
	static char v[64];

	if (v[0] == '\0' && pcre2_config(PCRE2_CONFIG_VERSION, v) < 0)
		v[0] = '\0';
	return v;
}
