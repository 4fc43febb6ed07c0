// Macros shared by the AVX-512 GEMM kernels of sgemm_amd64.s (float32 B
// panels) and sgemm_bf16_amd64.s (bfloat16 B panels): a twin differs in how
// it loads B, never in its FMAs or its stores, so that it keeps the bits.

// FMAROW multiplies A's broadcast element at byte off (into register bc) by
// the B panel's two vectors (Z24, Z25) and adds them to a tile row's
// accumulators lo and hi.
#define FMAROW(off, bc, lo, hi) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Z24, bc, lo; \
	VFMADD231PS Z25, bc, hi

// FMA12ROWS is a k step's FMAs for all twelve tile rows (A at AX, the B
// vectors in Z24 and Z25), their broadcasts through Z26-Z31 in turn.
#define FMA12ROWS \
	FMAROW(0, Z26, Z0, Z1); \
	FMAROW(4, Z27, Z2, Z3); \
	FMAROW(8, Z28, Z4, Z5); \
	FMAROW(12, Z29, Z6, Z7); \
	FMAROW(16, Z30, Z8, Z9); \
	FMAROW(20, Z31, Z10, Z11); \
	FMAROW(24, Z26, Z12, Z13); \
	FMAROW(28, Z27, Z14, Z15); \
	FMAROW(32, Z28, Z16, Z17); \
	FMAROW(36, Z29, Z18, Z19); \
	FMAROW(40, Z30, Z20, Z21); \
	FMAROW(44, Z31, Z22, Z23)

// ADDROW adds a tile row's accumulators lo and hi to C's row at DX.
#define ADDROW(lo, hi) \
	VADDPS (DX), lo, lo; \
	VMOVUPS lo, (DX); \
	VADDPS 64(DX), hi, hi; \
	VMOVUPS hi, 64(DX)

// SETROW stores them there instead.
#define SETROW(lo, hi) \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, 64(DX)

// PREFETCHC12 asks for the two cache lines of each of C's twelve tile rows
// (R8 bytes apart from DX; PREFETCHC2 one row, at R9) before the K loop, so
// that adding the tile to C after the loop does not wait on memory: a tile
// of C is touched once per K block, long after its rows left the caches.
// It changes no value. R9 is clobbered.
#define PREFETCHC2 \
	PREFETCHT0 (R9); \
	PREFETCHT0 64(R9); \
	ADDQ R8, R9

#define PREFETCHC12 \
	MOVQ DX, R9; \
	PREFETCHC2; PREFETCHC2; PREFETCHC2; PREFETCHC2; \
	PREFETCHC2; PREFETCHC2; PREFETCHC2; PREFETCHC2; \
	PREFETCHC2; PREFETCHC2; PREFETCHC2; PREFETCHC2

// ZERO8 clears the accumulators Z0-Z7; ZERO24 clears Z0-Z23.
#define ZERO8 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

#define ZERO24 \
	ZERO8; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// ROWS4(OP) applies OP (ADDROW or SETROW) to the tile's first four rows,
// C's rows R8 bytes apart from DX; ROWS12(OP) to all twelve.
#define ROWS4(OP) \
	OP(Z0, Z1); \
	ADDQ R8, DX; \
	OP(Z2, Z3); \
	ADDQ R8, DX; \
	OP(Z4, Z5); \
	ADDQ R8, DX; \
	OP(Z6, Z7)

#define ROWS12(OP) \
	ROWS4(OP); \
	ADDQ R8, DX; \
	OP(Z8, Z9); \
	ADDQ R8, DX; \
	OP(Z10, Z11); \
	ADDQ R8, DX; \
	OP(Z12, Z13); \
	ADDQ R8, DX; \
	OP(Z14, Z15); \
	ADDQ R8, DX; \
	OP(Z16, Z17); \
	ADDQ R8, DX; \
	OP(Z18, Z19); \
	ADDQ R8, DX; \
	OP(Z20, Z21); \
	ADDQ R8, DX; \
	OP(Z22, Z23)

// ROW128 ends a one-row kernel: its 128 sums in Z0-Z7 are added to C's
// row at DX as the edge path adds them, c += (acc + 0).
#define ROW128 \
	VPXORD Z30, Z30, Z30; \
	VADDPS Z30, Z0, Z0; \
	VADDPS Z30, Z1, Z1; \
	VADDPS Z30, Z2, Z2; \
	VADDPS Z30, Z3, Z3; \
	VADDPS Z30, Z4, Z4; \
	VADDPS Z30, Z5, Z5; \
	VADDPS Z30, Z6, Z6; \
	VADDPS Z30, Z7, Z7; \
	VADDPS (DX), Z0, Z0; \
	VMOVUPS Z0, (DX); \
	VADDPS 64(DX), Z1, Z1; \
	VMOVUPS Z1, 64(DX); \
	VADDPS 128(DX), Z2, Z2; \
	VMOVUPS Z2, 128(DX); \
	VADDPS 192(DX), Z3, Z3; \
	VMOVUPS Z3, 192(DX); \
	VADDPS 256(DX), Z4, Z4; \
	VMOVUPS Z4, 256(DX); \
	VADDPS 320(DX), Z5, Z5; \
	VMOVUPS Z5, 320(DX); \
	VADDPS 384(DX), Z6, Z6; \
	VMOVUPS Z6, 384(DX); \
	VADDPS 448(DX), Z7, Z7; \
	VMOVUPS Z7, 448(DX)
