// llamacpp_kld measures how far llama.cpp's next-token distributions on a
// GGUF file are from a reference's: Driftwood's float path, whose logits
// BenchmarkInt8Quality writes with DRIFTWOOD_QUALITY_DUMP=PREFIX
// (PREFIX.ids: the tokens, int32; PREFIX.logits: after each of them, the
// next token's logits, float32 rows of the vocabulary, little-endian).
// llama.cpp runs the same tokens in one batch with every position's
// logits; the mean KL divergence of its distribution from the
// reference's, how often their top tokens agree and the reference's mean
// entropy are printed as one JSON line:
//
//   llamacpp_kld MODEL.gguf PREFIX BACKEND_DIR THREADS
//
// It is compiled as llamacpp_bench.c is (bench/vs-llamacpp.sh), against
// node-llama-cpp's prebuilt libraries and llama.cpp's headers.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void log_errors(enum ggml_log_level level, const char *text, void *user) {
	(void)user;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// logSoftmax sets lp to the log-probabilities of the n logits l.
static void logSoftmax(double *lp, const float *l, int n) {
	double m = l[0], s = 0;
	for (int i = 1; i < n; i++) {
		if (l[i] > m) {
			m = l[i];
		}
	}
	for (int i = 0; i < n; i++) {
		s += exp(l[i] - m);
	}
	double z = m + log(s);
	for (int i = 0; i < n; i++) {
		lp[i] = l[i] - z;
	}
}

static int argmax(const float *l, int n) {
	int best = 0;
	for (int i = 1; i < n; i++) {
		if (l[i] > l[best]) {
			best = i;
		}
	}
	return best;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: %s MODEL.gguf PREFIX BACKEND_DIR THREADS\n", argv[0]);
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s.ids", argv[2]);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	int n = (int)(ftell(f) / 4);
	rewind(f);
	llama_token *ids = malloc(sizeof(llama_token) * (size_t)n);
	if (n < 1 || fread(ids, 4, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: no tokens\n", path);
		return 1;
	}
	fclose(f);
	snprintf(path, sizeof path, "%s.logits", argv[2]);
	FILE *ref = fopen(path, "rb");
	if (ref == NULL) {
		perror(path);
		return 1;
	}
	int threads = atoi(argv[4]);

	llama_log_set(log_errors, NULL);
	ggml_backend_load_all_from_path(argv[3]);
	llama_backend_init();
	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	struct llama_model *model = llama_model_load_from_file(argv[1], mp);
	if (model == NULL) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
	fseek(ref, 0, SEEK_END);
	if (ftell(ref) != (long)n * vocab * 4) {
		fprintf(stderr, "%s: %ld bytes, not %d rows of %d logits\n", path, ftell(ref), n, vocab);
		return 1;
	}
	rewind(ref);
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)n;
	cp.n_batch = (uint32_t)n;
	cp.n_ubatch = 512;
	cp.n_seq_max = 1;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (ctx == NULL) {
		fprintf(stderr, "cannot create a context\n");
		return 1;
	}
	struct llama_batch batch = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		batch.token[i] = ids[i];
		batch.pos[i] = i;
		batch.n_seq_id[i] = 1;
		batch.seq_id[i][0] = 0;
		batch.logits[i] = 1;
	}
	batch.n_tokens = n;
	if (llama_decode(ctx, batch) != 0) {
		fprintf(stderr, "llama_decode failed\n");
		return 1;
	}
	float *want = malloc(sizeof(float) * (size_t)vocab);
	double *lw = malloc(sizeof(double) * (size_t)vocab), *lg = malloc(sizeof(double) * (size_t)vocab);
	double kld = 0, entropy = 0;
	int agree = 0;
	for (int i = 0; i < n; i++) {
		if (fread(want, 4, (size_t)vocab, ref) != (size_t)vocab) {
			fprintf(stderr, "%s: short read\n", path);
			return 1;
		}
		const float *got = llama_get_logits_ith(ctx, i);
		logSoftmax(lw, want, vocab);
		logSoftmax(lg, got, vocab);
		for (int t = 0; t < vocab; t++) {
			double p = exp(lw[t]);
			kld += p * (lw[t] - lg[t]);
			entropy -= p * lw[t];
		}
		agree += argmax(want, vocab) == argmax(got, vocab);
	}
	printf("{\"positions\":%d,\"kld\":%.6g,\"top1\":%.2f,\"entropy\":%.4g}\n", n, kld / n, 100.0 * agree / n, entropy / n);
	llama_batch_free(batch);
	llama_free(ctx);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
