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
