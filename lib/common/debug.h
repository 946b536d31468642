/* SPDX-License-Identifier: MIT */
/*
 * debug.h — KVP_ASSERT(cond): an invariant checked in debug builds only.
 *
 * Built with -DKVP_DEBUG (make asan does), a false cond aborts with the
 * file, line and condition (assert(3)); otherwise it compiles to nothing
 * and cond is not evaluated. The mode flags of the router's sub-states
 * (lib/route/: nodes.h, load.h, ...) state their invariants this way.
 */
#ifndef KVP_COMMON_DEBUG_H
#define KVP_COMMON_DEBUG_H

#ifdef KVP_DEBUG
#undef NDEBUG
#include <assert.h>
#define KVP_ASSERT(cond) assert(cond)
#else
#define KVP_ASSERT(cond) ((void)0)
#endif

#endif
