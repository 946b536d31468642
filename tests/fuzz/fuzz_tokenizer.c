/* SPDX-License-Identifier: MIT */
/* fuzz_tokenizer.c — bytes as a tiktoken rank file, then as text through
 * the Kimi split, specials and BPE (with the ranks that loaded). */
#include <stdint.h>
#include <stdlib.h>

#include "mm/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new(NULL, &d);
	struct kvp_tok_ids ids = {0};

	if (t == NULL)
		return 0;
	(void)kvp_tok_load_ranks(t, (const char *)data, size, &d);
	(void)kvp_tok_add_kimi_specials(t, &d);
	(void)kvp_tok_encode(t, (const char *)data, size, 1, &ids, &d);
	ids.n = 0;
	(void)kvp_tok_encode(t, (const char *)data, size, 0, &ids, &d);
	kvp_tok_set_bytes(t, 1000);
	ids.n = 0;
	(void)kvp_tok_encode(t, (const char *)data, size, 1, &ids, &d);
	kvp_tok_ids_free(&ids);
	kvp_tok_free(t);
	return 0;
}
