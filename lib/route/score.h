/* SPDX-License-Identifier: MIT */
/*
 * score.h — the router's cost function and sampling (docs/spec/route-score.md
 * §3): the logit of one candidate, softmax over candidates and the PRNG.
 * score.c also scores and picks the candidates of a decision for the
 * router (route_internal.h).
 *
 * Cost per candidate (one formula for classic and current Dynamo):
 *
 *   credit = C·O  (+ host_w·max(0, Oh − O) + disk_w·max(0, Od − max(O, Oh))
 *                  when tier credit is on)
 *   prefill_blocks = max(0, (P + ISL)/bs − credit)
 *   logit = W·prefill_blocks + D + N
 *
 * O device overlap (blocks), P active prefill tokens, D active decode
 * blocks, N request blocks not already held by the candidate's active
 * requests (sequence hashes are chain hashes, so the held ones form a
 * prefix of the request and are found by binary search), W the overlap weight,
 * C = 1 (0 when W = 0). Lower wins. Evaluated in IEEE double in exactly this
 * order.
 */
#ifndef KVP_SCORE_H
#define KVP_SCORE_H

#include <stddef.h>
#include <stdint.h>

/* The formula: returns the logit and (if prefill is non-NULL) sets
 * *prefill to prefill_blocks. */
double kvp_score_logit(double w, double credit, uint64_t p, uint64_t isl,
                       uint32_t bs, uint64_t d, uint64_t n, double *prefill);

/* Softmax over min–max-normalized logits (spec §3.2): writes prob[0..n). */
void kvp_score_softmax(const double *logit, size_t n, double t, double *prob);

/* SplitMix64. */
uint64_t kvp_score_splitmix64(uint64_t *state);

#endif
