package cuda

import (
	"fmt"
	"sync"
)

// blas is a cuBLAS library bound at run time, and one handle on the
// backend's context.
type blas struct {
	handle uintptr

	create  func(h *uintptr) int32
	setMath func(h uintptr, mode int32) int32
	sgemm   func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uintptr, lda int32,
		b uintptr, ldb int32, beta *float32, c uintptr, ldc int32) int32
	// gemmEx multiplies other types (here: bfloat16 operands, float32
	// output and sums); nil where the library lacks it.
	gemmEx func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uintptr, atype, lda int32,
		b uintptr, btype, ldb int32, beta *float32, c uintptr, ctype, ldc int32, compute, algo int32) int32
}

const (
	cublasOpN            = 0
	cublasOpT            = 1
	cublasTF32TensorMath = 3 // CUBLAS_TF32_TENSOR_OP_MATH

	cudaR32F         = 0  // CUDA_R_32F
	cudaR16BF        = 14 // CUDA_R_16BF
	cublasCompute32F = 68 // CUBLAS_COMPUTE_32F: float32 sums
	cublasGemmDflt   = -1 // CUBLAS_GEMM_DEFAULT
)

// The names tried when no library is named: the toolkits corl's PTX targets.
var cublasNames = []string{"libcublas.so.12", "libcublas.so.11", "libcublas.so"}

var blasLibs struct {
	sync.Mutex
	byPath map[string]*blas // the bound functions, without a handle
}

// openBLAS binds cuBLAS (path, or the first of cublasNames that opens);
// the caller's context must be current (a handle belongs to it).
func openBLAS(path string, tf32 bool) (*blas, error) {
	names := cublasNames
	if path != "" {
		names = []string{path}
	}
	var lib *blas
	var errs []string
	for _, n := range names {
		l, err := bindBLAS(n)
		if err == nil {
			lib = l
			break
		}
		errs = append(errs, err.Error())
	}
	if lib == nil {
		return nil, fmt.Errorf("no cuBLAS: %v", errs)
	}
	b := *lib
	if st := b.create(&b.handle); st != 0 {
		return nil, fmt.Errorf("cublasCreate: status %d", st)
	}
	if tf32 {
		if st := b.setMath(b.handle, cublasTF32TensorMath); st != 0 {
			return nil, fmt.Errorf("cublasSetMathMode(TF32): status %d", st)
		}
	}
	return &b, nil
}

func bindBLAS(path string) (*blas, error) {
	blasLibs.Lock()
	defer blasLibs.Unlock()
	if b := blasLibs.byPath[path]; b != nil {
		return b, nil
	}
	lib, err := openLib(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s (%v)", path, err)
	}
	b := &blas{}
	if missing := bindAll(lib, []binding{
		{&b.create, []string{"cublasCreate_v2"}},
		{&b.setMath, []string{"cublasSetMathMode"}},
		{&b.sgemm, []string{"cublasSgemm_v2"}},
	}); missing != "" {
		return nil, fmt.Errorf("%s lacks %s", path, missing)
	}
	if bindAll(lib, []binding{{&b.gemmEx, []string{"cublasGemmEx"}}}) != "" {
		b.gemmEx = nil // optional: matmuls wholly in bfloat16 then run corl's kernel
	}
	if blasLibs.byPath == nil {
		blasLibs.byPath = map[string]*blas{}
	}
	blasLibs.byPath[path] = b
	return b, nil
}

// cublasOp is a transpose flag as cuBLAS takes it.
func cublasOp(t bool) int32 {
	if t {
		return cublasOpT
	}
	return cublasOpN
}

// gemmBeta is the beta of C = A B + beta C: 1 to accumulate, else 0.
func gemmBeta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

// blasGemm is gemm through cuBLAS. cuBLAS is column-major, and a row-major
// matrix read column-major is its transpose, so the row-major
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T: B and A swap
// places, keep their transpose flags, and M and N swap.
func (be *Backend) blasGemm(c, a, b uint64, M, N, K, lda, ldb, ldc int, transA, transB, acc bool) {
	alpha, beta := float32(1), gemmBeta(acc)
	defer be.bind()()
	st := be.blas.sgemm(be.blas.handle, cublasOp(transB), cublasOp(transA), int32(N), int32(M), int32(K), &alpha,
		uintptr(b), int32(ldb), uintptr(a), int32(lda), &beta, uintptr(c), int32(ldc))
	if st != 0 {
		panic(fmt.Sprintf("gpu: cublasSgemm M=%d N=%d K=%d: status %d%s", M, N, K, st, be.d.why()))
	}
}

// blasGemmBF16 is blasGemm through cublasGemmEx with a and b device
// addresses of bfloat16 values (the tensor cores' operands) and c float32,
// with float32 sums: the same column-major mapping.
func (be *Backend) blasGemmBF16(c, a, b uint64, M, N, K, lda, ldb, ldc int, transA, transB, acc bool) {
	alpha, beta := float32(1), gemmBeta(acc)
	defer be.bind()()
	st := be.blas.gemmEx(be.blas.handle, cublasOp(transB), cublasOp(transA), int32(N), int32(M), int32(K), &alpha,
		uintptr(b), cudaR16BF, int32(ldb), uintptr(a), cudaR16BF, int32(lda), &beta, uintptr(c), cudaR32F, int32(ldc),
		cublasCompute32F, cublasGemmDflt)
	if st != 0 {
		panic(fmt.Sprintf("gpu: cublasGemmEx (bfloat16) M=%d N=%d K=%d: status %d%s", M, N, K, st, be.d.why()))
	}
}
