// A stand-in for the cuBLAS calls gpu/cuda makes, so that the binding and
// its column-major conventions are tested without a GPU: any correct GEMM
// will do, and this one is the plain loop. It checks its arguments as cuBLAS
// does (leading dimensions, a current context) and every matrix's extent
// against the emulator's allocations (a matrix that runs past its allocation
// is an illegal address, as on a GPU). In TF32 mode it rounds A and B to
// TF32 (10 mantissa bits) before multiplying, as tensor cores do; its
// cublasGemmEx takes bfloat16 operands, widened exactly.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
};
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };

// From driver.cpp.
namespace corlemu {
bool emuHasContext();
bool emuDeviceRange(CUdeviceptr p, size_t n, const char* what);
void emuDetail(const char* why);
}

namespace {
struct Handle {
    int mathMode = CUBLAS_DEFAULT_MATH;
};

float tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // round to nearest, ties away
    memcpy(&x, &u, 4);
    return x;
}

// extent is the span in floats of a column-major rows x cols matrix with
// leading dimension ld.
size_t extent(int rows, int cols, int ld) { return rows == 0 || cols == 0 ? 0 : (size_t)ld * (cols - 1) + rows; }
}  // namespace

API int cublasCreate_v2(void** h) {
    if (!corlemu::emuHasContext()) {
        corlemu::emuDetail("cublasCreate: no context is current on this host thread");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *h = new Handle;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasDestroy_v2(void* h) {
    delete (Handle*)h;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetMathMode(void* h, int mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_STATUS_INVALID_VALUE;
    ((Handle*)h)->mathMode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

// C (m x n, column-major) = alpha op(A) op(B) + beta C, alpha and beta on the
// host; with beta 0, C is not read.
API int cublasSgemm_v2(void* hv, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda,
                       const float* B, int ldb, const float* beta, float* C, int ldc) {
    Handle* h = (Handle*)hv;
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) || m < 0 || n < 0 ||
        k < 0) {
        corlemu::emuDetail("cublasSgemm: a transpose flag is neither N nor T, or m, n or k is negative");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    int arows = ta == CUBLAS_OP_N ? m : k, acols = ta == CUBLAS_OP_N ? k : m;
    int brows = tb == CUBLAS_OP_N ? k : n, bcols = tb == CUBLAS_OP_N ? n : k;
    if (lda < (arows > 1 ? arows : 1) || ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1)) {
        char buf[256];
        snprintf(buf, sizeof buf, "cublasSgemm: leading dimensions lda %d, ldb %d, ldc %d; at least %d, %d, %d", lda, ldb,
                 ldc, arows > 1 ? arows : 1, brows > 1 ? brows : 1, m > 1 ? m : 1);
        corlemu::emuDetail(buf);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if (!corlemu::emuDeviceRange((CUdeviceptr)C, 4 * extent(m, n, ldc), "cublasSgemm's C")) return CUBLAS_STATUS_EXECUTION_FAILED;
    if (k > 0 && (!corlemu::emuDeviceRange((CUdeviceptr)A, 4 * extent(arows, acols, lda), "cublasSgemm's A") ||
                  !corlemu::emuDeviceRange((CUdeviceptr)B, 4 * extent(brows, bcols, ldb), "cublasSgemm's B")))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    bool t32 = h->mathMode == CUBLAS_TF32_TENSOR_OP_MATH;
    float a0 = *alpha, b0 = *beta;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? A[(size_t)l * lda + i] : A[(size_t)i * lda + l];
                float b = tb == CUBLAS_OP_N ? B[(size_t)j * ldb + l] : B[(size_t)l * ldb + j];
                if (t32) a = tf32(a), b = tf32(b);
                acc = fmaf(a, b, acc);
            }
            float* c = &C[(size_t)j * ldc + i];
            *c = b0 == 0.0f ? a0 * acc : a0 * acc + b0 * *c;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

namespace {
enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68 };
enum { CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 };

// widen is a bfloat16 value as the float32 it stands for (exact).
float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}
}  // namespace

// The one form of cublasGemmEx corl calls: A and B bfloat16, C float32,
// float32 sums (CUBLAS_COMPUTE_32F), the default algorithm; other types
// are not supported, as a library without them would say. Each product of
// two bfloat16 values is exact in float32, as on tensor cores; the sums
// run in k order (a GPU's order differs, within float32 rounding).
API int cublasGemmEx(void* hv, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int atype, int lda,
                     const void* B, int btype, int ldb, const void* beta, void* C, int ctype, int ldc, int compute,
                     int algo) {
    Handle* h = (Handle*)hv;
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (atype != CUDA_R_16BF || btype != CUDA_R_16BF || ctype != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F ||
        (algo != CUBLAS_GEMM_DEFAULT && algo != CUBLAS_GEMM_DEFAULT_TENSOR_OP)) {
        char buf[200];
        snprintf(buf, sizeof buf, "cublasGemmEx: types A %d, B %d, C %d, compute %d, algo %d: the stand-in has bf16 x bf16 -> f32 only",
                 atype, btype, ctype, compute, algo);
        corlemu::emuDetail(buf);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) || m < 0 || n < 0 ||
        k < 0) {
        corlemu::emuDetail("cublasGemmEx: a transpose flag is neither N nor T, or m, n or k is negative");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    int arows = ta == CUBLAS_OP_N ? m : k, acols = ta == CUBLAS_OP_N ? k : m;
    int brows = tb == CUBLAS_OP_N ? k : n, bcols = tb == CUBLAS_OP_N ? n : k;
    if (lda < (arows > 1 ? arows : 1) || ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1)) {
        corlemu::emuDetail("cublasGemmEx: a leading dimension below its matrix's rows");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const uint16_t* a16 = (const uint16_t*)A;
    const uint16_t* b16 = (const uint16_t*)B;
    float* c = (float*)C;
    if (!corlemu::emuDeviceRange((CUdeviceptr)c, 4 * extent(m, n, ldc), "cublasGemmEx's C")) return CUBLAS_STATUS_EXECUTION_FAILED;
    if (k > 0 && (!corlemu::emuDeviceRange((CUdeviceptr)a16, 2 * extent(arows, acols, lda), "cublasGemmEx's A") ||
                  !corlemu::emuDeviceRange((CUdeviceptr)b16, 2 * extent(brows, bcols, ldb), "cublasGemmEx's B")))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    float a0 = *(const float*)alpha, b0 = *(const float*)beta;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int l = 0; l < k; l++) {
                float a = widen(ta == CUBLAS_OP_N ? a16[(size_t)l * lda + i] : a16[(size_t)i * lda + l]);
                float b = widen(tb == CUBLAS_OP_N ? b16[(size_t)j * ldb + l] : b16[(size_t)l * ldb + j]);
                acc = fmaf(a, b, acc);
            }
            float* o = &c[(size_t)j * ldc + i];
            *o = b0 == 0.0f ? a0 * acc : a0 * acc + b0 * *o;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}
