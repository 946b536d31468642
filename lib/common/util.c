/* SPDX-License-Identifier: MIT */
/* util.c — small helpers shared by lib/ modules (see util.h). */
#include "common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
kvp_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void *p, *np;
	size_t nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 16;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -1;
		nc *= 2;
	}
	memcpy(&p, pp, sizeof p);
	np = reallocarray(p, nc, elem);
	if (np == NULL)
		return -1;
	memcpy(pp, &np, sizeof np);
	*cap = nc;
	return 0;
}

int
kvp_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
