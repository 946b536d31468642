/* SPDX-License-Identifier: MIT */
/*
 * input.h — the one input layer: every file a tool reads goes through it.
 *
 * An input wraps a file descriptor in a stdio FILE * (glibc's fopencookie)
 * that delivers the file's bytes, decompressed when they start with a gzip
 * (1f 8b) or zstd (28 b5 2f fd, or a skippable frame) magic number: the
 * content decides, never the file name. Concatenated gzip members and
 * multi-frame zstd files are read whole. Readers use the FILE * like any
 * other (fread, getc, ungetc), so none of them knows about compression.
 *
 * Memory is bounded: fixed buffers plus the decoder's state (zlib's 32 KiB
 * window; a zstd frame's window, at most libzstd's default limit of
 * 128 MiB). No external program is run.
 *
 * Damage is bad data, reported through the FILE *: a truncated or corrupt
 * stream makes a read fail (ferror) after every byte decoded before the
 * damage has been delivered. kvp_input_status() then tells bad data
 * ("truncated gzip input at byte N", N an offset in the compressed file)
 * from trouble (a read error: errno is kept).
 *
 * Ownership: kvp_input_open*() return an owned input; kvp_input_close()
 * frees it, closes its FILE * and, if it owns it, the descriptor.
 * Nothing here prints.
 */
#ifndef KVP_INPUT_H
#define KVP_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"

enum kvp_input_codec {
	KVP_INPUT_PLAIN = 0,
	KVP_INPUT_GZIP,
	KVP_INPUT_ZSTD,
};

struct kvp_input;

/* Opens path read-only. Returns NULL with errno set (and d->msg its
 * strerror) when the file cannot be opened or memory is short. */
struct kvp_input *kvp_input_open(const char *path, struct kvp_diag *d);

/* Wraps an open descriptor (for standard input, 0). own: close it in
 * kvp_input_close(). Returns NULL with errno ENOMEM. */
struct kvp_input *kvp_input_open_fd(int fd, int own, struct kvp_diag *d);

/* The decoded stream. Borrowed: valid until kvp_input_close(). */
FILE *kvp_input_file(struct kvp_input *in);

/* The codec found by the magic bytes; KVP_INPUT_PLAIN before the first
 * read. */
enum kvp_input_codec kvp_input_codec(const struct kvp_input *in);

/* Bytes of the underlying (compressed) file consumed so far: the position
 * a progress display shows against kvp_input_size(). */
uint64_t kvp_input_pos(const struct kvp_input *in);

/* Size of the underlying file if it is a regular file, else -1. */
int64_t kvp_input_size(const struct kvp_input *in);

/*
 * What stopped the stream, for the front end's message:
 *   KVP_OK    nothing (end of input or no read yet),
 *   KVP_BAD   bad data: d->msg is "truncated gzip input at byte N" or
 *             "corrupt zstd input at byte N" (d->col is 0),
 *   KVP_FAIL  a read error or no memory: errno and d->msg say which.
 */
int kvp_input_status(const struct kvp_input *in, struct kvp_diag *d);

/* Closes the stream and frees the input; NULL is a no-op. */
void kvp_input_close(struct kvp_input *in);

/*
 * Reads a whole file through the layer into a malloc'd buffer (NUL added
 * after the last byte, not counted in *len), for option files such as a
 * tokenizer. At most max bytes (after decoding). Returns KVP_OK, KVP_BAD
 * (damaged compressed data, or over max) or KVP_FAIL (open or read error,
 * no memory), with d->msg set and no buffer on failure.
 */
int kvp_input_slurp(const char *path, size_t max, char **buf, size_t *len,
                    struct kvp_diag *d);

/* Versions of zlib and libzstd, for --version. */
const char *kvp_input_zlib_version(void);
const char *kvp_input_zstd_version(void);

#endif
