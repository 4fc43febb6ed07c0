//go:build amd64 && !purego

#include "textflag.h"

// FMAROW multiplies A's broadcast element at byte off (into register bc) by
// the B panel's two vectors (Z24, Z25) and adds them to a tile row's
// accumulators lo and hi.
#define FMAROW(off, bc, lo, hi) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Z24, bc, lo; \
	VFMADD231PS Z25, bc, hi

// ADDROW adds a tile row's accumulators lo and hi to C's row at DX.
#define ADDROW(lo, hi) \
	VADDPS (DX), lo, lo; \
	VMOVUPS lo, (DX); \
	VADDPS 64(DX), hi, hi; \
	VMOVUPS hi, 64(DX)

// SETROW stores a tile row's accumulators lo and hi as C's row at DX.
#define SETROW(lo, hi) \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, 64(DX)

// func kern12x32AVX512(kb int, a, b, c *float32, ldc int, set bool)
//
// C[12][32] (row stride ldc) += A panel (kb x 12, a[p*12+i]) times B panel
// (kb x 32, b[p*32+j]); with set, C = the product (what adding it to a
// cleared C gives: the sums start at +0, so none is -0). Z0-Z23 hold the
// tile: row i in Z(2i) and Z(2i+1). Per k step: two loads of B, twelve
// broadcasts of A, twenty-four FMAs.
TEXT ·kern12x32AVX512(SB), NOSPLIT, $0-41
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
loop:
	VMOVUPS (BX), Z24
	VMOVUPS 64(BX), Z25
	FMAROW(0, Z26, Z0, Z1)
	FMAROW(4, Z27, Z2, Z3)
	FMAROW(8, Z28, Z4, Z5)
	FMAROW(12, Z29, Z6, Z7)
	FMAROW(16, Z30, Z8, Z9)
	FMAROW(20, Z31, Z10, Z11)
	FMAROW(24, Z26, Z12, Z13)
	FMAROW(28, Z27, Z14, Z15)
	FMAROW(32, Z28, Z16, Z17)
	FMAROW(36, Z29, Z18, Z19)
	FMAROW(40, Z30, Z20, Z21)
	FMAROW(44, Z31, Z22, Z23)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop
	CMPB set+40(FP), $0
	JNE  store
	ADDROW(Z0, Z1)
	ADDQ R8, DX
	ADDROW(Z2, Z3)
	ADDQ R8, DX
	ADDROW(Z4, Z5)
	ADDQ R8, DX
	ADDROW(Z6, Z7)
	ADDQ R8, DX
	ADDROW(Z8, Z9)
	ADDQ R8, DX
	ADDROW(Z10, Z11)
	ADDQ R8, DX
	ADDROW(Z12, Z13)
	ADDQ R8, DX
	ADDROW(Z14, Z15)
	ADDQ R8, DX
	ADDROW(Z16, Z17)
	ADDQ R8, DX
	ADDROW(Z18, Z19)
	ADDQ R8, DX
	ADDROW(Z20, Z21)
	ADDQ R8, DX
	ADDROW(Z22, Z23)
	VZEROUPPER
	RET
store:
	SETROW(Z0, Z1)
	ADDQ R8, DX
	SETROW(Z2, Z3)
	ADDQ R8, DX
	SETROW(Z4, Z5)
	ADDQ R8, DX
	SETROW(Z6, Z7)
	ADDQ R8, DX
	SETROW(Z8, Z9)
	ADDQ R8, DX
	SETROW(Z10, Z11)
	ADDQ R8, DX
	SETROW(Z12, Z13)
	ADDQ R8, DX
	SETROW(Z14, Z15)
	ADDQ R8, DX
	SETROW(Z16, Z17)
	ADDQ R8, DX
	SETROW(Z18, Z19)
	ADDQ R8, DX
	SETROW(Z20, Z21)
	ADDQ R8, DX
	SETROW(Z22, Z23)
	VZEROUPPER
	RET

// func kern4x32AVX512(kb int, a, b, c *float32, ldc int)
//
// kern12x32AVX512 for four rows of the A panel (a[p*12+i], i < 4; the
// panel keeps its twelve-float stride): C[4][32] += their product with the B
// panel, each element summed in the same order, so a row has the same bits
// whichever kernel computes it. An edge panel of mh < 12 rows runs
// ceil(mh/4) of these instead of the whole twelve.
TEXT ·kern4x32AVX512(SB), NOSPLIT, $0-40
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
loop4:
	VMOVUPS (BX), Z24
	VMOVUPS 64(BX), Z25
	FMAROW(0, Z26, Z0, Z1)
	FMAROW(4, Z27, Z2, Z3)
	FMAROW(8, Z28, Z4, Z5)
	FMAROW(12, Z29, Z6, Z7)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop4
	ADDROW(Z0, Z1)
	ADDQ R8, DX
	ADDROW(Z2, Z3)
	ADDQ R8, DX
	ADDROW(Z4, Z5)
	ADDQ R8, DX
	ADDROW(Z6, Z7)
	VZEROUPPER
	RET
