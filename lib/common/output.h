/* SPDX-License-Identifier: MIT */
/*
 * output.h — the output side of common/input.h: a stdio FILE * that writes
 * plain, gzip or zstd bytes to a file descriptor (glibc's fopencookie).
 * Writers use the FILE * like any other; closing it ends the compressed
 * stream, so a closed file is whole (kv-decode and zstd/gzip read it).
 *
 * Memory is bounded: one compressed-output buffer plus the encoder's state.
 * Ownership: kvp_output_open*() return an owned output; kvp_output_close()
 * ends the stream, closes the FILE * and the descriptor it owns, frees it.
 * Nothing here prints.
 */
#ifndef KVP_OUTPUT_H
#define KVP_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "common/input.h"

struct kvp_output;

/* The codec a file name asks for: .gz gzip, .zst zstd, else plain. */
enum kvp_input_codec kvp_output_codec_for(const char *path);

/* Creates (truncates) path. Returns NULL with errno and d->msg set. */
struct kvp_output *kvp_output_open(const char *path, enum kvp_input_codec codec,
                                   struct kvp_diag *d);

/* Wraps an open descriptor (1 for stdout); own: close it at the end. */
struct kvp_output *kvp_output_open_fd(int fd, int own,
                                      enum kvp_input_codec codec,
                                      struct kvp_diag *d);

/* The stream to write. Borrowed: valid until kvp_output_close(). */
FILE *kvp_output_file(struct kvp_output *o);

/* Bytes written into the FILE * and handed down so far (before
 * compression; stdio's own buffer not counted). */
uint64_t kvp_output_bytes(const struct kvp_output *o);

/*
 * Line mode, for a writer of whole lines (kv-capture): the output counts
 * the lines that reached the descriptor whole (kvp_output_lines); a
 * compressed stream ends its frame (gzip member) at a line end every MiB
 * of input, so that it may be cut there; and after a write error, closing
 * cuts a regular file (not opened for appending) back to its last whole
 * line, or last whole frame, so that it holds exactly those lines and no
 * torn one, and a compressed file stays valid. Call it before writing.
 */
void kvp_output_line_mode(struct kvp_output *o);

/* Line mode: whole lines in the file so far (final after closing). */
uint64_t kvp_output_lines(const struct kvp_output *o);

/* From now on a write that would block fails (ECANCELED) instead of
 * waiting: a writer stuck on a full pipe gives up. Only sets a flag, so a
 * signal handler may call it (a write it interrupts is not retried
 * blocking). */
void kvp_output_cancel(struct kvp_output *o);

/* Flushes, ends the compressed stream and closes. Returns KVP_OK, or
 * KVP_FAIL with errno and d->msg set (a write error, a full disk). NULL is
 * a no-op. */
int kvp_output_close(struct kvp_output *o, struct kvp_diag *d);

/* The same; *lines (when not NULL) gets the whole lines the file holds
 * (line mode; after a failure, what the cut left). */
int kvp_output_close_lines(struct kvp_output *o, uint64_t *lines,
                           struct kvp_diag *d);

#endif
