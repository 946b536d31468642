/* SPDX-License-Identifier: MIT */
/*
 * dataurl.h — RFC 2397 data: URLs and a strict RFC 4648 base64 decoder.
 */
#ifndef KVP_DATAURL_H
#define KVP_DATAURL_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

/* 1 if s (len bytes) starts with "data:" (case-insensitive scheme). */
int kvp_dataurl_is(const char *s, size_t len);

/*
 * Decodes standard-alphabet base64 (A-Z a-z 0-9 + /). '=' padding is
 * optional but, if present, must be complete and final; any other byte
 * (whitespace included) is an error. out must hold
 * kvp_dataurl_b64_maxlen(len) bytes. Returns 0 with *outlen set, or -1 with
 * d->msg and d->col (1-based offset in the input) set.
 */
size_t kvp_dataurl_b64_maxlen(size_t len);
int kvp_dataurl_b64_decode(const char *in, size_t len, uint8_t *out,
                           size_t *outlen, struct kvp_diag *d);

/*
 * Splits "data:[mediatype][;params][;base64],payload". Sets *media /
 * *media_len to the mediatype (may be empty), *payload / *payload_len to the
 * bytes after the first ',', and *is_b64 when the last parameter before ','
 * is "base64". Returns 0, or -1 (no "data:" scheme or no ',').
 */
int kvp_dataurl_split(const char *url, size_t len, const char **media,
                      size_t *media_len, const char **payload,
                      size_t *payload_len, int *is_b64, struct kvp_diag *d);

#endif
