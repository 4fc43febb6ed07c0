#include "common.cuh"

// Causal attention with grouped-query heads. q, out (B, Tq, NH*HS); k, v
// (B, Tcap, NKV*HS); att (B, NH, Tq, Tk). Query tq of row b is at position
// klen[b]-Tq+tq (klen null: Tk for every row) and sees keys 0..position.

__device__ inline int keys_of(const int* klen, int b, int Tk) { return klen ? klen[b] : Tk; }

// The keys and values attention_forward reads: float32 rows (B, Tcap,
// NKV*HS), or a binary16 cache, head-major (B, NKV, Tcap, HS), widened
// exactly as it is read.
struct kv_rows {
    const float *k, *v;
    int Tcap, CKV;
    __device__ float key(int b, int g, int t, int i) const { return k[((long)b * Tcap + t) * CKV + i]; }
    __device__ float val(int b, int g, int t, int i) const { return v[((long)b * Tcap + t) * CKV + i]; }
};
struct kv_half {
    const unsigned short *k, *v;
    int Tcap, NKV, HS;
    __device__ float key(int b, int g, int t, int i) const { return from_f16(k[(((long)b * NKV + g) * Tcap + t) * HS + i]); }
    __device__ float val(int b, int g, int t, int i) const { return from_f16(v[(((long)b * NKV + g) * Tcap + t) * HS + i]); }
};

// One block per (b, h, tq). kv's key(b, g, t, i) is element i of key head
// g at position t of row b (for float32 rows, k offset to head g already).
template <typename KV>
__device__ void attend(float* out, float* att, const float* q, KV kv, int g, const int* klen, int B, int Tq, int Tk,
                       int NH, int HS) {
    __shared__ float buf[THREADS];
    int tq = blockIdx.x % Tq, bh = blockIdx.x / Tq, h = bh % NH, b = bh / NH;
    int C = NH * HS;
    int pos = keys_of(klen, b, Tk) - Tq + tq;
    float scale = rsqrtf((float)HS);
    const float* qv = q + ((long)b * Tq + tq) * C + h * HS;
    float* row = att + (((long)b * NH + h) * Tq + tq) * Tk;
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < Tk; t += blockDim.x) {
        float s = 0;
        if (t <= pos) {
            for (int i = 0; i < HS; i++) s = fmaf(qv[i], kv.key(b, g, t, i), s);
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
        for (int t = 0; t <= pos; t++) acc = fmaf(row[t], kv.val(b, g, t, i), acc);
        o[i] = acc;
    }
}

extern "C" __global__ void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                                             const int* klen, int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    int h = (blockIdx.x / Tq) % NH, kvo = (h / (NH / NKV)) * HS;
    attend(out, att, q, kv_rows{k + kvo, v + kvo, Tcap, NKV * HS}, 0, klen, B, Tq, Tk, NH, HS);
}

// attention_forward over a binary16 cache (gpu.HalfKV), one query row:
// the bits of attention_forward over float32 rows holding the cache's
// values, as both read them in one order.
extern "C" __global__ void attention_forward_half(float* out, float* att, const float* q, const unsigned short* k,
                                                  const unsigned short* v, const int* klen, int B, int Tk, int Tcap,
                                                  int NH, int NKV, int HS) {
    int h = blockIdx.x % NH;
    attend(out, att, q, kv_half{k, v, Tcap, NKV, HS}, h / (NH / NKV), klen, B, 1, Tk, NH, HS);
}

// store_half rounds row i of src (rows x NKV*HS) to binary16 (to_f16) and
// writes head h of it at value at[i] + h*Tcap*HS of dst; a negative at[i]
// leaves the row out. The stored rows of src are left holding the rounded
// values (widened), so float32 attention over them sees what the cache
// holds.
extern "C" __global__ void store_half(unsigned short* dst, const int* at, float* src, int rows, int NKV, int HS, int Tcap) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long w = (long)NKV * HS;
    if (idx >= rows * w) return;
    int i = (int)(idx / w), r = (int)(idx % w), h = r / HS, j = r % HS;
    long o = at[i];
    if (o < 0) return;
    unsigned short x = to_f16(src[idx]);
    dst[o + (long)h * Tcap * HS + j] = x;
    src[idx] = from_f16(x);
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
