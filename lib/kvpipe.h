/* SPDX-License-Identifier: MIT */
/*
 * kvpipe.h — version and the exit-status contract shared by every tool.
 *
 *   0  every record processed (empty input included).
 *   1  bad data: at least one record was invalid (stopped at, or skipped
 *      with -k).
 *   2  trouble: usage, environment or I/O (unknown option, missing file,
 *      write error).
 * When both happen the worse one (2) wins: see kvp_worst().
 */
/*
 * Ownership, once for the whole library (as jq's jv.h states its rules):
 *
 *  - A constructor (kvp_X_new, kvp_X_init) makes an object the caller owns
 *    and frees with the matching kvp_X_free / kvp_X_fini; both take NULL or
 *    a zeroed struct.
 *  - A FILE * handed to lib/ is borrowed: lib/ reads or writes it and never
 *    closes it; the front end opens and closes every stream.
 *  - Pointers lib/ returns into its own buffers (a line, a pending record,
 *    a decoded batch, an event, a diag message) stay valid until the next
 *    call on the same object, or its fini; copy what must live longer.
 *  - Pointers the caller passes in (options, strings, token arrays, json-c
 *    objects) are borrowed for the duration of the call unless a header
 *    says the object keeps them (then they must outlive it).
 *  - json-c objects: a function returning one says whether the reference
 *    is the caller's; getters borrow (json_object_object_get_ex rules).
 */
#ifndef KVPIPE_H
#define KVPIPE_H

#define KVP_VERSION "0.1.0"

enum kvp_exit {
	KVP_EXIT_OK = 0,
	KVP_EXIT_DATA = 1,
	KVP_EXIT_TROUBLE = 2,
};

/*
 * The one return convention of every reader and step in lib/:
 *   KVP_OK    done; for a reader, a record was produced
 *   KVP_END   a reader has no more input
 *   KVP_BAD   bad data: the struct kvp_diag says what; with -k the front
 *             end reports it, skips the record and goes on (exit 1)
 *   KVP_FAIL  trouble: I/O error or out of memory (errno or the diag says
 *             which); the front end stops (exit 2)
 */
enum kvp_status {
	KVP_OK = 0,
	KVP_END = 1,
	KVP_BAD = -1,
	KVP_FAIL = -2,
};

static inline int
kvp_worst(int a, int b)
{
	return a > b ? a : b;
}

#endif
