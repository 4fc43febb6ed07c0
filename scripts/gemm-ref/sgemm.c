/* The reference corl bench gemm compares its GEMM with: OpenBLAS's
 * cblas_sgemm on the same shapes, timed the same way. It stays outside
 * the Go build (corl is cgo-free); make bench-gemm compiles it against
 * Debian's libopenblas-dev.
 *
 * Input, one shape per line on stdin: "M N K" for C (M x N) = A (M x K)
 * times B^T, B stored N x K (corl's MatMulForward: activations times a
 * weight matrix used transposed). Output, one line per shape: "M N K
 * GFLOP/s", the best of three timed batches, each of as many calls as fill
 * a quarter of a second after one untimed call. Threads: OPENBLAS_NUM_THREADS. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float *randoms(size_t n, unsigned *seed) {
	float *x = malloc(n * sizeof *x);
	if (!x) {
		fprintf(stderr, "sgemm-ref: out of memory for %zu floats\n", n);
		exit(1);
	}
	for (size_t i = 0; i < n; i++) x[i] = (float)rand_r(seed) / RAND_MAX - 0.5f;
	return x;
}

int main(void) {
	int M, N, K;
	unsigned seed = 1;
	while (scanf("%d %d %d", &M, &N, &K) == 3) {
		if (M <= 0 || N <= 0 || K <= 0) {
			fprintf(stderr, "sgemm-ref: bad shape %d %d %d\n", M, N, K);
			return 2;
		}
		float *a = randoms((size_t)M * K, &seed), *b = randoms((size_t)N * K, &seed), *c = randoms((size_t)M * N, &seed);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, a, K, b, K, 0, c, N);
		double best = 0, flop = 2.0 * M * N * K;
		for (int r = 0; r < 3; r++) {
			int calls = 0;
			double t0 = now(), t;
			do {
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, a, K, b, K, 0, c, N);
				calls++;
				t = now() - t0;
			} while (t < 0.25);
			if (flop * calls / t / 1e9 > best) best = flop * calls / t / 1e9;
		}
		printf("%d %d %d %.2f\n", M, N, K, best);
		fflush(stdout);
		free(a);
		free(b);
		free(c);
	}
	return 0;
}
