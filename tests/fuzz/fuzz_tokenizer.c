/* SPDX-License-Identifier: MIT */
/* fuzz_tokenizer.c — bytes as a tiktoken rank file, then as text through
 * the Kimi split, specials and BPE (with the ranks that loaded), and
 * through bytes mode. The two tokenizers (split pattern compiled and
 * JIT-compiled, Kimi specials added) are built once, in
 * LLVMFuzzerInitialize; each input starts from an empty vocabulary. */
#include <stdint.h>
#include <stdlib.h>

#include "mm/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kvp_tokenizer *bpe, *bytes;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct kvp_diag d;

	(void)argc, (void)argv;
	bpe = kvp_tok_new(NULL, &d);
	bytes = kvp_tok_new(NULL, &d);
	if (bpe == NULL || bytes == NULL ||
	    kvp_tok_add_kimi_specials(bpe, &d) != 0 ||
	    kvp_tok_add_kimi_specials(bytes, &d) != 0)
		abort();
	kvp_tok_set_bytes(bytes, 1000);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_diag d;
	struct kvp_tok_ids ids = {0};

	kvp_tok_clear_ranks(bpe);
	(void)kvp_tok_load_ranks(bpe, (const char *)data, size, &d);
	(void)kvp_tok_encode(bpe, (const char *)data, size, 1, &ids, &d);
	ids.n = 0;
	(void)kvp_tok_encode(bpe, (const char *)data, size, 0, &ids, &d);
	ids.n = 0;
	(void)kvp_tok_encode(bytes, (const char *)data, size, 1, &ids, &d);
	kvp_tok_ids_free(&ids);
	return 0;
}
