/* SPDX-License-Identifier: MIT */
/*
 * failif.c — recursive descent over the --fail-if grammar into a node
 * array, and its evaluation.
 */
#include <stdlib.h>
#include <string.h>

#include "kvpipe.h"
#include "report/failif.h"

#define STR_(x) #x
#define STR(x) STR_(x)

enum { N_VALUE, N_OR, N_AND, N_LT, N_LE, N_GT, N_GE, N_EQ, N_NE };

struct parser {
	struct kvp_failif *e;
	const char *src;
	size_t i;
	const char *const *fields;
	size_t n_fields;
	struct kvp_diag *d;
	int depth; /* open parentheses around p->i */
};

static int
fail(struct parser *p, const char *what)
{
	if (p->src[p->i] == '\0')
		kvp_diag_set(p->d, (long)p->i + 1, "%s at the end", what);
	else
		kvp_diag_set(p->d, (long)p->i + 1, "%s at '%.12s'", what,
		             p->src + p->i);
	return -1;
}

static void
skip_ws(struct parser *p)
{
	while (p->src[p->i] == ' ' || p->src[p->i] == '\t')
		p->i++;
}

static int
node(struct parser *p, int op, int a, int b)
{
	struct kvp_failif *e = p->e;

	if (e->count == KVP_FAILIF_MAX_NODES)
		return fail(p, "expression too long");
	e->n[e->count] = (struct kvp_failif_node){op, a, b, -1, 0};
	return e->count++;
}

static int
is_name_char(int c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

static int
value(struct parser *p)
{
	const char *s = p->src + p->i;
	size_t k, len = 0;
	char *end;
	int v;

	skip_ws(p);
	s = p->src + p->i;
	if (is_name_char((unsigned char)*s, 1)) {
		while (is_name_char((unsigned char)s[len], 0))
			len++;
		for (k = 0; k < p->n_fields; k++)
			if (strlen(p->fields[k]) == len &&
			    memcmp(p->fields[k], s, len) == 0)
				break;
		if (k == p->n_fields)
			return fail(p, "unknown field");
		if ((v = node(p, N_VALUE, 0, 0)) < 0)
			return -1;
		p->e->n[v].field = (int)k;
		p->i += len;
		return v;
	}
	if (!(*s == '-' || *s == '+' || *s == '.' || (*s >= '0' && *s <= '9')))
		return fail(p, "expected a field name or a number");
	if ((v = node(p, N_VALUE, 0, 0)) < 0)
		return -1;
	p->e->n[v].num = strtod(s, &end);
	if (end == s)
		return fail(p, "expected a number");
	p->i += (size_t)(end - s);
	return v;
}

static int
comparison_op(struct parser *p)
{
	static const struct {
		const char *s;
		int op;
	} ops[] = {{"<=", N_LE}, {">=", N_GE}, {"==", N_EQ},
	           {"!=", N_NE}, {"<", N_LT},  {">", N_GT}};
	size_t k;

	skip_ws(p);
	for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		size_t n = strlen(ops[k].s);

		if (strncmp(p->src + p->i, ops[k].s, n) == 0) {
			p->i += n;
			return ops[k].op;
		}
	}
	return fail(p, "expected a comparison operator (< <= > >= == !=)");
}

static int expr(struct parser *p);

static int
primary(struct parser *p)
{
	int a, b, op;

	skip_ws(p);
	if (p->src[p->i] == '(') {
		if (p->depth == KVP_FAILIF_MAX_DEPTH)
			return fail(p, "parentheses nested deeper than " STR(
			                   KVP_FAILIF_MAX_DEPTH));
		p->depth++;
		p->i++;
		if ((a = expr(p)) < 0)
			return -1;
		skip_ws(p);
		if (p->src[p->i] != ')')
			return fail(p, "expected ')'");
		p->i++;
		p->depth--;
		return a;
	}
	if ((a = value(p)) < 0 || (op = comparison_op(p)) < 0 ||
	    (b = value(p)) < 0)
		return -1;
	return node(p, op, a, b);
}

static int
chain(struct parser *p, const char *tok, int op, int (*sub)(struct parser *))
{
	int a = sub(p), b;

	while (a >= 0) {
		skip_ws(p);
		if (strncmp(p->src + p->i, tok, 2) != 0)
			break;
		p->i += 2;
		if ((b = sub(p)) < 0)
			return -1;
		a = node(p, op, a, b);
	}
	return a;
}

static int
and_expr(struct parser *p)
{
	return chain(p, "&&", N_AND, primary);
}

static int
expr(struct parser *p)
{
	return chain(p, "||", N_OR, and_expr);
}

int
kvp_failif_compile(struct kvp_failif *e, const char *src,
                   const char *const *fields, size_t n_fields,
                   struct kvp_diag *d)
{
	struct parser p = {e, src, 0, fields, n_fields, d, 0};

	e->count = 0;
	e->root = expr(&p);
	if (e->root < 0)
		return KVP_BAD;
	skip_ws(&p);
	if (src[p.i] != '\0') {
		fail(&p, "expected '&&', '||' or the end");
		return KVP_BAD;
	}
	return KVP_OK;
}

static double
val(const struct kvp_failif *e, int i, const double *vals)
{
	const struct kvp_failif_node *n = &e->n[i];

	return n->field >= 0 ? vals[n->field] : n->num;
}

static int
eval(const struct kvp_failif *e, int i, const double *vals)
{
	const struct kvp_failif_node *n = &e->n[i];
	double a, b;

	if (n->op == N_OR)
		return eval(e, n->a, vals) || eval(e, n->b, vals);
	if (n->op == N_AND)
		return eval(e, n->a, vals) && eval(e, n->b, vals);
	a = val(e, n->a, vals);
	b = val(e, n->b, vals);
	switch (n->op) {
	case N_LT:
		return a < b;
	case N_LE:
		return a <= b;
	case N_GT:
		return a > b;
	case N_GE:
		return a >= b;
	case N_EQ:
		return a == b;
	default:
		return a != b;
	}
}

int
kvp_failif_eval(const struct kvp_failif *e, const double *vals)
{
	return eval(e, e->root, vals);
}
