#include "common.cuh"

// A weight element as float32: a float32 one as it is, a bfloat16 one
// (its bits the high half of the float32's) widened, which is exact.
__device__ __forceinline__ float load_b(const float* B, long i) { return B[i]; }
__device__ __forceinline__ float load_b(const unsigned short* B, long i) {
    return __uint_as_float((unsigned)B[i] << 16);
}

// C (M, N; row stride ldc) = or += op(A) (M, K) @ op(B) (K, N). op(A) is A
// (stride lda) or, with transA, the transpose of A stored K x M; likewise B.
// 64x64 output tiles, 16-deep K slices in shared memory, 4x4 per thread.
// Each output's K sum runs in the same order whatever the grid, and
// whatever B is stored as: gemm_bf16's products are gemm's on the widened
// weights, bit for bit.
#define BM 64
#define BN 64
#define BK 16
template <typename TB>
__device__ void gemm_tiles(float* C, const float* A, const TB* B, int M, int N, int K,
                           int lda, int ldb, int ldc, int transA, int transB, int accumulate) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4] = {{0}};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = threadIdx.x; e < BK * BM; e += THREADS) {
            int kk = e / BM, mm = e % BM;
            int r = row0 + mm, k = k0 + kk;
            float v = 0;
            if (r < M && k < K) v = transA ? A[(long)k * lda + r] : A[(long)r * lda + k];
            As[kk][mm] = v;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int kk = e / BN, nn = e % BN;
            int c = col0 + nn, k = k0 + kk;
            float v = 0;
            if (c < N && k < K) v = load_b(B, transB ? (long)c * ldb + k : (long)k * ldb + c);
            Bs[kk][nn] = v;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) a[i] = As[kk][ty * 4 + i];
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx * 4 + j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
        int r = row0 + ty * 4 + i;
        if (r >= M) continue;
        for (int j = 0; j < 4; j++) {
            int c = col0 + tx * 4 + j;
            if (c >= N) continue;
            long o = (long)r * ldc + c;
            C[o] = accumulate ? C[o] + acc[i][j] : acc[i][j];
        }
    }
}

extern "C" __global__ void gemm(float* C, const float* A, const float* B, int M, int N, int K,
                                int lda, int ldb, int ldc, int transA, int transB, int accumulate) {
    gemm_tiles(C, A, B, M, N, K, lda, ldb, ldc, transA, transB, accumulate);
}

// gemm with B stored as bfloat16: the matmuls over weights frozen as
// bfloat16 for generation (half the bytes read), activations and sums in
// float32.
extern "C" __global__ void gemm_bf16(float* C, const float* A, const unsigned short* B, int M, int N, int K,
                                     int lda, int ldb, int ldc, int transA, int transB, int accumulate) {
    gemm_tiles(C, A, B, M, N, K, lda, ldb, ldc, transA, transB, accumulate);
}

// x rounded to bfloat16: to nearest, ties to even; a NaN stays a NaN
// (quieted), as internal/narrow.BF16.
__device__ __forceinline__ unsigned short to_bf16(float x) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

// dst (n) = src (n) rounded to bfloat16 (to_bf16).
extern "C" __global__ void round_bf16(unsigned short* dst, const float* src, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = to_bf16(src[i]);
}

// dst (n) = src (n) rounded to bfloat16 values, kept as float32: the input
// of a matmul wholly in bfloat16 where corl's GEMM kernel runs it.
extern "C" __global__ void round_bf16_f32(float* dst, const float* src, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __uint_as_float((unsigned)to_bf16(src[i]) << 16);
}

// out (N, OC) += bias (OC) broadcast over rows.
extern "C" __global__ void add_bias(float* out, const float* bias, int N, int OC) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)N * OC) out[i] += bias[i % OC];
}

// dst (M) += column sums of x (N, M); one thread per column, rows in order.
extern "C" __global__ void col_sums(float* dst, const float* x, int N, int M) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= M) return;
    float acc = dst[j];
    for (int i = 0; i < N; i++) acc += x[(long)i * M + j];
    dst[j] = acc;
}
