/* SPDX-License-Identifier: MIT */
/* dataurl.c — data: URLs and base64 (see dataurl.h). */
#include "mm/dataurl.h"

#include <string.h>
#include <strings.h>

int
kvp_dataurl_is(const char *s, size_t len)
{
	return len >= 5 && strncasecmp(s, "data:", 5) == 0;
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
