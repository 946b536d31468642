/* SPDX-License-Identifier: MIT */
/* diag.c — struct kvp_diag: how lib/ reports a failure without printing. */
#include "common/diag.h"

#include <stdio.h>

int
kvp_diag_set(struct kvp_diag *d, long col, const char *fmt, ...)
{
	va_list ap;

	if (d == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
	d->col = col;
	return -1;
}

void
kvp_diag_clear(struct kvp_diag *d)
{
	d->msg[0] = '\0';
	d->col = 0;
}
