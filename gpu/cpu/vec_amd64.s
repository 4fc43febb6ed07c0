//go:build amd64 && !purego

#include "textflag.h"

// func dotAVX512(a, b *float32, n int) float32
// n is a positive multiple of 16.
TEXT ·dotAVX512(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Z0, Z0, Z0
dotloop:
	VMOVUPS (SI), Z1
	VFMADD231PS (DI), Z1, Z0
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  dotloop
	VEXTRACTF32X8 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyAVX512(y *float32, alpha float32, x *float32, n int)
// y += alpha*x; n is a positive multiple of 16.
TEXT ·axpyAVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS alpha+8(FP), Z0
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
axpyloop:
	VMOVUPS (DI), Z1
	VFMADD231PS (SI), Z0, Z1
	VMOVUPS Z1, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  axpyloop
	VZEROUPPER
	RET

// func dotAVX2(a, b *float32, n int) float32
// n is a positive multiple of 16. Two 8-lane accumulators stand for the
// AVX-512 kernel's one 16-lane accumulator, and the reduction follows its
// order, so the result has the same bits.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
dot2loop:
	VMOVUPS (SI), Y1
	VFMADD231PS (DI), Y1, Y0
	VMOVUPS 32(SI), Y3
	VFMADD231PS 32(DI), Y3, Y2
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  dot2loop
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyAVX2(y *float32, alpha float32, x *float32, n int)
// y += alpha*x; n is a positive multiple of 16.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS alpha+8(FP), Y0
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
axpy2loop:
	VMOVUPS (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS Y1, (DI)
	VMOVUPS 32(DI), Y2
	VFMADD231PS 32(SI), Y0, Y2
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  axpy2loop
	VZEROUPPER
	RET
