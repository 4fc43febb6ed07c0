//go:build amd64 && !purego

#include "textflag.h"

// The kernels of sgemm_amd64.s over B panels of bfloat16 weights (a frozen
// weight packed for bf16 generation). Each k step of a panel is 32
// bfloat16 values in one 64-byte row, interleaved so that one load gives
// both of the panel's vectors: dword j holds column j in its low half and
// column 16+j in its high half. Shifting the dwords left by 16 gives
// columns 0-15 as float32, masking off the low halves gives columns 16-31;
// both are exact, so each kernel is its float32 twin over the rounded
// weights, the same FMAs in the same order.

// BF16ROW loads a k step of the panel at mem into lo (columns 0-15) and
// hi (columns 16-31); mask holds 0xffff0000 in every dword.
#define BF16ROW(mem, mask, lo, hi) \
	VMOVDQU32 mem, hi; \
	VPSLLD $16, hi, lo; \
	VPANDD mask, hi, hi

// FMAROWH is sgemm_amd64.s's FMAROW.
#define FMAROWH(off, bc, lo, hi) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Z24, bc, lo; \
	VFMADD231PS Z25, bc, hi

#define ADDROWH(lo, hi) \
	VADDPS (DX), lo, lo; \
	VMOVUPS lo, (DX); \
	VADDPS 64(DX), hi, hi; \
	VMOVUPS hi, 64(DX)

#define SETROWH(lo, hi) \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, 64(DX)

#define MASKZ31 \
	MOVL $0xffff0000, R11; \
	VPBROADCASTD R11, Z31

// func kern12x32BF16AVX512(kb int, a *float32, b *uint16, c *float32, ldc int, set bool)
//
// kern12x32AVX512 over a bfloat16 B panel (kb rows of 64 bytes).
TEXT ·kern12x32BF16AVX512(SB), NOSPLIT, $0-41
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MASKZ31
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
	PREFETCHT0 4096(BX)
	BF16ROW((BX), Z31, Z24, Z25)
	FMAROWH(0, Z26, Z0, Z1)
	FMAROWH(4, Z27, Z2, Z3)
	FMAROWH(8, Z28, Z4, Z5)
	FMAROWH(12, Z29, Z6, Z7)
	FMAROWH(16, Z30, Z8, Z9)
	FMAROWH(20, Z26, Z10, Z11)
	FMAROWH(24, Z27, Z12, Z13)
	FMAROWH(28, Z28, Z14, Z15)
	FMAROWH(32, Z29, Z16, Z17)
	FMAROWH(36, Z30, Z18, Z19)
	FMAROWH(40, Z26, Z20, Z21)
	FMAROWH(44, Z27, Z22, Z23)
	ADDQ $48, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  loop
	CMPB set+40(FP), $0
	JNE  store
	ADDROWH(Z0, Z1)
	ADDQ R8, DX
	ADDROWH(Z2, Z3)
	ADDQ R8, DX
	ADDROWH(Z4, Z5)
	ADDQ R8, DX
	ADDROWH(Z6, Z7)
	ADDQ R8, DX
	ADDROWH(Z8, Z9)
	ADDQ R8, DX
	ADDROWH(Z10, Z11)
	ADDQ R8, DX
	ADDROWH(Z12, Z13)
	ADDQ R8, DX
	ADDROWH(Z14, Z15)
	ADDQ R8, DX
	ADDROWH(Z16, Z17)
	ADDQ R8, DX
	ADDROWH(Z18, Z19)
	ADDQ R8, DX
	ADDROWH(Z20, Z21)
	ADDQ R8, DX
	ADDROWH(Z22, Z23)
	VZEROUPPER
	RET
store:
	SETROWH(Z0, Z1)
	ADDQ R8, DX
	SETROWH(Z2, Z3)
	ADDQ R8, DX
	SETROWH(Z4, Z5)
	ADDQ R8, DX
	SETROWH(Z6, Z7)
	ADDQ R8, DX
	SETROWH(Z8, Z9)
	ADDQ R8, DX
	SETROWH(Z10, Z11)
	ADDQ R8, DX
	SETROWH(Z12, Z13)
	ADDQ R8, DX
	SETROWH(Z14, Z15)
	ADDQ R8, DX
	SETROWH(Z16, Z17)
	ADDQ R8, DX
	SETROWH(Z18, Z19)
	ADDQ R8, DX
	SETROWH(Z20, Z21)
	ADDQ R8, DX
	SETROWH(Z22, Z23)
	VZEROUPPER
	RET

