// llamacpp_bench times llama.cpp through its C API (llama.h) the way
// llama-bench does, CPU only: load the model, create a context whose batch
// holds the whole prompt, attach a thread pool, warm up once (a prefill
// and a single-token decode), clear the memory, then time
//
//   prefill: one llama_decode of PROMPT random tokens, and
//   decode:  GEN llama_decode calls of one token each on top of it,
//
// each followed by llama_synchronize. Prints one JSON line:
//
//   {"prefill_tok_per_s":..,"decode_tok_per_s":..,"threads":..,"system_info":".."}
//
// bench/vs-llamacpp.sh compiles it against the prebuilt shared libraries
// of the npm package @node-llama-cpp/linux-x64 and the headers of the
// llama.cpp source that package was built from:
//
//   llamacpp_bench MODEL.gguf PROMPT GEN THREADS BACKEND_DIR
//
// BACKEND_DIR holds the libggml-cpu-*.so variants; ggml loads the best one
// this CPU runs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Errors only: llama.cpp's informational log would bury the JSON line.
static void log_errors(enum ggml_log_level level, const char *text, void *user) {
	(void)user;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// llama-bench's random tokens: rand() % n_vocab, from a fixed seed.
static void fill(llama_token *t, int n, int n_vocab) {
	for (int i = 0; i < n; i++) {
		t[i] = rand() % n_vocab;
	}
}

static int prefill(struct llama_context *ctx, llama_token *prompt, int n) {
	int res = llama_decode(ctx, llama_batch_get_one(prompt, n));
	llama_synchronize(ctx);
	return res;
}

static int decode(struct llama_context *ctx, int n, int n_vocab) {
	llama_token tok = rand() % n_vocab;
	for (int i = 0; i < n; i++) {
		int res = llama_decode(ctx, llama_batch_get_one(&tok, 1));
		llama_synchronize(ctx);
		if (res != 0) {
			return res;
		}
		tok = rand() % n_vocab;
	}
	return 0;
}

// json_string prints s as a JSON string literal.
static void json_string(const char *s) {
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\') {
			putchar('\\');
			putchar(*s);
		} else if ((unsigned char)*s < 0x20) {
			printf("\\u%04x", *s);
		} else {
			putchar(*s);
		}
	}
	putchar('"');
}

int main(int argc, char **argv) {
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s MODEL.gguf PROMPT GEN THREADS BACKEND_DIR [FLASH: on, off or auto]\n", argv[0]);
		return 2;
	}
	enum llama_flash_attn_type flash = LLAMA_FLASH_ATTN_TYPE_AUTO;
	if (argc == 7) {
		if (strcmp(argv[6], "on") == 0) {
			flash = LLAMA_FLASH_ATTN_TYPE_ENABLED;
		} else if (strcmp(argv[6], "off") == 0) {
			flash = LLAMA_FLASH_ATTN_TYPE_DISABLED;
		} else if (strcmp(argv[6], "auto") != 0) {
			fprintf(stderr, "FLASH must be on, off or auto\n");
			return 2;
		}
	}
	const char *path = argv[1];
	int n_prompt = atoi(argv[2]), n_gen = atoi(argv[3]), n_threads = atoi(argv[4]);
	if (n_prompt < 1 || n_gen < 1 || n_threads < 1) {
		fprintf(stderr, "PROMPT, GEN and THREADS must be at least 1\n");
		return 2;
	}

	llama_log_set(log_errors, NULL);
	ggml_backend_load_all_from_path(argv[5]);
	ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
	if (cpu == NULL) {
		fprintf(stderr, "no CPU backend loaded from %s\n", argv[5]);
		return 1;
	}
	ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
	typeof(ggml_threadpool_new) *threadpool_new = ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
	typeof(ggml_threadpool_free) *threadpool_free = ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
	if (threadpool_new == NULL || threadpool_free == NULL) {
		fprintf(stderr, "the CPU backend has no ggml_threadpool_new\n");
		return 1;
	}
	llama_backend_init();

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	struct llama_model *model = llama_model_load_from_file(path, mp);
	if (model == NULL) {
		fprintf(stderr, "cannot load %s\n", path);
		return 1;
	}
	int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

	// One ubatch holds a prompt of up to 512 tokens, so that its prefill
	// is a single graph, as llama-bench's pp test with -b and -ub at least
	// the prompt; a longer one (a decode depth) goes in ubatches of 512,
	// llama.cpp's default, whose attention scores fit in memory.
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)(n_prompt + n_gen);
	cp.n_batch = (uint32_t)n_prompt;
	cp.n_ubatch = (uint32_t)(n_prompt < 512 ? n_prompt : 512);
	cp.flash_attn_type = flash;
	cp.n_seq_max = 1;
	cp.n_threads = n_threads;
	cp.n_threads_batch = n_threads;
	cp.no_perf = true;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (ctx == NULL) {
		fprintf(stderr, "cannot create a context\n");
		return 1;
	}
	// A thread pool of n_threads, polling as llama-bench's default (50).
	struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
	tpp.poll = 50;
	struct ggml_threadpool *pool = threadpool_new(&tpp);
	if (pool == NULL) {
		fprintf(stderr, "cannot create a thread pool of %d\n", n_threads);
		return 1;
	}
	llama_attach_threadpool(ctx, pool, NULL);
	llama_set_n_threads(ctx, n_threads, n_threads);

	srand(1);
	llama_token *prompt = malloc(sizeof(llama_token) * (size_t)n_prompt);
	fill(prompt, n_prompt, n_vocab);
	llama_memory_t mem = llama_get_memory(ctx);

	// Warm-up, as llama-bench: the prompt once and one decoded token.
	if (prefill(ctx, prompt, n_prompt) != 0 || decode(ctx, 1, n_vocab) != 0) {
		fprintf(stderr, "warm-up llama_decode failed\n");
		return 1;
	}
	llama_memory_clear(mem, false);

	fill(prompt, n_prompt, n_vocab);
	double t0 = now();
	if (prefill(ctx, prompt, n_prompt) != 0) {
		fprintf(stderr, "prefill llama_decode failed\n");
		return 1;
	}
	double t1 = now();
	if (decode(ctx, n_gen, n_vocab) != 0) {
		fprintf(stderr, "decode llama_decode failed\n");
		return 1;
	}
	double t2 = now();

	printf("{\"prefill_tok_per_s\":%.3f,\"decode_tok_per_s\":%.3f,\"threads\":%d,\"flash_attn\":\"%s\",\"system_info\":",
	       n_prompt / (t1 - t0), n_gen / (t2 - t1), n_threads, llama_flash_attn_type_name(flash));
	json_string(llama_print_system_info());
	printf("}\n");

	free(prompt);
	llama_free(ctx);
	threadpool_free(pool);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
