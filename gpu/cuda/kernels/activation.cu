#include "common.cuh"

#define GELU_SCALE 0.7978845608028654f

// GELU, tanh form: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
extern "C" __global__ void gelu_forward(float* out, const float* inp, int n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
}

// dinp += gelu'(inp) * dout.
extern "C" __global__ void gelu_backward(float* dinp, const float* dout, const float* inp, int n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    float th = tanhf(GELU_SCALE * (x + 0.044715f * x * x * x));
    float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += g * dout[i];
}

// out (N, H) = silu(gate) * up with gateup (N, 2H) = [gate | up].
extern "C" __global__ void swiglu_forward(float* out, const float* gu, int N, int H) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)N * H) return;
    long r = idx / H, j = idx % H;
    float g = gu[2 * r * H + j], u = gu[(2 * r + 1) * H + j];
    out[idx] = g / (1.0f + __expf(-g)) * u;
}

// dgate += dout*up*s*(1+g*(1-s)); dup += dout*silu(g).
extern "C" __global__ void swiglu_backward(float* dgu, const float* dout, const float* gu, int N, int H) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)N * H) return;
    long r = idx / H, j = idx % H;
    float g = gu[2 * r * H + j], u = gu[(2 * r + 1) * H + j], d = dout[idx];
    float s = 1.0f / (1.0f + __expf(-g));
    dgu[2 * r * H + j] += d * u * s * (1.0f + g * (1.0f - s));
    dgu[(2 * r + 1) * H + j] += d * g * s;
}

// out = a + b.
extern "C" __global__ void add(float* out, const float* a, const float* b, int n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

// x *= s.
extern "C" __global__ void scale(float* x, int n, float s) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
