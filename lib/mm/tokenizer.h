/* SPDX-License-Identifier: MIT */
/*
 * tokenizer.h — a tiktoken-compatible byte-pair encoder.
 *
 * Vocabulary: a tiktoken rank file ("tiktoken.model"): one
 * "BASE64-TOKEN SP RANK" per line; the rank is the token id. Special tokens
 * are a separate name -> id table (Kimi's built-in one, or added one by
 * one). Encoding: when specials are allowed, the leftmost (then longest)
 * special token is matched atomically and emitted as its id; the text
 * between specials is pre-tokenized with a PCRE2 split pattern (Kimi's by
 * default; cl100k_base, o200k_base and Qwen's available by name) and
 * each piece is encoded by lowest-rank-first byte-pair merging, as
 * tiktoken does.
 *
 * bytes mode (kvp_tok_set_bytes) is the stand-in tokenizer of
 * docs/spec/mm-expand.md §7.5 test 21: every byte b of ordinary text becomes
 * BASE + b, with no split and no vocabulary. Specials still apply.
 *
 * Not thread-safe (the tokenizer owns one PCRE2 match block).
 */
#ifndef KVP_TOKENIZER_H
#define KVP_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

struct kvp_tokenizer;

/* A growing id buffer; zero-initialise, kvp_tok_ids_free when done. */
struct kvp_tok_ids {
	uint32_t *v;
	size_t n, cap;
};
void kvp_tok_ids_free(struct kvp_tok_ids *ids);
/* Appends one id; -1 on no memory. */
int kvp_tok_ids_push(struct kvp_tok_ids *ids, uint32_t v);

/* Split patterns by name: "kimi", "cl100k", "o200k", "qwen" (cl100k's with
 * single digits); NULL otherwise. */
const char *kvp_tok_pattern(const char *name);

/* Version of the linked PCRE2, for --version. */
const char *kvp_tok_lib_version(void);

/* New tokenizer with a split pattern: a name known to kvp_tok_pattern(),
 * a PCRE2 regex, or NULL for Kimi's. No ranks, no specials yet. Returns
 * NULL with d set on a pattern that does not compile or no memory. */
struct kvp_tokenizer *kvp_tok_new(const char *pattern, struct kvp_diag *d);
void kvp_tok_free(struct kvp_tokenizer *t);

/* Switch to bytes mode: byte b -> base + b. */
void kvp_tok_set_bytes(struct kvp_tokenizer *t, uint32_t base);

/* Loads a tiktoken rank file from memory / from a path (the file is read
 * whole). Errors name the 1-based line in d->col. Duplicate tokens and
 * duplicate ranks (as tiktoken) are errors, and so is a file with no
 * token (d->col 0; from a path, the message names it). Returns 0 or -1. */
int kvp_tok_load_ranks(struct kvp_tokenizer *t, const char *data, size_t len,
                       struct kvp_diag *d);
int kvp_tok_load_ranks_file(struct kvp_tokenizer *t, const char *path,
                            struct kvp_diag *d);
size_t kvp_tok_vocab_size(const struct kvp_tokenizer *t);
/* Empties the vocabulary (specials, pattern and bytes mode stay), so a
 * tokenizer can load another rank file. */
void kvp_tok_clear_ranks(struct kvp_tokenizer *t);

/* Specials. add: a non-empty name; a later add of the same name replaces
 * the id. kimi: the 256 reserved ids 163584..163839 with Kimi K2 and K3
 * names (both name sets, spec §5), unnamed ones <|reserved_token_ID|>. */
int kvp_tok_add_special(struct kvp_tokenizer *t, const char *name, size_t len,
                        uint32_t id, struct kvp_diag *d);
int kvp_tok_add_kimi_specials(struct kvp_tokenizer *t, struct kvp_diag *d);
void kvp_tok_clear_specials(struct kvp_tokenizer *t);
/*
 * Replaces the specials with a table read from a JSON file: an object
 * {"<|name|>": id, ...}, or a tokenizer_config.json-style object with
 * "added_tokens_decoder": {"id": {"content": "<|name|>"}, ...}. Returns
 * 0, or -1 with d set (messages name the path).
 */
int kvp_tok_load_specials(struct kvp_tokenizer *t, const char *path,
                          struct kvp_diag *d);
/* id of an exact special name, or -1. */
int64_t kvp_tok_special_id(const struct kvp_tokenizer *t, const char *name);

/* Appends the ids of text[0..len) to ids. Returns 0, or -1 with d set (a
 * byte sequence with no rank, no memory). Merging is O(n log n) in a
 * piece's length (linear when each merge's candidates come in order, as
 * in a run of one token); scratch, kept for the next call, is 28 to 52
 * bytes per byte of the longest piece. */
int kvp_tok_encode(struct kvp_tokenizer *t, const char *text, size_t len,
                   int allow_special, struct kvp_tok_ids *ids,
                   struct kvp_diag *d);

/* Pre-tokenization only: calls fn for each piece of text[0..len) (no
 * special-token handling). Bytes no pattern alternative matches (invalid
 * UTF-8) form pieces of their own. Returns 0, or -1 with d set. */
typedef int (*kvp_tok_piece_fn)(void *ctx, const char *piece, size_t len);
int kvp_tok_split(struct kvp_tokenizer *t, const char *text, size_t len,
                  kvp_tok_piece_fn fn, void *ctx, struct kvp_diag *d);

#endif
