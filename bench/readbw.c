// readbw: the machine's streaming read bandwidth, the ceiling of a
// memory-bound decode. bench/vs-llamacpp.sh compiles it (gcc -O2
// -march=native, so that the sum is vectorised as a kernel's loads are)
// and runs it beside the engines.
//
//   readbw MIB THREADS ROUNDS
//
// Each of THREADS threads sums its share of a MIB-MiB buffer (touched
// first, so page faults are not timed) ROUNDS times; the best round's
// bytes over its wall time are printed as JSON: {"threads": N,
// "gb_per_s": X}. Pick MIB well above the last-level cache.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t *buf;
static size_t words;
static int nthreads;
static pthread_barrier_t start, stop;
static volatile uint64_t sink;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// sum reads words [lo, hi) with eight independent sums, which the
// compiler turns into vector loads.
static uint64_t sum(size_t lo, size_t hi) {
	uint64_t s[8] = {0};
	for (size_t i = lo; i + 8 <= hi; i += 8)
		for (int k = 0; k < 8; k++)
			s[k] += buf[i + k];
	uint64_t t = 0;
	for (int k = 0; k < 8; k++)
		t += s[k];
	return t;
}

static int rounds;

static void *worker(void *arg) {
	long id = (long)arg;
	size_t share = words / nthreads / 8 * 8;
	for (int r = 0; r < rounds; r++) {
		pthread_barrier_wait(&start);
		sink += sum(id * share, (id + 1) * share);
		pthread_barrier_wait(&stop);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: readbw MIB THREADS ROUNDS\n");
		return 2;
	}
	size_t mib = strtoul(argv[1], NULL, 10);
	nthreads = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (mib == 0 || nthreads < 1 || rounds < 1) {
		fprintf(stderr, "readbw: MIB, THREADS and ROUNDS must be positive\n");
		return 2;
	}
	words = mib << 17;
	buf = aligned_alloc(64, words * 8);
	if (buf == NULL) {
		fprintf(stderr, "readbw: cannot allocate %zu MiB\n", mib);
		return 1;
	}
	memset(buf, 1, words * 8);
	pthread_barrier_init(&start, NULL, nthreads + 1);
	pthread_barrier_init(&stop, NULL, nthreads + 1);
	pthread_t *th = calloc(nthreads, sizeof *th);
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	double best = 0;
	size_t bytes = words / nthreads / 8 * 8 * nthreads * 8;
	for (int r = 0; r < rounds; r++) {
		pthread_barrier_wait(&start);
		double t0 = now();
		pthread_barrier_wait(&stop);
		double gbs = bytes / (now() - t0) / 1e9;
		if (gbs > best)
			best = gbs;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("{\"threads\": %d, \"gb_per_s\": %.2f}\n", nthreads, best);
	return 0;
}
