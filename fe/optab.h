/* SPDX-License-Identifier: MIT */
/*
 * optab.h — table-driven options. One table (struct kvp_optab, one entry
 * per option, alias or group heading) gives argp its options and says how
 * each option's value is parsed, checked and kept: in which field of the
 * struct the tool's parser fills (an offset), as what kind of value. The
 * tool's parse_opt hands its keys to kvp_optab_find() and the entries to
 * kvp_optab_parse(); entries of kind KVP_OT_OWN are its own to parse.
 *
 * Values are parsed by cli.h's option-value parsers, and the messages are
 * theirs ("--NAME: value is ...: 'ARG'", "--NAME: unknown WHAT 'ARG'
 * (choices: ...)"), or "--NAME: must be > 0", "--NAME: must be >= 0",
 * "--NAME: must be in [0, 1)", "--NAME: must be in [0, 1]"; NAME is the
 * entry's (an alias's value is named by the option it aliases).
 */
#ifndef KVP_FE_OPTAB_H
#define KVP_FE_OPTAB_H

#include <argp.h>
#include <stddef.h>
#include <stdint.h>

enum kvp_optab_kind {
	KVP_OT_OWN = 0,    /* the tool's to parse (and headings, aliases) */
	KVP_OT_FLAG,       /* int, set to 1 */
	KVP_OT_STR,        /* const char *: the value */
	KVP_OT_WORD,       /* int: the value's index in words */
	KVP_OT_U64,        /* uint64_t, at most max */
	KVP_OT_SIZE,       /* size_t, at most max */
	KVP_OT_MS,         /* uint64_t: whole seconds, kept in ms */
	KVP_OT_MS_D,       /* the same, multiplied as a double */
	KVP_OT_NONNEG,     /* double, >= 0 */
	KVP_OT_BLOCK_SIZE, /* uint32_t: a block size (kvp_opt_block_size) */
};

/* Checks of a value once kept. */
enum {
	KVP_OT_POS = 1, /* > 0 (integers) */
	KVP_OT_LT1 = 2, /* < 1 (doubles) */
	KVP_OT_LE1 = 4, /* <= 1 (doubles) */
};

struct kvp_optab {
	struct argp_option a;     /* its key is given by kvp_optab_init() */
	int kind;                 /* enum kvp_optab_kind */
	size_t off;               /* the field */
	uint64_t max;             /* U64, SIZE: the largest value; OWN: the
	                             tool's */
	int check;                /* KVP_OT_POS, ... */
	size_t set;               /* an int field also set to 1 (0: none) */
	const char *what;         /* WORD: what the words are, for messages */
	const char *const *words; /* WORD: the choices, NULL-terminated */
};

/* The keys the table's options get: KVP_OPTAB_KEY0 + their index. */
#define KVP_OPTAB_KEY0 0x100

/* Fills argp's options[0, n] from t[0, n) (options[n] zeroed): each
 * option's key is KVP_OPTAB_KEY0 + its index; aliases and headings keep
 * key 0. */
void kvp_optab_init(const struct kvp_optab *t, size_t n,
                    struct argp_option *options);

/* The option of t[0, n) that key stands for, or NULL. */
const struct kvp_optab *kvp_optab_find(const struct kvp_optab *t, size_t n,
                                       int key);

/* Parses arg as e says (e->kind not KVP_OT_OWN) into the struct at base;
 * a bad value is argp_error() (exit 2). */
void kvp_optab_parse(struct argp_state *st, const struct kvp_optab *e,
                     void *base, const char *arg);

#endif
