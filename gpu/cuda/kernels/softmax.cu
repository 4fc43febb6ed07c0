#include "common.cuh"

// Row-wise softmax family over (N, V), one block per row; sums in double.

__device__ double row_lse(const float* x, int V, float invT, float* fbuf, double* dbuf, float* maxv) {
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, x[j] * invT);
    mx = block_max(mx, fbuf);
    double s = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += exp((double)(x[j] * invT - mx));
    s = block_sum(s, dbuf);
    *maxv = mx;
    return (double)mx + log(s);
}

extern "C" __global__ void softmax_forward(float* out, const float* inp, int N, int V, float temperature) {
    __shared__ float fbuf[THREADS];
    __shared__ double dbuf[THREADS];
    const float* x = inp + (long)blockIdx.x * V;
    float invT = 1.0f / temperature, mx;
    double lse = row_lse(x, V, invT, fbuf, dbuf, &mx);
    for (int j = threadIdx.x; j < V; j += blockDim.x) out[(long)blockIdx.x * V + j] = (float)exp((double)(x[j] * invT) - lse);
}

// dinp += out * (dout - sum(dout * out)) / temperature.
extern "C" __global__ void softmax_backward(float* dinp, const float* dout, const float* out, int N, int V, float temperature) {
    __shared__ double dbuf[THREADS];
    long base = (long)blockIdx.x * V;
    double s = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += (double)(dout[base + j] * out[base + j]);
    float sf = (float)block_sum(s, dbuf), invT = 1.0f / temperature;
    for (int j = threadIdx.x; j < V; j += blockDim.x) dinp[base + j] += out[base + j] * (dout[base + j] - sf) * invT;
}

extern "C" __global__ void logsoftmax_forward(float* out, const float* inp, int N, int V) {
    __shared__ float fbuf[THREADS];
    __shared__ double dbuf[THREADS];
    const float* x = inp + (long)blockIdx.x * V;
    float mx;
    double lse = row_lse(x, V, 1.0f, fbuf, dbuf, &mx);
    for (int j = threadIdx.x; j < V; j += blockDim.x) out[(long)blockIdx.x * V + j] = (float)((double)x[j] - lse);
}

// dinp += dout - exp(out) * sum(dout).
extern "C" __global__ void logsoftmax_backward(float* dinp, const float* dout, const float* out, int N, int V) {
    __shared__ double dbuf[THREADS];
    long base = (long)blockIdx.x * V;
    double s = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += dout[base + j];
    float sf = (float)block_sum(s, dbuf);
    for (int j = threadIdx.x; j < V; j += blockDim.x) dinp[base + j] += dout[base + j] - __expf(out[base + j]) * sf;
}

// logp[i] = log_softmax(logits[i])[targets[i]]; stats (N, 2) when non-null:
// entropy lse - sum p x, and KL(uniform || p) = lse - mean(x) - log V.
extern "C" __global__ void token_logprobs(float* logp, float* stats, const float* logits, const int* targets, int N, int V) {
    __shared__ float fbuf[THREADS];
    __shared__ double dbuf[THREADS];
    const float* x = logits + (long)blockIdx.x * V;
    float mx;
    double lse = row_lse(x, V, 1.0f, fbuf, dbuf, &mx);
    if (threadIdx.x == 0) logp[blockIdx.x] = (float)((double)x[targets[blockIdx.x]] - lse);
    if (!stats) return;
    double px = 0, sx = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        px += exp((double)(x[j] - mx)) * x[j];
        sx += x[j];
    }
    px = block_sum(px, dbuf) / exp(lse - mx);
    sx = block_sum(sx, dbuf);
    if (threadIdx.x == 0) {
        stats[2 * blockIdx.x] = (float)(lse - px);
        stats[2 * blockIdx.x + 1] = (float)(lse - sx / V - log((double)V));
    }
}

// dlogits (N, V) = w[i] * (onehot(target) - softmax(logits)); overwrites.
extern "C" __global__ void token_logprobs_backward(float* dlogits, const float* logits, const int* targets,
                                                   const float* w, int N, int V) {
    __shared__ float fbuf[THREADS];
    __shared__ double dbuf[THREADS];
    long base = (long)blockIdx.x * V;
    float wi = w[blockIdx.x];
    if (wi == 0.0f) {
        for (int j = threadIdx.x; j < V; j += blockDim.x) dlogits[base + j] = 0.0f;
        return;
    }
    float mx;
    double lse = row_lse(logits + base, V, 1.0f, fbuf, dbuf, &mx);
    int t = targets[blockIdx.x];
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float g = -wi * (float)exp((double)logits[base + j] - lse);
        if (j == t) g += wi;
        dlogits[base + j] = g;
    }
}
