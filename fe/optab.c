/* SPDX-License-Identifier: MIT */
/* optab.c — table-driven options. See optab.h. */
#include "fe/optab.h"

#include <stdio.h>

#include "fe/cli.h"

void
kvp_optab_init(const struct kvp_optab *t, size_t n, struct argp_option *options)
{
	for (size_t i = 0; i < n; i++) {
		options[i] = t[i].a;
		if (t[i].a.name != NULL && !(t[i].a.flags & OPTION_ALIAS))
			options[i].key = KVP_OPTAB_KEY0 + (int)i;
	}
	options[n] = (struct argp_option){0};
}

const struct kvp_optab *
kvp_optab_find(const struct kvp_optab *t, size_t n, int key)
{
	if (key < KVP_OPTAB_KEY0 || (size_t)(key - KVP_OPTAB_KEY0) >= n)
		return NULL;
	return &t[key - KVP_OPTAB_KEY0];
}

static double
opt_nonneg(struct argp_state *st, const char *opt, const char *arg)
{
	double v = kvp_opt_double(st, opt, arg);

	if (!(v >= 0))
		argp_error(st, "%s: must be >= 0", opt);
	return v;
}

/* Whole seconds (kept in ms by the caller). */
static uint64_t
opt_seconds(struct argp_state *st, const char *opt, const char *arg)
{
	return kvp_opt_u64(st, opt, arg, UINT64_MAX / 1000);
}

void
kvp_optab_parse(struct argp_state *st, const struct kvp_optab *e, void *base,
                const char *arg)
{
	char name[128], *p = (char *)base + e->off;
	uint64_t u = 1;
	double v = 0;

	snprintf(name, sizeof(name), "--%s", e->a.name);
	switch (e->kind) {
	case KVP_OT_FLAG:
		*(int *)p = 1;
		break;
	case KVP_OT_STR:
		*(const char **)p = arg;
		break;
	case KVP_OT_WORD:
		*(int *)p = kvp_opt_keyword(st, name, e->what, arg, e->words);
		break;
	case KVP_OT_U64:
		*(uint64_t *)p = u = kvp_opt_u64(st, name, arg, e->max);
		break;
	case KVP_OT_SIZE:
		*(size_t *)p = (size_t)(u = kvp_opt_u64(st, name, arg, e->max));
		break;
	case KVP_OT_MS:
		*(uint64_t *)p = u = opt_seconds(st, name, arg) * 1000;
		break;
	case KVP_OT_MS_D:
		*(uint64_t *)p = u =
		    (uint64_t)((double)opt_seconds(st, name, arg) * 1000);
		break;
	case KVP_OT_NONNEG:
		*(double *)p = v = opt_nonneg(st, name, arg);
		break;
	case KVP_OT_BLOCK_SIZE:
		*(uint32_t *)p = kvp_opt_block_size(st, arg);
		break;
	}
	if ((e->check & KVP_OT_POS) && u == 0)
		argp_error(st, "%s: must be > 0", name);
	if ((e->check & KVP_OT_LT1) && v >= 1)
		argp_error(st, "%s: must be in [0, 1)", name);
	if ((e->check & KVP_OT_LE1) && v > 1)
		argp_error(st, "%s: must be in [0, 1]", name);
	if (e->set != 0)
		*(int *)((char *)base + e->set) = 1;
}
