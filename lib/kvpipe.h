/* SPDX-License-Identifier: MIT */
/*
 * kvpipe.h — version and the exit-status contract shared by every tool.
 *
 * 0: every record processed (empty input included).
 * 1: bad data: at least one record was invalid (stopped at, or skipped with
 * -k). 2: trouble: usage, environment or I/O (unknown option, missing file,
 * write error). When both happen the worse one (2) wins: see kvp_worst().
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