// func kern4x32BF16AVX512(kb int, a *float32, b *uint16, c *float32, ldc int)
//
// kern4x32AVX512 over a bfloat16 B panel.
TEXT ·kern4x32BF16AVX512(SB), NOSPLIT, $0-40
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MASKZ31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
loop4:
	PREFETCHT0 4096(BX)
	BF16ROW((BX), Z31, Z24, Z25)
	FMAROWH(0, Z26, Z0, Z1)
	FMAROWH(4, Z27, Z2, Z3)
	FMAROWH(8, Z28, Z4, Z5)
	FMAROWH(12, Z29, Z6, Z7)
	ADDQ $48, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  loop4
	ADDROWH(Z0, Z1)
	ADDQ R8, DX
	ADDROWH(Z2, Z3)
	ADDQ R8, DX
	ADDROWH(Z4, Z5)
	ADDQ R8, DX
	ADDROWH(Z6, Z7)
	VZEROUPPER
	RET

// func kern1x128BF16AVX512(kb int, a *float32, b *uint16, pstride int, c *float32)
//
// kern1x128AVX512 over four bfloat16 B panels, pstride bytes apart: one
// row of A, read once, against 128 columns of weights streamed at half the
// bytes (decoding one sequence is bound by reading them).
TEXT ·kern1x128BF16AVX512(SB), NOSPLIT, $0-40
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ pstride+24(FP), R9
	MOVQ c+32(FP), DX
	LEAQ (BX)(R9*2), R10 // panel 2
	MASKZ31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
loop1:
	PREFETCHT0 4096(BX)
	PREFETCHT0 4096(BX)(R9*1)
	PREFETCHT0 4096(R10)
	PREFETCHT0 4096(R10)(R9*1)
	VBROADCASTSS (AX), Z30
	BF16ROW((BX), Z31, Z16, Z17)
	BF16ROW((BX)(R9*1), Z31, Z18, Z19)
	BF16ROW((R10), Z31, Z20, Z21)
	BF16ROW((R10)(R9*1), Z31, Z22, Z23)
	VFMADD231PS Z16, Z30, Z0
	VFMADD231PS Z17, Z30, Z1
	VFMADD231PS Z18, Z30, Z2
	VFMADD231PS Z19, Z30, Z3
	VFMADD231PS Z20, Z30, Z4
	VFMADD231PS Z21, Z30, Z5
	VFMADD231PS Z22, Z30, Z6
	VFMADD231PS Z23, Z30, Z7
	ADDQ $48, AX
	ADDQ $64, BX
	ADDQ $64, R10
	DECQ CX
	JNZ  loop1
	VPXORD Z30, Z30, Z30
	VADDPS Z30, Z0, Z0
	VADDPS Z30, Z1, Z1
	VADDPS Z30, Z2, Z2
	VADDPS Z30, Z3, Z3
	VADDPS Z30, Z4, Z4
	VADDPS Z30, Z5, Z5
	VADDPS Z30, Z6, Z6
	VADDPS Z30, Z7, Z7
	VADDPS (DX), Z0, Z0
	VMOVUPS Z0, (DX)
	VADDPS 64(DX), Z1, Z1
	VMOVUPS Z1, 64(DX)
	VADDPS 128(DX), Z2, Z2
	VMOVUPS Z2, 128(DX)
	VADDPS 192(DX), Z3, Z3
	VMOVUPS Z3, 192(DX)
	VADDPS 256(DX), Z4, Z4
	VMOVUPS Z4, 256(DX)
	VADDPS 320(DX), Z5, Z5
	VMOVUPS Z5, 320(DX)
	VADDPS 384(DX), Z6, Z6
	VMOVUPS Z6, 384(DX)
	VADDPS 448(DX), Z7, Z7
	VMOVUPS Z7, 448(DX)
	VZEROUPPER
	RET
