/* SPDX-License-Identifier: MIT */
/* dataurl.c — data: URLs and base64 (see dataurl.h). */
#include "dataurl.h"

#include <string.h>
#include <strings.h>

int
kvp_dataurl_is(const char *s, size_t len)
{
	return len >= 5 && strncasecmp(s, "data:", 5) == 0;
}

size_t
kvp_dataurl_b64_maxlen(size_t len)
{
	return len / 4 * 3 + 3;
}

static int
b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int
kvp_dataurl_b64_decode(const char *in, size_t len, uint8_t *out, size_t *outlen,
                       struct kvp_diag *d)
{
	size_t i, n = 0, pad = 0, data;
	uint32_t acc = 0;
	int bits = 0;

	while (pad < len && pad < 2 && in[len - 1 - pad] == '=')
		pad++;
	data = len - pad;
	if (pad > 0 && len % 4 != 0)
		return kvp_diag_set(d, (long)len,
		                    "invalid base64: incomplete padding");
	if (data % 4 == 1)
		return kvp_diag_set(d, (long)len,
		                    "invalid base64: truncated input");
	for (i = 0; i < data; i++) {
		int v = b64val((unsigned char)in[i]);

		if (v < 0)
			return kvp_diag_set(d, (long)i + 1,
			                    "invalid base64 byte 0x%02x at "
			                    "offset %zu",
			                    (unsigned char)in[i], i);
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	/* Leftover bits must be zero (canonical encoding). */
	if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
		return kvp_diag_set(d, (long)data,
		                    "invalid base64: non-zero trailing bits");
	*outlen = n;
	return 0;
}

int
kvp_dataurl_split(const char *url, size_t len, const char **media,
                  size_t *media_len, const char **payload, size_t *payload_len,
                  int *is_b64, struct kvp_diag *d)
{
	const char *comma, *semi, *p;

	if (!kvp_dataurl_is(url, len))
		return kvp_diag_set(d, 0, "not a data: URL");
	comma = memchr(url, ',', len);
	if (comma == NULL)
		return kvp_diag_set(d, 0, "data: URL without ','");
	p = url + 5;
	semi = memchr(p, ';', (size_t)(comma - p));
	*media = p;
	*media_len = (size_t)((semi != NULL ? semi : comma) - p);
	*is_b64 = (size_t)(comma - p) >= 7 &&
	          strncasecmp(comma - 7, ";base64", 7) == 0;
	*payload = comma + 1;
	*payload_len = len - (size_t)(comma + 1 - url);
	return 0;
}
