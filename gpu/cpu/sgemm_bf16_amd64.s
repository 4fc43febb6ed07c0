//go:build amd64 && !purego

#include "textflag.h"
#include "sgemm_amd64.h"

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

// MASKZ31 sets Z31 to BF16ROW's mask.
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
	PREFETCHC12
	MASKZ31
	ZERO24
loop:
	PREFETCHT0 4096(BX)
	BF16ROW((BX), Z31, Z24, Z25)
	FMAROW(0, Z26, Z0, Z1)
	FMAROW(4, Z27, Z2, Z3)
	FMAROW(8, Z28, Z4, Z5)
	FMAROW(12, Z29, Z6, Z7)
	FMAROW(16, Z30, Z8, Z9)
	FMAROW(20, Z26, Z10, Z11)
	FMAROW(24, Z27, Z12, Z13)
	FMAROW(28, Z28, Z14, Z15)
	FMAROW(32, Z29, Z16, Z17)
	FMAROW(36, Z30, Z18, Z19)
	FMAROW(40, Z26, Z20, Z21)
	FMAROW(44, Z27, Z22, Z23)
	ADDQ $48, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  loop
	CMPB set+40(FP), $0
	JNE  store
	ROWS12(ADDROW)
	VZEROUPPER
	RET
store:
	ROWS12(SETROW)
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
	ZERO8
loop4:
	PREFETCHT0 4096(BX)
	BF16ROW((BX), Z31, Z24, Z25)
	FMAROW(0, Z26, Z0, Z1)
	FMAROW(4, Z27, Z2, Z3)
	FMAROW(8, Z28, Z4, Z5)
	FMAROW(12, Z29, Z6, Z7)
	ADDQ $48, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  loop4
	ROWS4(ADDROW)
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
	ZERO8
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
	ROW128
	VZEROUPPER
	RET
