/* SPDX-License-Identifier: MIT */
/* num.c — strict whole-string number parsing (strtonum-style). */
#include "common/num.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

int
kvp_num_parse_u64(const char *s, uint64_t max, uint64_t *out,
                  const char **errstr)
{
	char *end;
	unsigned long long v;
	int base = 10;

	*errstr = "invalid";
	if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (*s == '\0' || *s == '-' || *s == '+')
			return -1;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (*end != '\0')
		return -1;
	if (errno == ERANGE || v > max) {
		*errstr = "too large";
		return -1;
	}
	*out = v;
	*errstr = NULL;
	return 0;
}

int
kvp_num_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out,
                  const char **errstr)
{
	char *end;
	long long v;

	*errstr = "invalid";
	if (s == NULL || *s == '\0' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return -1;
	if ((errno == ERANGE && v == LLONG_MIN) || v < min) {
		*errstr = "too small";
		return -1;
	}
	if (errno == ERANGE || v > max) {
		*errstr = "too large";
		return -1;
	}
	*out = v;
	*errstr = NULL;
	return 0;
}

int
kvp_num_parse_double(const char *s, double *out, const char **errstr)
{
	char *end;
	double v;

	*errstr = "invalid";
	if (s == NULL || *s == '\0' || *s == ' ')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v))
		return -1;
	if (errno == ERANGE) {
		*errstr = "out of range";
		return -1;
	}
	*out = v;
	*errstr = NULL;
	return 0;
}
