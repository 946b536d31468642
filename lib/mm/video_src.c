/* SPDX-License-Identifier: MIT */
/* video_src.c — videos from files (mapped) and data: URLs, and the file
 * cache (mm_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/blockhash.h"
#include "common/util.h"
#include "mm/dataurl.h"
#include "mm/mm_internal.h"
#include "mm/video.h"

void
kvp_vidsrc_init(struct kvp_vidsrc *s, size_t max_bytes)
{
	memset(s, 0, sizeof *s);
	s->max_bytes = max_bytes;
}

void
kvp_vidsrc_fini(struct kvp_vidsrc *s)
{
	free(s->bytes);
	s->bytes = NULL;
	s->bytes_cap = 0;
	for (int i = 0; i < KVP_VIDSRC_SLOTS; i++) {
		free(s->cache[i].path);
		s->cache[i].path = NULL;
	}
}

static struct kvp_vidsrc_slot *
slot_of(struct kvp_vidsrc *s, const char *path)
{
	return &s->cache[kvp_hash_bytes(path, strlen(path), 0) %
	                 KVP_VIDSRC_SLOTS];
}

static int
slot_fresh(const struct kvp_vidsrc_slot *c, const char *path,
           const struct stat *st)
{
	return c->path != NULL && strcmp(c->path, path) == 0 &&
	       c->dev == st->st_dev && c->ino == st->st_ino &&
	       c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec &&
	       c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void
slot_store(struct kvp_vidsrc_slot *c, const char *path, const struct stat *st,
           const struct kvp_video_info *info, uint64_t hash)
{
	free(c->path);
	c->path = strdup(path);
	if (c->path == NULL)
		return;
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->size = st->st_size;
	c->mtime = st->st_mtim;
	c->info = *info;
	c->hash = hash;
}

/* Maps an open regular file, probes and hashes it. */
static int
probe_fd(struct kvp_vidsrc *s, int fd, const char *path, const struct stat *st,
         struct kvp_video_info *info, uint64_t *hash, struct kvp_diag *d)
{
	struct kvp_diag vd;
	void *p;
	int rc;

	if ((uint64_t)st->st_size > s->max_bytes)
		return kvp_diag_set(d, 0,
		                    "%s: %lld bytes, over the video size "
		                    "limit of %zu",
		                    path, (long long)st->st_size, s->max_bytes);
	if (st->st_size == 0)
		return kvp_diag_set(d, 0, "%s: empty file", path);
	p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return kvp_diag_set(d, 0, "%s: %s", path, strerror(errno));
	rc = kvp_video_probe(p, (size_t)st->st_size, info, &vd);
	if (rc == 0)
		*hash = kvp_hash_bytes(p, (size_t)st->st_size, 0);
	munmap(p, (size_t)st->st_size);
	if (rc != 0)
		return kvp_diag_set(d, 0, "%s: %s", path, vd.msg);
	return 0;
}

int
kvp_vidsrc_file(struct kvp_vidsrc *s, const char *path,
                struct kvp_video_info *info, uint64_t *hash, struct kvp_diag *d)
{
	struct stat st;
	struct kvp_vidsrc_slot *c;
	int fd, rc;

	/* As for images: only a regular file is opened (never a FIFO). */
	if (stat(path, &st) != 0)
		return kvp_diag_set(d, 0, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return kvp_diag_set(d, 0, "%s: not a regular file", path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return kvp_diag_set(d, 0, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return kvp_diag_set(d, 0, "%s: not a regular file", path);
	}
	c = slot_of(s, path);
	if (slot_fresh(c, path, &st)) {
		close(fd);
		*info = c->info;
		*hash = c->hash;
		return 0;
	}
	rc = probe_fd(s, fd, path, &st, info, hash, d);
	close(fd);
	if (rc != 0)
		return -1;
	slot_store(c, path, &st, info, *hash);
	return 0;
}

int
kvp_vidsrc_dataurl(struct kvp_vidsrc *s, const char *url, size_t len,
                   struct kvp_video_info *info, struct kvp_diag *d)
{
	const char *media, *payload;
	size_t media_len, payload_len, n;
	int b64;
	struct kvp_diag vd;
	const uint8_t *bytes;

	if (kvp_dataurl_split(url, len, &media, &media_len, &payload,
	                      &payload_len, &b64, d) != 0)
		return -1;
	if (b64) {
		n = kvp_base64_decoded_max(payload_len);
		if (n > s->max_bytes)
			return kvp_diag_set(d, 0,
			                    "data: URL payload over the video "
			                    "size limit of %zu bytes",
			                    s->max_bytes);
		if (kvp_grow(&s->bytes, &s->bytes_cap, n + 1, 1) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		if (kvp_base64_decode(payload, payload_len, s->bytes, &n,
		                      &vd) != 0)
			return kvp_diag_set(d, 0, "data: URL: %s", vd.msg);
		bytes = s->bytes;
	} else {
		bytes = (const uint8_t *)payload;
		n = payload_len;
	}
	if (kvp_video_probe(bytes, n, info, &vd) != 0)
		return kvp_diag_set(d, 0, "data: URL: %s", vd.msg);
	return 0;
}
