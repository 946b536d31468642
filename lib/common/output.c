/* SPDX-License-Identifier: MIT */
/* output.c — plain, gzip and zstd output behind one stdio FILE *. */
#define _GNU_SOURCE 1
#include "common/output.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "kvpipe.h"

#define OUT_CAP ((size_t)1 << 17) /* compressed bytes written at a time */
#define IO_CAP ((size_t)1 << 16)  /* the FILE *'s own buffer */
#define ZSTD_LEVEL 3
/* line mode, compressed: a frame (member) ends at a line end after this
 * many input bytes, so that a file cut there is whole */
#define CKPT_BYTES ((uint64_t)1 << 20)

struct kvp_output {
	FILE *f;
	int fd;
	int own_fd;
	enum kvp_input_codec codec;
	uint64_t bytes;
	int err;                      /* sticky errno of a failed write */
	volatile sig_atomic_t cancel; /* kvp_output_cancel() was called */
	int fl_saved;                 /* the fd's flags before O_NONBLOCK */
	int nonblock;                 /* set by a cancel; undone at close */
	/* line mode (kvp_output_line_mode) */
	int lines_on;
	int can_trunc;     /* a regular file we may cut back */
	off_t base;        /* its offset when line mode began */
	uint64_t fd_bytes; /* bytes written to fd */
	uint64_t safe;     /* fd_bytes at the last whole line (frame end) */
	uint64_t lines;    /* whole lines in fd_bytes[0, safe) */
	uint64_t pending;  /* compressed: lines encoded since the frame began */
	uint64_t since;    /* compressed: input bytes since then */
	z_stream z;
	int z_ready;
	ZSTD_CStream *zs;
	unsigned char *out;
	char *iobuf;
};

enum kvp_input_codec
kvp_output_codec_for(const char *path)
{
	size_t n = path != NULL ? strlen(path) : 0;

	if (n > 3 && strcmp(path + n - 3, ".gz") == 0)
		return KVP_INPUT_GZIP;
	if (n > 4 && strcmp(path + n - 4, ".zst") == 0)
		return KVP_INPUT_ZSTD;
	return KVP_INPUT_PLAIN;
}

/* After a cancel, a write that would block fails: the descriptor is made
 * non-blocking (a regular file is not affected). */
static void
cancel_blocking(struct kvp_output *o)
{
	int fl;

	if (o->nonblock || (fl = fcntl(o->fd, F_GETFL)) < 0)
		return;
	o->fl_saved = fl;
	o->nonblock = 1;
	if ((fl & O_NONBLOCK) == 0)
		fcntl(o->fd, F_SETFL, fl | O_NONBLOCK);
}

static uint64_t
count_nl(const char *p, size_t n, const char **last)
{
	const char *e = p + n, *q;
	uint64_t k = 0;

	*last = NULL;
	while ((q = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		k++;
		*last = q;
		p = q + 1;
	}
	return k;
}

/* Plain output in line mode: the whole lines of c[0, w) reached the file. */
static void
plain_lines(struct kvp_output *o, const char *c, size_t w)
{
	const char *last;

	o->lines += count_nl(c, w, &last);
	if (last != NULL)
		o->safe = o->fd_bytes + (uint64_t)(last - c) + 1;
}

static int
write_all(struct kvp_output *o, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0 && o->err == 0) {
		ssize_t w;

		if (o->cancel)
			cancel_blocking(o);
		w = write(o->fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && o->cancel &&
		    (errno == EAGAIN || errno == EWOULDBLOCK))
			o->err = ECANCELED;
		else if (w <= 0)
			o->err = w < 0 ? errno : EIO;
		else {
			if (o->lines_on && o->codec == KVP_INPUT_PLAIN)
				plain_lines(o, c, (size_t)w);
			o->fd_bytes += (uint64_t)w;
			c += w;
			n -= (size_t)w;
		}
	}
	return o->err == 0 ? 0 : -1;
}

