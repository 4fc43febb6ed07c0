#include "common.cuh"

// out (N, C) = inp * rstd * w; rstd (N) saved. One block per row.
extern "C" __global__ void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w,
                                           int N, int C, float eps) {
    __shared__ double buf[THREADS];
    const float* x = inp + (long)blockIdx.x * C;
    double ss = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) ss += (double)x[c] * x[c];
    ss = block_sum(ss, buf);
    float r = (float)(1.0 / sqrt(ss / C + (double)eps));
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
    float* o = out + (long)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * r * w[c];
}

// dinp += rstd * (w*dout - xhat * mean(w*dout*xhat)), one block per row.
extern "C" __global__ void rmsnorm_backward_input(float* dinp, const float* dout, const float* inp,
                                                  const float* w, const float* rstd, int N, int C) {
    __shared__ double buf[THREADS];
    long base = (long)blockIdx.x * C;
    float r = rstd[blockIdx.x];
    double dot = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dot += (double)(dout[base + c] * w[c] * inp[base + c] * r);
    dot = block_sum(dot, buf);
    float m = (float)(dot / C);
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dinp[base + c] += r * (dout[base + c] * w[c] - inp[base + c] * r * m);
}

// dw (C) += sum over rows of dout * inp * rstd; one thread per column.
extern "C" __global__ void rmsnorm_backward_weight(float* dw, const float* dout, const float* inp,
                                                   const float* rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float acc = dw[c];
    for (int i = 0; i < N; i++) acc += dout[(long)i * C + c] * inp[(long)i * C + c] * rstd[i];
    dw[c] = acc;
}
