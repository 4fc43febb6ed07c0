// A stand-in for the cuBLAS calls gpu/cuda makes, so that the binding and
// its column-major conventions are tested without a GPU: any correct GEMM
// will do, and this one is the plain loop. It checks its arguments as cuBLAS
// does (leading dimensions, a current context) and every matrix's extent
// against the emulator's allocations (a matrix that runs past its allocation
// is an illegal address, as on a GPU). In TF32 mode it rounds A and B to
// TF32 (10 mantissa bits) before multiplying, as tensor cores do.
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
