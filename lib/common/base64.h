/* SPDX-License-Identifier: MIT */
/*
 * base64.h — strict RFC 4648 base64 decoding (standard alphabet).
 *
 * Accepted: the alphabet A-Z a-z 0-9 + /, '=' padding at the end (optional:
 * unpadded input of length 4k+2 or 4k+3 is accepted). Rejected, with the
 * 1-based offset of the offending character in d->col: any other byte
 * (whitespace included), padding in the middle, a length of 4k+1, and
 * non-zero bits in the last character's unused low bits (non-canonical).
 */
#ifndef KVP_BASE64_H
#define KVP_BASE64_H

#include <stddef.h>

#include "common/diag.h"

/* Bytes needed to decode len characters (an upper bound). */
size_t kvp_base64_decoded_max(size_t len);

/* Decodes s[0, len) into out (at least kvp_base64_decoded_max(len) bytes).
 * Returns 0 with *outlen set, or -1 with d set ("invalid base64: ..."). */
int kvp_base64_decode(const char *s, size_t len, unsigned char *out,
                      size_t *outlen, struct kvp_diag *d);

/* Bytes kvp_base64_encode() writes for n input bytes (padded). */
static inline size_t
kvp_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Writes the padded standard base64 of p[0, n) at out (no NUL). */
void kvp_base64_encode(const unsigned char *p, size_t n, char *out);

#endif
