/* SPDX-License-Identifier: MIT */
/*
 * dataurl.h — RFC 2397 data: URLs (decode the payload with base64.h).
 */
#ifndef KVP_DATAURL_H
#define KVP_DATAURL_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

/* 1 if s (len bytes) starts with "data:" (case-insensitive scheme). */
int kvp_dataurl_is(const char *s, size_t len);

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