/* Compresses p[0, n) (fin: and ends the stream). 0 or -1. */
static int
deflate_some(struct kvp_output *o, const void *p, size_t n, int fin)
{
	z_stream *z = &o->z;
	int rc;

	z->next_in = (unsigned char *)(uintptr_t)p;
	z->avail_in = (uInt)n;
	do {
		z->next_out = o->out;
		z->avail_out = (uInt)OUT_CAP;
		rc = deflate(z, fin ? Z_FINISH : Z_NO_FLUSH);
		if (rc == Z_STREAM_ERROR) {
			o->err = EIO;
			return -1;
		}
		if (write_all(o, o->out, OUT_CAP - z->avail_out) != 0)
			return -1;
	} while (z->avail_out == 0 || (fin && rc != Z_STREAM_END));
	if (fin && o->lines_on && deflateReset(z) != Z_OK) {
		o->err = EIO; /* the next member */
		return -1;
	}
	return 0;
}

static int
zstd_some(struct kvp_output *o, const void *p, size_t n, int fin)
{
	ZSTD_inBuffer zi = {p, n, 0};
	size_t left;

	do {
		ZSTD_outBuffer zo = {o->out, OUT_CAP, 0};

		left = ZSTD_compressStream2(o->zs, &zo, &zi,
		                            fin ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left)) {
			o->err = EIO;
			return -1;
		}
		if (write_all(o, o->out, zo.pos) != 0)
			return -1;
	} while (zi.pos < zi.size || (fin && left != 0));
	return 0;
}

static int
encode(struct kvp_output *o, const char *p, size_t n, int fin)
{
	switch (o->codec) {
	case KVP_INPUT_GZIP:
		return deflate_some(o, p, n, fin);
	case KVP_INPUT_ZSTD:
		return zstd_some(o, p, n, fin);
	default:
		return write_all(o, p, n);
	}
}

/* Compressed output in line mode: p[0, n) encoded, ending the frame at
 * its last line end once CKPT_BYTES went in; each frame written whole is
 * a point the file may be cut back to. */
static int
encode_lines(struct kvp_output *o, const char *p, size_t n)
{
	const char *last;
	uint64_t k = count_nl(p, n, &last);

	if (last != NULL && o->since + (uint64_t)(last - p) + 1 >= CKPT_BYTES) {
		size_t head = (size_t)(last - p) + 1;

		if (encode(o, p, head, 1) != 0)
			return -1;
		o->lines += o->pending + k;
		o->safe = o->fd_bytes;
		o->pending = o->since = 0;
		p += head;
		n -= head;
		k = 0;
	}
	o->pending += k;
	o->since += n;
	return encode(o, p, n, 0);
}

static ssize_t
cookie_write(void *cookie, const char *p, size_t n)
{
	struct kvp_output *o = cookie;
	int rc;

	if (o->err != 0) {
		errno = o->err;
		return -1;
	}
	if (o->lines_on && o->codec != KVP_INPUT_PLAIN)
		rc = encode_lines(o, p, n);
	else
		rc = encode(o, p, n, 0);
	if (rc != 0) {
		errno = o->err;
		return -1;
	}
	o->bytes += n;
	return (ssize_t)n;
}

/* Line mode at the end: a failed file is cut back to its last whole line
 * (plain) or frame (compressed), so that it holds exactly o->lines. */
static void
end_lines(struct kvp_output *o)
{
	if (!o->lines_on)
		return;
	if (o->err == 0) {
		o->lines += o->pending;
		o->pending = 0;
		o->safe = o->fd_bytes;
	} else if (o->can_trunc && o->safe < o->fd_bytes) {
		if (ftruncate(o->fd, o->base + (off_t)o->safe) != 0)
			o->can_trunc = 0;
	}
}

static int
cookie_close(void *cookie)
{
	struct kvp_output *o = cookie;

	if (o->err == 0 && o->codec != KVP_INPUT_PLAIN)
		encode(o, NULL, 0, 1);
	end_lines(o);
	if (o->nonblock && (o->fl_saved & O_NONBLOCK) == 0)
		fcntl(o->fd, F_SETFL, o->fl_saved);
	if (o->own_fd && close(o->fd) != 0 && o->err == 0)
		o->err = errno;
	o->own_fd = 0;
	if (o->err != 0) {
		errno = o->err;
		return -1;
	}
	return 0;
}

