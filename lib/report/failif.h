/* SPDX-License-Identifier: MIT */
/*
 * failif.h — the tiny expression grammar of kv-diff's --fail-if, over
 * named numeric fields (a summary record's):
 *
 *	expr    := and { "||" and }
 *	and     := primary { "&&" primary }
 *	primary := "(" expr ")" | value OP value
 *	value   := FIELD | NUMBER           (NUMBER as strtod reads it)
 *	OP      := "<" | "<=" | ">" | ">=" | "==" | "!="
 *
 * Spaces and tabs separate tokens anywhere. A FIELD is one of the names
 * the caller lists. Parentheses nest at most KVP_FAILIF_MAX_DEPTH deep.
 * Compilation fails with d->col the 1-based position of
 * the offending character and a message saying what was expected there.
 */
#ifndef KVP_FAILIF_H
#define KVP_FAILIF_H

#include <stddef.h>

#include "common/diag.h"

#define KVP_FAILIF_MAX_NODES 64
/* Parentheses nest at most this deep (the parser recurses per level). */
#define KVP_FAILIF_MAX_DEPTH 32

struct kvp_failif_node {
	int op;    /* an enum in failif.c */
	int a, b;  /* operands: child nodes, or value slots */
	int field; /* value: field index, or -1 for a number */
	double num;
};

struct kvp_failif {
	struct kvp_failif_node n[KVP_FAILIF_MAX_NODES];
	int count, root;
};

/* Returns KVP_OK, or KVP_BAD with d set (d->col: 1-based position). */
int kvp_failif_compile(struct kvp_failif *e, const char *src,
                       const char *const *fields, size_t n_fields,
                       struct kvp_diag *d);

/* 1 when the expression holds for vals[i] (the value of fields[i]). */
int kvp_failif_eval(const struct kvp_failif *e, const double *vals);

#endif
