/* SPDX-License-Identifier: MIT */
/* image_src.c — image bytes from files and data: URLs, and the file cache
 * (mm_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/blockhash.h"
#include "common/util.h"
#include "mm/dataurl.h"
#include "mm/image.h"
#include "mm/mm_internal.h"

void
kvp_imgsrc_init(struct kvp_imgsrc *s, uint64_t max_pixels,
                size_t max_image_bytes)
{
	memset(s, 0, sizeof *s);
	s->max_pixels = max_pixels;
	s->max_image_bytes = max_image_bytes;
}

void
kvp_imgsrc_fini(struct kvp_imgsrc *s)
{
	free(s->bytes);
	s->bytes = NULL;
	s->bytes_cap = 0;
	for (int i = 0; i < KVP_IMGSRC_SLOTS; i++) {
		free(s->cache[i].path);
		s->cache[i].path = NULL;
	}
}

static int
reserve(struct kvp_imgsrc *s, size_t n, struct kvp_diag *d)
{
	if (kvp_grow(&s->bytes, &s->bytes_cap, n, 1) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}

static int
read_fd(struct kvp_imgsrc *s, int fd, size_t size, size_t *len,
        struct kvp_diag *d)
{
	size_t got = 0;

	if (reserve(s, size + 1, d) != 0)
		return -1;
	while (got < size) {
		ssize_t n = read(fd, s->bytes + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return kvp_diag_set(d, 0, "%s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*len = got;
	return 0;
}

static struct kvp_imgsrc_slot *
slot_of(struct kvp_imgsrc *s, const char *path)
{
	return &s->cache[kvp_hash_bytes(path, strlen(path), 0) %
	                 KVP_IMGSRC_SLOTS];
}

/* The slot still describes this very file (same name, inode, size, mtime). */
static int
slot_fresh(const struct kvp_imgsrc_slot *c, const char *path,
           const struct stat *st)
{
	return c->path != NULL && strcmp(c->path, path) == 0 &&
	       c->dev == st->st_dev && c->ino == st->st_ino &&
	       c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec &&
	       c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Remembers a file; without memory for the name the slot stays empty. */
static void
slot_store(struct kvp_imgsrc_slot *c, const char *path, const struct stat *st,
           const struct kvp_image_info *info, uint64_t hash)
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

/* Reads an open regular file whole and takes its header info and hash. */
static int
read_image(struct kvp_imgsrc *s, int fd, const char *path,
           const struct stat *st, struct kvp_image_info *info, uint64_t *hash,
           struct kvp_diag *d)
{
	size_t len = 0;
	struct kvp_diag id;

	if ((uint64_t)st->st_size > s->max_image_bytes)
		return kvp_diag_set(d, 0,
		                    "%s: %lld bytes, over the image size "
		                    "limit of %zu",
		                    path, (long long)st->st_size,
		                    s->max_image_bytes);
	if (read_fd(s, fd, (size_t)st->st_size, &len, d) != 0)
		return -1;
	if (kvp_image_info(s->bytes, len, s->max_pixels, 1, info, &id) != 0)
		return kvp_diag_set(d, 0, "%s: %s", path, id.msg);
	*hash = kvp_hash_bytes(s->bytes, len, 0);
	return 0;
}

int
kvp_imgsrc_file(struct kvp_imgsrc *s, const char *path,
                struct kvp_image_info *info, uint64_t *hash, struct kvp_diag *d)
{
	struct stat st;
	struct kvp_imgsrc_slot *c;
	int fd, rc;

	/* Only a regular file is opened: open() on a FIFO would wait for a
	 * writer, and opening a device can have effects. O_NONBLOCK covers
	 * a file swapped for a FIFO between stat and open; fstat rechecks. */
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
	rc = read_image(s, fd, path, &st, info, hash, d);
	close(fd);
	if (rc != 0)
		return -1;
	slot_store(c, path, &st, info, *hash);
	return 0;
}

int
kvp_imgsrc_dataurl(struct kvp_imgsrc *s, const char *url, size_t len,
                   struct kvp_image_info *info, struct kvp_diag *d)
{
	const char *media, *payload;
	size_t media_len, payload_len, n;
	int b64;
	struct kvp_diag id;
	const uint8_t *bytes;

	if (kvp_dataurl_split(url, len, &media, &media_len, &payload,
	                      &payload_len, &b64, d) != 0)
		return -1;
	if (b64) {
		if (kvp_base64_decoded_max(payload_len) > s->max_image_bytes)
			return kvp_diag_set(d, 0,
			                    "data: URL payload over the image "
			                    "size limit of %zu bytes",
			                    s->max_image_bytes);
		if (reserve(s, kvp_base64_decoded_max(payload_len), d) != 0)
			return -1;
		if (kvp_base64_decode(payload, payload_len, s->bytes, &n,
		                      &id) != 0)
			return kvp_diag_set(d, 0, "data: URL: %s", id.msg);
		bytes = s->bytes;
	} else {
		bytes = (const uint8_t *)payload;
		n = payload_len;
	}
	if (kvp_image_info(bytes, n, s->max_pixels, 1, info, &id) != 0)
		return kvp_diag_set(d, 0, "data: URL: %s", id.msg);
	return 0;
}
