#include "common.cuh"

#define SUM_CHUNK 16384

// partial[c] = sum of squares of x[c*SUM_CHUNK .. ) in double; the host adds
// the partials in chunk order (the CPU backend's chunking, so both agree).
extern "C" __global__ void sum_squares(double* partial, const float* x, int n) {
    __shared__ double buf[THREADS];
    long lo = (long)blockIdx.x * SUM_CHUNK, hi = min((long)n, lo + SUM_CHUNK);
    double s = 0;
    for (long i = lo + threadIdx.x; i < hi; i += blockDim.x) s += (double)x[i] * x[i];
    s = block_sum(s, buf);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// AdamW with bias correction; g is scaled by gscale (clipping) first.
extern "C" __global__ void adamw(float* p, const float* g, float* m, float* v, int n, float lr, float b1, float b2,
                                 float eps, float wd, float bc1, float bc2, float gscale) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gr = g[i] * gscale;
    float mi = b1 * m[i] + (1.0f - b1) * gr;
    float vi = b2 * v[i] + (1.0f - b2) * gr * gr;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p[i]);
}