static void
free_output(struct kvp_output *o)
{
	if (o->z_ready)
		deflateEnd(&o->z);
	ZSTD_freeCStream(o->zs);
	free(o->out);
	free(o->iobuf);
	free(o);
}

static int
start_encoder(struct kvp_output *o)
{
	if (o->codec == KVP_INPUT_GZIP) {
		/* 16 + 15: a gzip wrapper, the largest window */
		if (deflateInit2(&o->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
		                 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -1;
		o->z_ready = 1;
	} else if (o->codec == KVP_INPUT_ZSTD) {
		o->zs = ZSTD_createCStream();
		if (o->zs == NULL ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
		        o->zs, ZSTD_c_compressionLevel, ZSTD_LEVEL)))
			return -1;
	}
	return 0;
}

struct kvp_output *
kvp_output_open_fd(int fd, int own, enum kvp_input_codec codec,
                   struct kvp_diag *d)
{
	static const cookie_io_functions_t io = {NULL, cookie_write, NULL,
	                                         cookie_close};
	struct kvp_output *o = calloc(1, sizeof *o);

	if (o == NULL || (o->out = malloc(OUT_CAP)) == NULL ||
	    (o->iobuf = malloc(IO_CAP)) == NULL) {
		if (o != NULL)
			free_output(o);
		goto nomem;
	}
	o->fd = fd;
	o->codec = codec;
	if (start_encoder(o) != 0 || (o->f = fopencookie(o, "w", io)) == NULL) {
		free_output(o);
		goto nomem;
	}
	o->own_fd = own;
	setvbuf(o->f, o->iobuf, _IOFBF, IO_CAP);
	return o;
nomem:
	errno = ENOMEM;
	kvp_diag_set(d, 0, "%s", strerror(ENOMEM));
	return NULL;
}

struct kvp_output *
kvp_output_open(const char *path, enum kvp_input_codec codec,
                struct kvp_diag *d)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	struct kvp_output *o;
	int e;

	if (fd < 0) {
		e = errno;
		kvp_diag_set(d, 0, "%s", strerror(e));
		errno = e;
		return NULL;
	}
	o = kvp_output_open_fd(fd, 1, codec, d);
	if (o == NULL) {
		close(fd);
		errno = ENOMEM;
	}
	return o;
}

FILE *
kvp_output_file(struct kvp_output *o)
{
	return o->f;
}

uint64_t
kvp_output_bytes(const struct kvp_output *o)
{
	return o->bytes;
}

void
kvp_output_line_mode(struct kvp_output *o)
{
	struct stat st;
	off_t at = lseek(o->fd, 0, SEEK_CUR);
	int fl = fcntl(o->fd, F_GETFL);

	o->lines_on = 1;
	o->base = at;
	o->can_trunc = at >= 0 && fl >= 0 && (fl & O_APPEND) == 0 &&
	               fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
}

uint64_t
kvp_output_lines(const struct kvp_output *o)
{
	return o->lines;
}

void
kvp_output_cancel(struct kvp_output *o)
{
	o->cancel = 1;
}

int
kvp_output_close(struct kvp_output *o, struct kvp_diag *d)
{
	return kvp_output_close_lines(o, NULL, d);
}

int
kvp_output_close_lines(struct kvp_output *o, uint64_t *lines,
                       struct kvp_diag *d)
{
	int bad, e;

	if (o == NULL)
		return KVP_OK;
	bad = fclose(o->f) != 0;
	e = o->err != 0 ? o->err : errno;
	if (lines != NULL)
		*lines = o->lines;
	free_output(o);
	if (bad) {
		kvp_diag_set(d, 0, "%s", strerror(e));
		errno = e;
		return KVP_FAIL;
	}
	return KVP_OK;
}
