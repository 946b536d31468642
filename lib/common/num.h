/* SPDX-License-Identifier: MIT */
/* num.h — strict number parsing for option values and text fields. */
#ifndef KVP_NUM_H
#define KVP_NUM_H

#include <stdint.h>

/*
 * Number parsing for option values (strtonum-style): the whole string must
 * be a number within [min, max]. Accept decimal; kvp_num_parse_u64 also accepts
 * 0x hex. Return 0, or -1 with *errstr set to "invalid", "too small" or
 * "too large".
 */
int kvp_num_parse_u64(const char *s, uint64_t max, uint64_t *out,
                      const char **errstr);
int kvp_num_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out,
                      const char **errstr);
int kvp_num_parse_double(const char *s, double *out, const char **errstr);

#endif
