#include "common.cuh"

// Attention in tiles with an online softmax (FlashAttention-2's algorithm):
// the probabilities are never stored, so memory is O(T), not O(T^2). The
// forward keeps each query's log-sum-exp of its scaled scores (lse, (B, NH,
// Tq)); the backward recomputes the probabilities from it, tile by tile.
// Shapes as attention.cu's: q, out (B, Tq, NH*HS); k, v (B, Tcap, NKV*HS);
// query tq of row b is at position klen[b]-Tq+tq (klen null: Tk) and sees
// keys 0..position. Head sizes up to FLASH_HS.
//
// One thread owns one query (forward, dq) or one key (dk, dv), THREADS of
// them a block, and loops over the other side in tiles of FLASH_TILE rows
// staged in shared memory; every sum runs in one fixed order, so results do
// not depend on scheduling. Correctness first: a thread's accumulators are
// FLASH_HS floats of local memory, not tensor-core fragments.

#define FLASH_HS 128
#define FLASH_TILE 32

__device__ inline int flash_keys(const int* klen, int b, int Tk) { return klen ? klen[b] : Tk; }

// stage copies rows [t0, t0+FLASH_TILE) of one head (stride `stride`,
// offset `off`) into tile, rows at or past `end` left unread.
__device__ inline void flash_stage(float* tile, const float* src, long base, int t0, int end, int stride, int off, int HS) {
    for (int e = threadIdx.x; e < FLASH_TILE * HS; e += blockDim.x) {
        int j = e / HS, i = e % HS, t = t0 + j;
        tile[j * FLASH_HS + i] = t < end ? src[(base + t) * stride + off + i] : 0.0f;
    }
}

// Forward, one block per (b, h, THREADS queries).
extern "C" __global__ void flash_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                                                   const int* klen, int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    __shared__ float ks[FLASH_TILE * FLASH_HS], vs[FLASH_TILE * FLASH_HS];
    int tiles = (Tq + THREADS - 1) / THREADS;
    int tile = blockIdx.x % tiles, bh = blockIdx.x / tiles, h = bh % NH, b = bh / NH;
    int C = NH * HS, CKV = NKV * HS, kvo = (h / (NH / NKV)) * HS;
    int keys = flash_keys(klen, b, Tk), tq = tile * THREADS + threadIdx.x;
    bool active = tq < Tq;
    int pos = keys - Tq + tq;                                    // this query's last key
    int last = keys - Tq + min(Tq, (tile + 1) * THREADS) - 1;    // the block's
    float scale = rsqrtf((float)HS);
    float qv[FLASH_HS], o[FLASH_HS];
    for (int i = 0; i < HS; i++) {
        qv[i] = active ? q[((long)b * Tq + tq) * C + h * HS + i] : 0.0f;
        o[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int t0 = 0; t0 <= last; t0 += FLASH_TILE) {
        __syncthreads();  // the previous tile is read
        flash_stage(ks, k, (long)b * Tcap, t0, last + 1, CKV, kvo, HS);
        flash_stage(vs, v, (long)b * Tcap, t0, last + 1, CKV, kvo, HS);
        __syncthreads();
        if (!active) continue;
        for (int j = 0; j < FLASH_TILE && t0 + j <= pos; j++) {
            float s = 0.0f;
            for (int i = 0; i < HS; i++) s = fmaf(qv[i], ks[j * FLASH_HS + i], s);
            s *= scale;
            if (s > m) {  // a new maximum: rescale what was summed under the old one
                float c = __expf(m - s);
                l *= c;
                for (int i = 0; i < HS; i++) o[i] *= c;
                m = s;
            }
            float p = __expf(s - m);
            l += p;
            for (int i = 0; i < HS; i++) o[i] = fmaf(p, vs[j * FLASH_HS + i], o[i]);
        }
    }
    if (!active) return;
    float inv = 1.0f / l;
    float* dst = out + ((long)b * Tq + tq) * C + h * HS;
    for (int i = 0; i < HS; i++) dst[i] = o[i] * inv;
    lse[((long)b * NH + h) * Tq + tq] = m + __logf(l);
}

