/* SPDX-License-Identifier: MIT */
/* input.c — plain, gzip and zstd input behind one stdio FILE *. */
#define _GNU_SOURCE 1
#include "common/input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "kvpipe.h"

#define IN_CAP ((size_t)1 << 17) /* compressed bytes read at a time */
#define IO_CAP ((size_t)1 << 16) /* the FILE *'s own buffer */
#define PEEK ((size_t)4096)      /* the first read, for the magic number */
#define SLOTS 4                  /* decoded slots the thread runs ahead */
#define SLOT_CAP ((size_t)1 << 18)

struct kvp_input {
	FILE *f;
	int fd;
	int own_fd;
	enum kvp_input_codec codec;
	int detected;
	int64_t size;

	/* Compressed (or, before detection, peeked) bytes: in[pos, len). */
	unsigned char *in;
	size_t in_pos, in_len;
	uint64_t raw_read; /* bytes read from fd */
	int raw_eof;

	/* Decoder state. mid: a gzip member or zstd frame has begun and not
	 * ended, so the end of the file here is a truncation. */
	z_stream z;
	int z_ready;
	ZSTD_DStream *zs;
	size_t zhint; /* bytes to the end of the next zstd unit */
	int mid;

	/* Stream state: KVP_OK, KVP_BAD or KVP_FAIL once something broke;
	 * reported by the read after the one that delivered the last good
	 * bytes. Written by the decoder thread while it runs. */
	int state;
	int err;
	struct kvp_diag diag;
	char *iobuf;

	/* The decoder thread (see below). */
	int threaded;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *slot[SLOTS];
	size_t slot_len[SLOTS];
	unsigned head, tail; /* under mu */
	int quit;            /* under mu */
	size_t slot_off;     /* reader: bytes of slot tail copied out */
	int ended;           /* reader: saw the end slot */
	uint64_t pub_pos;    /* atomic: raw_pos() as of the last slot */
};

static const char *const codec_names[] = {"plain", "gzip", "zstd"};

/* ---- raw reads ------------------------------------------------------------
 */

static int
fail_errno(struct kvp_input *in, int e)
{
	in->state = KVP_FAIL;
	in->err = e;
	kvp_diag_set(&in->diag, 0, "%s", strerror(e));
	return -1;
}

/* Bytes of the file the decoder has consumed. */
static uint64_t
raw_pos(const struct kvp_input *in)
{
	return in->raw_read - (uint64_t)(in->in_len - in->in_pos);
}

static int
bad_data(struct kvp_input *in, const char *what)
{
	uint64_t at = raw_pos(in);

	in->state = KVP_BAD;
	in->err = EILSEQ;
	kvp_diag_set(&in->diag, 0, "%s %s input at byte %llu", what,
	             codec_names[in->codec], (unsigned long long)at);
	return -1;
}

static ssize_t
read_fd(struct kvp_input *in, void *buf, size_t n)
{
	for (;;) {
		int old;
		ssize_t got;

		/* The decoder thread may be cancelled here, and only here. */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
		got = read(in->fd, buf, n);
		pthread_setcancelstate(old, NULL);

		if (got >= 0) {
			in->raw_read += (uint64_t)got;
			if (got == 0)
				in->raw_eof = 1;
			return got;
		}
		if (errno != EINTR)
			return fail_errno(in, errno);
	}
}

/* Reads more compressed bytes after the unconsumed ones, up to cap in
 * all. 0 or -1. */
static int
refill_to(struct kvp_input *in, size_t cap)
{
	ssize_t got;

	if (in->in_pos > 0) {
		memmove(in->in, in->in + in->in_pos, in->in_len - in->in_pos);
		in->in_len -= in->in_pos;
		in->in_pos = 0;
	}
	got = read_fd(in, in->in + in->in_len, cap - in->in_len);
	if (got < 0)
		return -1;
	in->in_len += (size_t)got;
	return 0;
}

static int
refill(struct kvp_input *in)
{
	return refill_to(in, IN_CAP);
}

/* ---- detection ------------------------------------------------------------
 */

static int
is_zstd_magic(const unsigned char *p)
{
	/* a frame (28 b5 2f fd) or a skippable frame (5? 2a 4d 18) */
	return (p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) ||
	       ((p[0] & 0xf0) == 0x50 && p[1] == 0x2a && p[2] == 0x4d &&
	        p[3] == 0x18);
}

static int
start_decoder(struct kvp_input *in)
{
	if (in->codec == KVP_INPUT_GZIP) {
		memset(&in->z, 0, sizeof in->z);
		/* 16 + 15: a gzip wrapper, the largest window */
		if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK)
			return fail_errno(in, ENOMEM);
		in->z_ready = 1;
	} else if (in->codec == KVP_INPUT_ZSTD) {
		in->zs = ZSTD_createDStream();
		if (in->zs == NULL)
			return fail_errno(in, ENOMEM);
		in->zhint = ZSTD_initDStream(in->zs);
	}
	return 0;
}

