/* SPDX-License-Identifier: MIT */
/*
 * unit.h — a tiny test harness (sds testhelp style). Each test program
 * calls CHECK(...) and ends with UNIT_DONE(), which prints the closing
 * "N passed, N failed" line and returns the exit status.
 */
#ifndef KVP_UNIT_H
#define KVP_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			unit_passed++;                                         \
		} else {                                                       \
			unit_failed++;                                         \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,       \
			        __LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_U64(got, want)                                                   \
	do {                                                                   \
		uint64_t g_ = (got), w_ = (want);                              \
		if (g_ == w_) {                                                \
			unit_passed++;                                         \
		} else {                                                       \
			unit_failed++;                                         \
			fprintf(stderr,                                        \
			        "%s:%d: FAILED: %s == %" PRIu64                \
			        ", expected %" PRIu64 "\n",                    \
			        __FILE__, __LINE__, #got, g_, w_);             \
		}                                                              \
	} while (0)

#define CHECK_STR(got, want)                                                   \
	do {                                                                   \
		const char *g_ = (got), *w_ = (want);                          \
		if (g_ != NULL && strcmp(g_, w_) == 0) {                       \
			unit_passed++;                                         \
		} else {                                                       \
			unit_failed++;                                         \
			fprintf(stderr,                                        \
			        "%s:%d: FAILED: %s == \"%s\", expected "       \
			        "\"%s\"\n",                                    \
			        __FILE__, __LINE__, #got, g_ ? g_ : "(null)",  \
			        w_);                                           \
		}                                                              \
	} while (0)

#define UNIT_DONE()                                                            \
	(printf("%s: %d passed, %d failed\n", __FILE__, unit_passed,           \
	        unit_failed),                                                  \
	 unit_failed ? 1 : 0)

#endif
