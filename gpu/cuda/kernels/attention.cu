#include "common.cuh"

// Causal attention with grouped-query heads. q, out (B, Tq, NH*HS); k, v
// (B, Tcap, NKV*HS); att (B, NH, Tq, Tk). Query tq of row b is at position
// klen[b]-Tq+tq (klen null: Tk for every row) and sees keys 0..position.

__device__ inline int keys_of(const int* klen, int b, int Tk) { return klen ? klen[b] : Tk; }

// One block per (b, h, tq).
extern "C" __global__ void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                                             const int* klen, int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    __shared__ float buf[THREADS];
    int tq = blockIdx.x % Tq, bh = blockIdx.x / Tq, h = bh % NH, b = bh / NH;
    int C = NH * HS, CKV = NKV * HS, kvo = (h / (NH / NKV)) * HS;
    int pos = keys_of(klen, b, Tk) - Tq + tq;
    float scale = rsqrtf((float)HS);
    const float* qv = q + ((long)b * Tq + tq) * C + h * HS;
    float* row = att + (((long)b * NH + h) * Tq + tq) * Tk;
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) {
        float s = 0;
        if (t <= pos) {
            const float* kv = k + ((long)b * Tcap + t) * CKV + kvo;
            for (int i = 0; i < HS; i++) s = fmaf(qv[i], kv[i], s);
            s *= scale;
            mx = fmaxf(mx, s);
        }
        row[t] = s;
    }
    mx = block_max(mx, buf);
    float sum = 0;
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) {
        float e = t <= pos ? __expf(row[t] - mx) : 0.0f;
        row[t] = e;
        sum += e;
    }
    sum = block_sum(sum, buf);
    float inv = 1.0f / sum;
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) row[t] *= inv;
    __syncthreads();
    float* o = out + ((long)b * Tq + tq) * C + h * HS;
    for (int i = threadIdx.x; i < HS; i += blockDim.x) {
        float acc = 0;
        for (int t = 0; t <= pos; t++) acc = fmaf(row[t], v[((long)b * Tcap + t) * CKV + kvo + i], acc);
        o[i] = acc;
    }
}

// Backward step 1, one block per (b, h, tq): ds = p * (dp - sum(p * dp)) * scale
// with dp[t] = dout . v[t], written to ds (shaped like att); dq += ds @ k.
extern "C" __global__ void attention_backward_query(float* dq, float* ds, const float* dout, const float* att,
                                                    const float* k, const float* v, const int* klen,
                                                    int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    __shared__ float buf[THREADS];
    int tq = blockIdx.x % Tq, bh = blockIdx.x / Tq, h = bh % NH, b = bh / NH;
    int C = NH * HS, CKV = NKV * HS, kvo = (h / (NH / NKV)) * HS;
    int pos = keys_of(klen, b, Tk) - Tq + tq;
    float scale = rsqrtf((float)HS);
    const float* d = dout + ((long)b * Tq + tq) * C + h * HS;
    const float* p = att + (((long)b * NH + h) * Tq + tq) * Tk;
    float* s = ds + (((long)b * NH + h) * Tq + tq) * Tk;
    float dot = 0;
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) {
        float dp = 0;
        if (t <= pos) {
            const float* vv = v + ((long)b * Tcap + t) * CKV + kvo;
            for (int i = 0; i < HS; i++) dp = fmaf(d[i], vv[i], dp);
        }
        s[t] = dp;
        dot += p[t] * dp;
    }
    dot = block_sum(dot, buf);
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) s[t] = t <= pos ? p[t] * (s[t] - dot) * scale : 0.0f;
    __syncthreads();
    float* g = dq + ((long)b * Tq + tq) * C + h * HS;
    for (int i = threadIdx.x; i < HS; i += blockDim.x) {
        float acc = 0;
        for (int t = 0; t <= pos; t++) acc = fmaf(s[t], k[((long)b * Tcap + t) * CKV + kvo + i], acc);
        g[i] += acc;
    }
}

// Backward step 2, one block per (b, kv head, key t): dk[t] += sum ds * q,
// dv[t] += sum p * dout over the group's query heads and the queries that see t.
extern "C" __global__ void attention_backward_kv(float* dk, float* dv, const float* ds, const float* att,
                                                 const float* q, const float* dout, const int* klen,
                                                 int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    int t = blockIdx.x % Tk, bk = blockIdx.x / Tk, kvh = bk % NKV, b = bk / NKV;
    int C = NH * HS, CKV = NKV * HS, group = NH / NKV;
    int first = t - (keys_of(klen, b, Tk) - Tq);  // first query that sees t
    if (first < 0) first = 0;
    for (int i = threadIdx.x; i < HS; i += blockDim.x) {
        float ak = 0, av = 0;
        for (int h = kvh * group; h < (kvh + 1) * group; h++) {
            for (int tq = first; tq < Tq; tq++) {
                long a = (((long)b * NH + h) * Tq + tq) * Tk + t;
                long qi = ((long)b * Tq + tq) * C + h * HS + i;
                ak = fmaf(ds[a], q[qi], ak);
                av = fmaf(att[a], dout[qi], av);
            }
        }
        long o = ((long)b * Tcap + t) * CKV + kvh * HS + i;
        dk[o] += ak;
        dv[o] += av;
    }
}
