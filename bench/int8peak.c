// int8peak: the cores' int8 multiply-add peak, the ceiling of a
// compute-bound prefill with int8 activations. bench/vs-llamacpp.sh
// compiles it (gcc -O2 -march=native) and runs it beside the engines.
//
//   int8peak THREADS
//
// Each of THREADS threads runs independent chains of the widest int8 dot
// product instruction the compiler targets (VPDPBUSD on 512 or 256 bits,
// else VPMADDUBSW+VPMADDWD on 256), enough chains to hide its latency, and,
// where the CPU has AMX, TDPBUSD on four accumulator tiles. The best of
// five rounds is printed as JSON: {"threads": N, "isa": "...",
// "gmac_per_s": X, "amx_gmac_per_s": Y or null}. A MAC is one int8×int8
// product added to a sum; the figures are what the instructions sustain
// on this machine, clock and all, with nothing read from memory.
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __AMX_INT8__
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { ITERS = 1 << 22, AMX_ITERS = 1 << 18 };

static int nthreads;
static pthread_barrier_t start, stop;
static volatile int64_t sink;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The widest dot product: each call of step does 12 independent
// instructions of MACS_PER_OP multiply-adds.
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define ISA "avx512-vnni"
#define MACS_PER_OP 64
typedef __m512i vec;
#define SET1(x) _mm512_set1_epi32(x)
#define DOT(acc, a, b) acc = _mm512_dpbusd_epi32(acc, a, b)
#define REDUCE(v) _mm512_reduce_add_epi32(v)
#elif defined(__AVXVNNI__)
#define ISA "avx-vnni"
#define MACS_PER_OP 32
typedef __m256i vec;
#define SET1(x) _mm256_set1_epi32(x)
#define DOT(acc, a, b) acc = _mm256_dpbusd_avx_epi32(acc, a, b)
#define REDUCE(v) _mm256_extract_epi32(v, 0)
#elif defined(__AVX2__)
#define ISA "avx2"
#define MACS_PER_OP 32
typedef __m256i vec;
#define SET1(x) _mm256_set1_epi32(x)
#define DOT(acc, a, b) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)))
#define REDUCE(v) _mm256_extract_epi32(v, 0)
#else
#error "int8peak needs AVX2 or later"
#endif

static int64_t dots(void) {
	vec a = SET1(0x01020304), b = SET1(0x01010101);
	// Different starting sums, so that the compiler cannot merge chains.
	vec c0 = SET1(0), c1 = SET1(1), c2 = SET1(2), c3 = SET1(3), c4 = SET1(4), c5 = SET1(5);
	vec c6 = SET1(6), c7 = SET1(7), c8 = SET1(8), c9 = SET1(9), c10 = SET1(10), c11 = SET1(11);
	for (int i = 0; i < ITERS; i++) {
		DOT(c0, a, b); DOT(c1, a, b); DOT(c2, a, b); DOT(c3, a, b);
		DOT(c4, a, b); DOT(c5, a, b); DOT(c6, a, b); DOT(c7, a, b);
		DOT(c8, a, b); DOT(c9, a, b); DOT(c10, a, b); DOT(c11, a, b);
		__asm__ volatile("" : "+v"(a), "+v"(b)); // keep the loop from being folded
	}
	return (int64_t)REDUCE(c0) + REDUCE(c1) + REDUCE(c2) + REDUCE(c3) + REDUCE(c4) + REDUCE(c5) +
	       REDUCE(c6) + REDUCE(c7) + REDUCE(c8) + REDUCE(c9) + REDUCE(c10) + REDUCE(c11);
}

static const double vecMacs = (double)ITERS * 12 * MACS_PER_OP;

#ifdef __AMX_INT8__
// tiles: TDPBUSD of a 16×64 u8 tile by a 16×64 s8 tile (as 16 rows of
// four-byte pairs) into a 16×16 int32 tile is 16·16·64 multiply-adds;
// four accumulators, two operand tiles each.
static int amx;
static uint8_t ta[16 * 64], tb[16 * 64];

static void tileconfig(void) {
	struct {
		uint8_t palette, start;
		uint8_t reserved[14];
		uint16_t colsb[16];
		uint8_t rows[16];
	} cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = 16;
	}
	_tile_loadconfig(&cfg);
}

static int64_t tiles(void) {
	tileconfig();
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	_tile_loadd(4, ta, 64);
	_tile_loadd(5, ta, 64);
	_tile_loadd(6, tb, 64);
	_tile_loadd(7, tb, 64);
	for (int i = 0; i < AMX_ITERS; i++) {
		_tile_dpbusd(0, 4, 6);
		_tile_dpbusd(1, 4, 7);
		_tile_dpbusd(2, 5, 6);
		_tile_dpbusd(3, 5, 7);
	}
	int32_t out[16 * 16];
	_tile_stored(0, out, 64);
	_tile_release();
	return out[0];
}

static const double tileMacs = (double)AMX_ITERS * 4 * 16 * 16 * 64;
#endif

static int rounds = 5;

// run does one round of phase p's work on this thread.
static void run(int p) {
	if (p == 0)
		sink += dots();
#ifdef __AMX_INT8__
	else if (amx)
		sink += tiles();
#endif
}

// worker is each thread but the first: it runs every round beside it.
static void *worker(void *arg) {
	(void)arg;
	for (int p = 0; p < 2; p++) {
		for (int r = 0; r < rounds; r++) {
			pthread_barrier_wait(&start);
			run(p);
			pthread_barrier_wait(&stop);
		}
	}
	return NULL;
}

// timed runs phase p's rounds, the first thread (this one) working and
// timing them (a thread that only timed would wait for a core to wake
// on), and returns the best rate in GMAC/s.
static double timed(int p, double macs) {
	double best = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_barrier_wait(&start);
		double t0 = now();
		run(p);
		pthread_barrier_wait(&stop);
		double rate = macs * nthreads / (now() - t0) / 1e9;
		if (rate > best)
			best = rate;
	}
	return best;
}

int main(int argc, char **argv) {
	if (argc != 2 || (nthreads = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: int8peak THREADS\n");
		return 2;
	}
#ifdef __AMX_INT8__
	// Linux hands out the tile state only on request (ARCH_REQ_XCOMP_PERM
	// for XFEATURE_XTILEDATA); a kernel or CPU without it refuses.
	amx = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
	memset(ta, 3, sizeof ta);
	memset(tb, 1, sizeof tb);
#endif
	pthread_barrier_init(&start, NULL, nthreads);
	pthread_barrier_init(&stop, NULL, nthreads);
	pthread_t *th = calloc(nthreads, sizeof *th);
	for (long i = 1; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	double vecRate = timed(0, vecMacs);
	printf("{\"threads\": %d, \"isa\": \"%s\", \"gmac_per_s\": %.1f, \"amx_gmac_per_s\": ", nthreads, ISA, vecRate);
#ifdef __AMX_INT8__
	if (amx) {
		printf("%.1f}\n", timed(1, tileMacs));
	} else {
		timed(1, 0);
		printf("null}\n");
	}
#else
	timed(1, 0);
	printf("null}\n");
#endif
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