// Backward step 1, one block per (b, h, THREADS queries): delta = dout . out
// (saved for step 2) and dq += sum over keys of ds * k, where
// ds = p * (dout . v - delta) * scale and p = exp(s - lse).
extern "C" __global__ void flash_attention_backward_query(float* dq, float* delta, const float* dout, const float* out,
                                                          const float* lse, const float* q, const float* k, const float* v,
                                                          const int* klen, int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    __shared__ float ks[FLASH_TILE * FLASH_HS], vs[FLASH_TILE * FLASH_HS];
    int tiles = (Tq + THREADS - 1) / THREADS;
    int tile = blockIdx.x % tiles, bh = blockIdx.x / tiles, h = bh % NH, b = bh / NH;
    int C = NH * HS, CKV = NKV * HS, kvo = (h / (NH / NKV)) * HS;
    int keys = flash_keys(klen, b, Tk), tq = tile * THREADS + threadIdx.x;
    bool active = tq < Tq;
    int pos = keys - Tq + tq;
    int last = keys - Tq + min(Tq, (tile + 1) * THREADS) - 1;
    float scale = rsqrtf((float)HS);
    long row = ((long)b * Tq + tq) * C + h * HS;
    float qv[FLASH_HS], dv[FLASH_HS], g[FLASH_HS];
    float d = 0.0f, L = 0.0f;
    if (active) {
        for (int i = 0; i < HS; i++) {
            qv[i] = q[row + i];
            dv[i] = dout[row + i];
            g[i] = 0.0f;
            d = fmaf(dv[i], out[row + i], d);
        }
        L = lse[((long)b * NH + h) * Tq + tq];
        delta[((long)b * NH + h) * Tq + tq] = d;
    }
    for (int t0 = 0; t0 <= last; t0 += FLASH_TILE) {
        __syncthreads();
        flash_stage(ks, k, (long)b * Tcap, t0, last + 1, CKV, kvo, HS);
        flash_stage(vs, v, (long)b * Tcap, t0, last + 1, CKV, kvo, HS);
        __syncthreads();
        if (!active) continue;
        for (int j = 0; j < FLASH_TILE && t0 + j <= pos; j++) {
            float s = 0.0f, dp = 0.0f;
            for (int i = 0; i < HS; i++) {
                s = fmaf(qv[i], ks[j * FLASH_HS + i], s);
                dp = fmaf(dv[i], vs[j * FLASH_HS + i], dp);
            }
            float p = __expf(s * scale - L);
            float ds = p * (dp - d) * scale;
            for (int i = 0; i < HS; i++) g[i] = fmaf(ds, ks[j * FLASH_HS + i], g[i]);
        }
    }
    if (!active) return;
    for (int i = 0; i < HS; i++) dq[row + i] += g[i];
}

// Backward step 2, one block per (b, kv head, THREADS keys): over the
// group's query heads and the queries that see the key, dv += p * dout and
// dk += ds * q.
extern "C" __global__ void flash_attention_backward_kv(float* dk, float* dv, const float* dout, const float* lse,
                                                       const float* delta, const float* q, const float* k, const float* v,
                                                       const int* klen, int B, int Tq, int Tk, int Tcap, int NH, int NKV, int HS) {
    __shared__ float qs[FLASH_TILE * FLASH_HS], dos[FLASH_TILE * FLASH_HS];
    __shared__ float ls[FLASH_TILE], dl[FLASH_TILE];
    int tiles = (Tk + THREADS - 1) / THREADS;
    int tile = blockIdx.x % tiles, bk = blockIdx.x / tiles, kvh = bk % NKV, b = bk / NKV;
    int C = NH * HS, CKV = NKV * HS, group = NH / NKV;
    int keys = flash_keys(klen, b, Tk), t = tile * THREADS + threadIdx.x;
    bool active = t < keys;
    int first = max(0, tile * THREADS - (keys - Tq));  // the first query that sees the block's first key
    float scale = rsqrtf((float)HS);
    long row = ((long)b * Tcap + t) * CKV + kvh * HS;
    float kv[FLASH_HS], vv[FLASH_HS], gk[FLASH_HS], gv[FLASH_HS];
    for (int i = 0; i < HS; i++) {
        kv[i] = active ? k[row + i] : 0.0f;
        vv[i] = active ? v[row + i] : 0.0f;
        gk[i] = gv[i] = 0.0f;
    }
    for (int h = kvh * group; h < (kvh + 1) * group; h++) {
        for (int q0 = first; q0 < Tq; q0 += FLASH_TILE) {
            __syncthreads();
            flash_stage(qs, q, (long)b * Tq, q0, Tq, C, h * HS, HS);
            flash_stage(dos, dout, (long)b * Tq, q0, Tq, C, h * HS, HS);
            for (int j = threadIdx.x; j < FLASH_TILE; j += blockDim.x) {
                bool in = q0 + j < Tq;
                ls[j] = in ? lse[((long)b * NH + h) * Tq + q0 + j] : 0.0f;
                dl[j] = in ? delta[((long)b * NH + h) * Tq + q0 + j] : 0.0f;
            }
            __syncthreads();
            if (!active) continue;
            for (int j = 0; j < FLASH_TILE && q0 + j < Tq; j++) {
                if (keys - Tq + q0 + j < t) continue;  // this query does not see key t
                float s = 0.0f, dp = 0.0f;
                for (int i = 0; i < HS; i++) {
                    s = fmaf(qs[j * FLASH_HS + i], kv[i], s);
                    dp = fmaf(dos[j * FLASH_HS + i], vv[i], dp);
                }
                float p = __expf(s * scale - ls[j]);
                float g = p * (dp - dl[j]) * scale;
                for (int i = 0; i < HS; i++) {
                    gv[i] = fmaf(p, dos[j * FLASH_HS + i], gv[i]);
                    gk[i] = fmaf(g, qs[j * FLASH_HS + i], gk[i]);
                }
            }
        }
    }
    if (!active) return;
    for (int i = 0; i < HS; i++) {
        dk[row + i] += gk[i];
        dv[row + i] += gv[i];
    }
}