/* Peeks at the first bytes (pipes may deliver them one by one). */
static int
detect(struct kvp_input *in)
{
	const unsigned char *p = in->in;

	in->detected = 1;
	/* a peek of a page: plain bytes after it are read straight into the
	 * reader's buffer, never copied through in->in */
	while (in->in_len < 4 && !in->raw_eof)
		if (refill_to(in, PEEK) != 0)
			return -1;
	if (in->in_len >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		in->codec = KVP_INPUT_GZIP;
	else if (in->in_len >= 4 && is_zstd_magic(p))
		in->codec = KVP_INPUT_ZSTD;
	return start_decoder(in);
}

/* ---- decoders --------------------------------------------------------------
 * Each step decodes what it can into out[*done, n) and returns 1 if it made
 * progress, 0 if it needs more input, -1 after setting the state. */

static int
step_gzip(struct kvp_input *in, char *out, size_t n, size_t *done)
{
	z_stream *z = &in->z;
	int rc;

	if (in->in_pos == in->in_len)
		return 0;
	if (!in->mid) {
		const unsigned char *p = in->in + in->in_pos;
		size_t k = in->in_len - in->in_pos;

		/* Another member, or trailing garbage. */
		if (p[0] != 0x1f || (k > 1 && p[1] != 0x8b))
			return bad_data(in, "corrupt");
		if (inflateReset(z) != Z_OK)
			return fail_errno(in, ENOMEM);
		in->mid = 1;
	}
	z->next_in = in->in + in->in_pos;
	z->avail_in = (uInt)(in->in_len - in->in_pos);
	z->next_out = (unsigned char *)out + *done;
	z->avail_out = (uInt)(n - *done);
	rc = inflate(z, Z_NO_FLUSH);
	in->in_pos = in->in_len - z->avail_in;
	*done = n - z->avail_out;
	switch (rc) {
	case Z_STREAM_END:
		in->mid = 0;
		return 1;
	case Z_OK:
		return 1;
	case Z_BUF_ERROR:
		return 0;
	case Z_MEM_ERROR:
		return fail_errno(in, ENOMEM);
	default:
		return bad_data(in, "corrupt");
	}
}

/*
 * zstd is given the input one unit (frame header, block) at a time, as its
 * hint says: it decodes a whole block in place all the same, and on damage
 * the offset of the bad unit is known (on error it leaves pos unchanged).
 */
static int
step_zstd(struct kvp_input *in, char *out, size_t n, size_t *done)
{
	size_t lim = in->in_len - in->in_pos;
	ZSTD_inBuffer zi = {in->in, in->in_pos, in->in_pos};
	ZSTD_outBuffer zo = {out, n, *done};
	size_t rc;
	int moved;

	if (in->zhint > 0 && in->zhint < lim)
		lim = in->zhint;
	zi.size += lim;
	rc = ZSTD_decompressStream(in->zs, &zo, &zi);
	moved = zi.pos != in->in_pos || zo.pos != *done;
	in->in_pos = zi.pos;
	*done = zo.pos;
	if (ZSTD_isError(rc)) {
		if (ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
			return fail_errno(in, ENOMEM);
		return bad_data(in, "corrupt");
	}
	/* 0: a frame is complete and flushed; the next byte starts a new
	 * one. A call that moved nothing says nothing about frames. */
	if (moved)
		in->mid = rc != 0;
	in->zhint = rc;
	return moved;
}

static int
step_plain(struct kvp_input *in, char *out, size_t n, size_t *done)
{
	size_t k = in->in_len - in->in_pos;
	ssize_t got;

	if (k > 0) {
		if (k > n - *done)
			k = n - *done;
		memcpy(out + *done, in->in + in->in_pos, k);
		in->in_pos += k;
		*done += k;
		return 1;
	}
	if (in->raw_eof || *done > 0)
		return 0;
	got = read_fd(in, out, n);
	if (got < 0)
		return -1;
	*done += (size_t)got;
	return got > 0;
}

static int
step(struct kvp_input *in, char *out, size_t n, size_t *done)
{
	switch (in->codec) {
	case KVP_INPUT_GZIP:
		return step_gzip(in, out, n, done);
	case KVP_INPUT_ZSTD:
		return step_zstd(in, out, n, done);
	default:
		return step_plain(in, out, n, done);
	}
}

/*
 * Decodes into out[0, n). Returns the byte count as soon as some bytes are
 * decoded and more would need a (possibly blocking) read, so that live
 * pipelines stream; 0 at the end or after damage (in->state says which).
 * Damage found after some bytes were decoded is reported by the next call.
 */
static size_t
decode_some(struct kvp_input *in, char *out, size_t n)
{
	size_t done = 0;

	if (in->state != KVP_OK)
		return 0;
	while (done < n) {
		int rc = step(in, out, n, &done);

		if (rc < 0)
			break;
		if (rc > 0)
			continue;
		if (in->in_pos < in->in_len) {
			/* The decoder needs more than a full buffer holds,
			 * or the file ended inside the unit. */
			if (in->raw_eof || in->in_len - in->in_pos == IN_CAP) {
				bad_data(in,
				         in->raw_eof ? "truncated" : "corrupt");
				break;
			}
		} else if (done > 0) {
			break; /* deliver now rather than block reading */
		} else if (in->raw_eof) {
			if (in->mid && in->codec != KVP_INPUT_PLAIN)
				bad_data(in, "truncated");
			break;
		}
		if (refill(in) != 0)
			break;
	}
	return done;
}

/* ---- the decoder thread ---------------------------------------------------
 * Compressed input is decoded one slot ahead of the reader by a thread of
 * its own, so decoding overlaps parsing on a second core. Slots [tail, head)
 * are full; a slot of length 0 is the end (in->state then says why, and the
 * thread writes nothing more). The reader sees in->state only after that.
 */

static void
slot_publish(struct kvp_input *in, size_t len)
{
	pthread_mutex_lock(&in->mu);
	in->slot_len[in->head % SLOTS] = len;
	in->head++;
	__atomic_store_n(&in->pub_pos, raw_pos(in), __ATOMIC_RELAXED);
	pthread_cond_broadcast(&in->cv);
	pthread_mutex_unlock(&in->mu);
}

static void *
decoder_main(void *arg)
{
	struct kvp_input *in = arg;

	/* Cancelled only inside read(2), where it may block on a pipe when
	 * the reader has gone. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	for (;;) {
		size_t len;
		int quit;

		pthread_mutex_lock(&in->mu);
		while (!in->quit && in->head - in->tail == SLOTS)
			pthread_cond_wait(&in->cv, &in->mu);
		quit = in->quit;
		pthread_mutex_unlock(&in->mu);
		if (quit)
			break;
		len = decode_some(in, in->slot[in->head % SLOTS], SLOT_CAP);
		slot_publish(in, len);
		if (len == 0)
			break;
	}
	return NULL;
}

static void
start_thread(struct kvp_input *in)
{
	char *p = malloc(SLOTS * SLOT_CAP);

	if (p == NULL)
		return; /* decode in the reader's thread instead */
	for (int i = 0; i < SLOTS; i++)
		in->slot[i] = p + (size_t)i * SLOT_CAP;
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->cv, NULL);
	if (pthread_create(&in->thr, NULL, decoder_main, in) != 0) {
		pthread_mutex_destroy(&in->mu);
		pthread_cond_destroy(&in->cv);
		free(p);
		in->slot[0] = NULL;
		return;
	}
	in->threaded = 1;
}

static void
stop_thread(struct kvp_input *in)
{
	if (!in->threaded)
		return;
	pthread_mutex_lock(&in->mu);
	in->quit = 1;
	pthread_cond_broadcast(&in->cv);
	pthread_mutex_unlock(&in->mu);
	pthread_cancel(in->thr);
	pthread_join(in->thr, NULL);
	pthread_mutex_destroy(&in->mu);
	pthread_cond_destroy(&in->cv);
	free(in->slot[0]);
	in->threaded = 0;
}

/* The reader's side: copies from the oldest full slot. */
static ssize_t
read_slots(struct kvp_input *in, char *out, size_t n)
{
	size_t len, k;
	const char *src;

	pthread_mutex_lock(&in->mu);
	while (in->tail == in->head)
		pthread_cond_wait(&in->cv, &in->mu);
	len = in->slot_len[in->tail % SLOTS];
	src = in->slot[in->tail % SLOTS];
	pthread_mutex_unlock(&in->mu);
	if (len == 0) {
		in->ended = 1;
		if (in->state == KVP_OK)
			return 0;
		errno = in->err;
		return -1;
	}
	k = len - in->slot_off < n ? len - in->slot_off : n;
	memcpy(out, src + in->slot_off, k);
	in->slot_off += k;
	if (in->slot_off == len) {
		in->slot_off = 0;
		pthread_mutex_lock(&in->mu);
		in->tail++;
		pthread_cond_broadcast(&in->cv);
		pthread_mutex_unlock(&in->mu);
	}
	return (ssize_t)k;
}

/* ---- the FILE * ------------------------------------------------------------
 */

static ssize_t
cookie_read(void *cookie, char *out, size_t n)
{
	struct kvp_input *in = cookie;
	size_t done;

	if (!in->detected) {
		if (detect(in) != 0) {
			errno = in->err;
			return -1;
		}
		if (in->codec != KVP_INPUT_PLAIN)
			start_thread(in);
	}
	if (in->threaded)
		return read_slots(in, out, n);
	done = decode_some(in, out, n);
	if (done > 0)
		return (ssize_t)done;
	if (in->state != KVP_OK) {
		errno = in->err;
		return -1;
	}
	return 0;
}

/* ---- public ----------------------------------------------------------------
 */

struct kvp_input *
kvp_input_open_fd(int fd, int own, struct kvp_diag *d)
{
	static const cookie_io_functions_t io = {cookie_read, NULL, NULL, NULL};
	struct kvp_input *in = calloc(1, sizeof *in);
	struct stat st;

	if (in == NULL || (in->in = malloc(IN_CAP)) == NULL ||
	    (in->iobuf = malloc(IO_CAP)) == NULL ||
	    (in->f = fopencookie(in, "r", io)) == NULL) {
		if (in != NULL) {
			free(in->in);
			free(in->iobuf);
		}
		free(in);
		errno = ENOMEM;
		kvp_diag_set(d, 0, "%s", strerror(ENOMEM));
		return NULL;
	}
	setvbuf(in->f, in->iobuf, _IOFBF, IO_CAP);
	in->fd = fd;
	in->own_fd = own;
	in->size = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		in->size = (int64_t)st.st_size;
	return in;
}

struct kvp_input *
kvp_input_open(const char *path, struct kvp_diag *d)
{
	struct kvp_input *in;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int e;

	if (fd < 0) {
		e = errno;
		kvp_diag_set(d, 0, "%s", strerror(e));
		errno = e;
		return NULL;
	}
	in = kvp_input_open_fd(fd, 1, d);
	if (in == NULL) {
		close(fd);
		errno = ENOMEM;
	}
	return in;
}

FILE *
kvp_input_file(struct kvp_input *in)
{
	return in->f;
}

enum kvp_input_codec
kvp_input_codec(const struct kvp_input *in)
{
	return in->codec;
}

uint64_t
kvp_input_pos(const struct kvp_input *in)
{
	if (in->threaded)
		return __atomic_load_n(&in->pub_pos, __ATOMIC_RELAXED);
	return raw_pos(in);
}

int64_t
kvp_input_size(const struct kvp_input *in)
{
	return in->size;
}

int
kvp_input_status(const struct kvp_input *in, struct kvp_diag *d)
{
	if (in->threaded && !in->ended)
		return KVP_OK; /* the thread owns the state until the end */
	if (in->state != KVP_OK) {
		if (d != NULL)
			*d = in->diag;
		errno = in->err;
	}
	return in->state;
}

void
kvp_input_close(struct kvp_input *in)
{
	if (in == NULL)
		return;
	stop_thread(in);
	fclose(in->f);
	if (in->z_ready)
		inflateEnd(&in->z);
	ZSTD_freeDStream(in->zs);
	if (in->own_fd)
		close(in->fd);
	free(in->in);
	free(in->iobuf);
	free(in);
}

int
kvp_input_slurp(const char *path, size_t max, char **buf, size_t *len,
                struct kvp_diag *d)
{
	struct kvp_input *in = kvp_input_open(path, d);
	size_t n = 0, cap = 0;
	char *b = NULL;
	int st = KVP_OK;

	if (in == NULL)
		return KVP_FAIL;
	for (;;) {
		size_t got;

		if (cap - n < 2) {
			size_t nc = cap ? cap * 2 : (size_t)1 << 16;
			char *nb = realloc(b, nc);

			if (nb == NULL) {
				st = KVP_FAIL;
				kvp_diag_set(d, 0, "out of memory");
				break;
			}
			b = nb;
			cap = nc;
		}
		got = fread(b + n, 1, cap - n - 1, in->f);
		n += got;
		if (n > max) {
			st = kvp_diag_set(d, 0, "over %zu bytes", max);
			break;
		}
		if (got == 0) {
			if (ferror(in->f))
				st = kvp_input_status(in, d) == KVP_BAD
				         ? KVP_BAD
				         : KVP_FAIL;
			break;
		}
	}
	kvp_input_close(in);
	if (st != KVP_OK) {
		free(b);
		return st;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return KVP_OK;
}

const char *
kvp_input_zlib_version(void)
{
	return zlibVersion();
}

const char *
kvp_input_zstd_version(void)
{
	return ZSTD_versionString();
}
