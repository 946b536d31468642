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

static inline int
kvp_worst(int a, int b)
{
	return a > b ? a : b;
}

#endif
