/* SPDX-License-Identifier: MIT */
/* base64.c — strict base64 decoder (see base64.h). */
#include "common/base64.h"

#include <stdint.h>

/* 0..63 for alphabet characters, 64 for '=', 255 for anything else. */
/* clang-format off */
static const uint8_t b64_val[256] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,  62, 255, 255, 255,  63,
     52,  53,  54,  55,  56,  57,  58,  59,  60,  61, 255, 255, 255,  64, 255, 255,
    255,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
     15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25, 255, 255, 255, 255, 255,
    255,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
     41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};
/* clang-format on */

size_t
kvp_base64_decoded_max(size_t len)
{
	return len / 4 * 3 + 3;
}

int
kvp_base64_decode(const char *s, size_t len, unsigned char *out, size_t *outlen,
                  struct kvp_diag *d)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = len, i, o = 0, rem;
	uint32_t acc;

	/* Strip up to two '=' of padding; the rest must be alphabet only. */
	if (n % 4 == 0 && n > 0 && p[n - 1] == '=') {
		n--;
		if (p[n - 1] == '=')
			n--;
	}
	for (i = 0; i + 4 <= n; i += 4) {
		uint8_t a = b64_val[p[i]], b = b64_val[p[i + 1]],
		        c = b64_val[p[i + 2]], e = b64_val[p[i + 3]];

		if ((a | b | c | e) >= 64)
			goto bad_char;
		acc = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 |
		      e;
		out[o++] = (unsigned char)(acc >> 16);
		out[o++] = (unsigned char)(acc >> 8);
		out[o++] = (unsigned char)acc;
	}
	rem = n - i;
	if (rem == 1) {
		if (b64_val[p[i]] >= 64)
			goto bad_char;
		return kvp_diag_set(d, (long)len,
		                    "invalid base64: truncated (length %zu "
		                    "leaves one stray character)",
		                    len);
	}
	if (rem >= 2) {
		uint8_t a = b64_val[p[i]], b = b64_val[p[i + 1]],
		        c = rem == 3 ? b64_val[p[i + 2]] : 0;

		if ((a | b | c) >= 64)
			goto bad_char;
		acc = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
		if ((rem == 2 && (b & 0x0f)) || (rem == 3 && (c & 0x03)))
			return kvp_diag_set(d, (long)(i + rem),
			                    "invalid base64: non-zero padding "
			                    "bits (not canonical)");
		out[o++] = (unsigned char)(acc >> 16);
		if (rem == 3)
			out[o++] = (unsigned char)(acc >> 8);
	}
	*outlen = o;
	return 0;
bad_char:
	for (; i < len; i++) {
		if (b64_val[p[i]] >= 64) {
			if (p[i] == '=')
				return kvp_diag_set(
				    d, (long)i + 1,
				    "invalid base64: '=' padding before the "
				    "end (offset %zu)",
				    i + 1);
			if (p[i] >= 0x20 && p[i] < 0x7f)
				return kvp_diag_set(
				    d, (long)i + 1,
				    "invalid base64: character '%c' at "
				    "offset %zu",
				    p[i], i + 1);
			return kvp_diag_set(d, (long)i + 1,
			                    "invalid base64: byte 0x%02x at "
			                    "offset %zu",
			                    p[i], i + 1);
		}
	}
	return kvp_diag_set(d, 0, "invalid base64");
}

void
kvp_base64_encode(const unsigned char *p, size_t n, char *out)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i = 0;

	for (; i + 3 <= n; i += 3, out += 4) {
		uint32_t v =
		    (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[0] = abc[v >> 18];
		out[1] = abc[(v >> 12) & 63];
		out[2] = abc[(v >> 6) & 63];
		out[3] = abc[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		out[0] = abc[v >> 18];
		out[1] = abc[(v >> 12) & 63];
		out[2] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
		out[3] = '=';
	}
}
