// llamacpp_quantize writes a GGUF file in another weight type through
// llama.cpp's C API (llama_model_quantize, the function behind its
// llama-quantize tool), for bench/vs-llamacpp.sh: it makes the Q4_K_M
// file of the 1B shape from the F16 one that bench/ggufgen writes.
//
//   llamacpp_quantize IN.gguf OUT.gguf TYPE    (TYPE: Q4_0, Q8_0, Q4_K_M, Q5_K_M, Q6_K)
//
// Compiled by bench/vs-llamacpp.sh against the same prebuilt libraries as
// bench/llamacpp_bench.c.
#include <stdio.h>
#include <string.h>

#include "llama.h"

static const struct {
	const char *name;
	enum llama_ftype ftype;
} types[] = {
	{"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
	{"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
	{"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
};

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: llamacpp_quantize IN.gguf OUT.gguf TYPE\n");
		return 2;
	}
	struct llama_model_quantize_params params = llama_model_quantize_default_params();
	size_t i;
	for (i = 0; i < sizeof types / sizeof types[0]; i++) {
		if (strcmp(argv[3], types[i].name) == 0) {
			break;
		}
	}
	if (i == sizeof types / sizeof types[0]) {
		fprintf(stderr, "llamacpp_quantize: unknown type %s (Q4_0, Q8_0, Q4_K_M, Q5_K_M, Q6_K)\n", argv[3]);
		return 2;
	}
	params.ftype = types[i].ftype;
	llama_backend_init();
	uint32_t rc = llama_model_quantize(argv[1], argv[2], &params);
	llama_backend_free();
	if (rc != 0) {
		fprintf(stderr, "llamacpp_quantize: llama_model_quantize failed (%u)\n", rc);
		return 1;
	}
	return 0;
}
