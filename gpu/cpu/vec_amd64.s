//go:build amd64 && !purego

#include "textflag.h"

#include "lanes_amd64.h"

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
	SUM16
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
	SUM8
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

// func attnScoresAVX512(q, k *float32, kstride, hs, n int, out *float32)
// out[j] = dot(q[:hs], k[j*kstride:][:hs]) for j < n, each exactly as
// dotAVX512 computes it; hs is a positive multiple of 16, n positive.
TEXT ·attnScoresAVX512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	MOVQ hs+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
scorej:
	VXORPS Z0, Z0, Z0
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R9, R12
scoreh:
	VMOVUPS (R10), Z1
	VFMADD231PS (R11), Z1, Z0
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JNZ  scoreh
	SUM16
	MOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JNZ  scorej
	VZEROUPPER
	RET

// func attnMixAVX512(out, p, v *float32, vstride, hs, n int)
// out[:hs] += p[j]*v[j*vstride:][:hs] for j = 0..n-1 in order, each term a
// fused multiply-add as axpyAVX512 does it; hs a positive multiple of 16,
// n positive. One 16-float chunk of out stays in a register across j.
TEXT ·attnMixAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ vstride+24(FP), R8
	SHLQ $2, R8
	MOVQ hs+32(FP), R9
	MOVQ n+40(FP), R13
mixc:
	VMOVUPS (DI), Z0
	MOVQ SI, R10
	MOVQ BX, R11
	MOVQ R13, CX
mixj:
	VBROADCASTSS (R10), Z1
	VFMADD231PS (R11), Z1, Z0
	ADDQ $4, R10
	ADDQ R8, R11
	DECQ CX
	JNZ  mixj
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	ADDQ $64, BX
	SUBQ $16, R9
	JNZ  mixc
	VZEROUPPER
	RET
