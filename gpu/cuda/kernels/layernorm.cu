#include "common.cuh"

// out (N, C) = (inp - mean) * rstd * w + b; mean, rstd (N) saved.
extern "C" __global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                             const float* w, const float* b, int N, int C, float eps) {
    __shared__ double buf[THREADS];
    const float* x = inp + (long)blockIdx.x * C;
    double s = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
    double m = block_sum(s, buf) / C;
    double v = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) v += (x[c] - m) * (x[c] - m);
    v = block_sum(v, buf);
    float mf = (float)m, rf = (float)(1.0 / sqrt(v / C + (double)eps));
    if (threadIdx.x == 0) { mean[blockIdx.x] = mf; rstd[blockIdx.x] = rf; }
    float* o = out + (long)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = (x[c] - mf) * rf * w[c] + b[c];
}

// dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
extern "C" __global__ void layernorm_backward_input(float* dinp, const float* dout, const float* inp,
                                                    const float* w, const float* mean, const float* rstd,
                                                    int N, int C) {
    __shared__ double buf[THREADS];
    long base = (long)blockIdx.x * C;
    float m = mean[blockIdx.x], r = rstd[blockIdx.x];
    double sd = 0, sdn = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float dn = w[c] * dout[base + c];
        sd += dn;
        sdn += (double)(dn * (inp[base + c] - m) * r);
    }
    float md = (float)(block_sum(sd, buf) / C);
    float mdn = (float)(block_sum(sdn, buf) / C);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float n = (inp[base + c] - m) * r;
        dinp[base + c] += r * (w[c] * dout[base + c] - md - n * mdn);
    }
}

// dw += sum dout * norm, db += sum dout; one thread per column, rows in order.
extern "C" __global__ void layernorm_backward_params(float* dw, float* db, const float* dout, const float* inp,
                                                     const float* mean, const float* rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = dw[c], ab = db[c];
    for (int i = 0; i < N; i++) {
        float d = dout[(long)i * C + c];
        aw += d * (inp[(long)i * C + c] - mean[i]) * rstd[i];
        ab += d;
    }
    dw[c] = aw;
    db[c] = ab;
}
