//go:build amd64 && !purego

#include "textflag.h"

// func adamwAVX2(p, gr, m, v *float32, n int, c *adamwConsts)
// adamwStep eight values at a time for n a positive multiple of 8: the same
// operations in the same order, each rounded (no fused multiply-add), and
// VSQRTPS, which rounds once as float32(math.Sqrt(float64(x))) does.
TEXT ·adamwAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // GradScale
	VBROADCASTSS 4(AX), Y9   // Beta1
	VBROADCASTSS 8(AX), Y10  // 1-Beta1
	VBROADCASTSS 12(AX), Y11 // Beta2
	VBROADCASTSS 16(AX), Y12 // 1-Beta2
	VBROADCASTSS 20(AX), Y13 // bias correction 1
	VBROADCASTSS 24(AX), Y14 // bias correction 2
	VBROADCASTSS 28(AX), Y15 // Eps
adam8:
	VMULPS (SI), Y8, Y0    // gr = g*GradScale
	VMULPS (DX), Y9, Y1    // Beta1*m
	VMULPS Y0, Y10, Y2     // (1-Beta1)*gr
	VADDPS Y2, Y1, Y1      // m
	VMULPS (BX), Y11, Y3   // Beta2*v
	VMULPS Y0, Y12, Y4     // (1-Beta2)*gr
	VMULPS Y0, Y4, Y4      // *gr
	VADDPS Y4, Y3, Y3      // v
	VMOVUPS Y1, (DX)
	VMOVUPS Y3, (BX)
	VDIVPS Y13, Y1, Y1     // mhat = m/bc1
	VDIVPS Y14, Y3, Y3     // vhat = v/bc2
	VSQRTPS Y3, Y3
	VADDPS Y15, Y3, Y3     // sqrt(vhat)+Eps
	VDIVPS Y3, Y1, Y1      // mhat/(sqrt(vhat)+Eps)
	VMOVUPS (DI), Y5
	VBROADCASTSS 32(AX), Y6 // WeightDecay
	VMULPS Y5, Y6, Y6      // WeightDecay*p
	VADDPS Y6, Y1, Y1
	VBROADCASTSS 36(AX), Y7 // LR
	VMULPS Y1, Y7, Y1      // LR*(...)
	VSUBPS Y1, Y5, Y5      // p - LR*(...)
	VMOVUPS Y5, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  adam8
	VZEROUPPER
	RET

// TR4 transposes four rows of four floats (X4-X7) into columns (X4-X7),
// with X8 and X9 as scratch.
#define TR4 \
	VUNPCKLPS X5, X4, X8; \
	VUNPCKHPS X5, X4, X9; \
	VUNPCKLPS X7, X6, X5; \
	VUNPCKHPS X7, X6, X7; \
	VMOVLHPS X5, X8, X4; \
	VMOVHLPS X8, X5, X5; \
	VMOVLHPS X7, X9, X6; \
	VMOVHLPS X9, X7, X7

// SQ4 adds the squares of column X (four floats, one per chunk) to acc's
// four float64 lanes; the product of two float32s is exact in float64, so
// the fused add rounds as Go's s += float64(v)*float64(v) does.
#define SQ4(x, y, acc) \
	VCVTPS2PD x, y; \
	VFMADD231PD y, y, acc

// GROUP4 loads four floats at byte offset off of chunks 4g..4g+3 (row
// stride R8 bytes, chunk 4g at R10) and adds their squares to acc in
// element order.
#define GROUP4(acc) \
	VMOVUPS (R10), X4; \
	VMOVUPS (R10)(R8*1), X5; \
	VMOVUPS (R10)(R8*2), X6; \
	VMOVUPS (R10)(R9*1), X7; \
	TR4; \
	SQ4(X4, Y10, acc); \
	SQ4(X5, Y11, acc); \
	SQ4(X6, Y12, acc); \
	SQ4(X7, Y13, acc)

// func sumSquares16AVX2(x *float32, chunk int, out *[16]float64)
// out[k] = the sum in order of float64(v)*float64(v) over chunk k's values
// x[k*chunk:(k+1)*chunk], for the sixteen chunks at once, a lane each;
// chunk a positive multiple of 4.
TEXT ·sumSquares16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ chunk+8(FP), R8
	SHLQ $2, R8         // a chunk's bytes
	LEAQ (R8)(R8*2), R9 // three chunks
	MOVQ chunk+8(FP), CX
	SHRQ $2, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
sq16:
	MOVQ SI, R10
	GROUP4(Y0)
	LEAQ (R10)(R8*4), R10
	GROUP4(Y1)
	LEAQ (R10)(R8*4), R10
	GROUP4(Y2)
	LEAQ (R10)(R8*4), R10
	GROUP4(Y3)
	ADDQ $16, SI
	DECQ CX
	JNZ  sq16
	MOVQ out+16(FP), DI
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET
