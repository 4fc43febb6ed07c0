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
// out[j] = dot(q[:hs], k[j*kstride:][:hs]) for j < n, each exactly as dot
// computes it: dotAVX512 over the whole 16-float chunks, then the rest four
// at a time as dot's four scalar accumulators (a multiply, then an add,
// unfused), reduced (s0+s1)+(s2+s3) and added last. hs is a positive
// multiple of 4, n positive.
TEXT ·attnScoresAVX512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	MOVQ hs+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	MOVQ R9, R13
	ANDQ $15, R13 // tail floats, a multiple of 4
	ANDQ $-16, R9 // whole chunks' floats
scorej:
	VXORPS Z0, Z0, Z0
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R9, R12
scoreh:
	TESTQ R12, R12
	JZ    scoresum
	VMOVUPS (R10), Z1
	VFMADD231PS (R11), Z1, Z0
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  scoreh
scoresum:
	SUM16
	VXORPS X2, X2, X2
	MOVQ R13, R12
scoretail:
	TESTQ R12, R12
	JZ    scoredone
	VMOVUPS (R10), X3
	VMULPS (R11), X3, X3
	VADDPS X3, X2, X2
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, R12
	JMP  scoretail
scoredone:
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VADDSS X2, X0, X0
	MOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JNZ  scorej
	VZEROUPPER
	RET

// func attnMixAVX512(out, p, v *float32, vstride, hs, n int)
// out[:hs] += p[j]*v[j*vstride:][:hs] for j = 0..n-1 in order, as axpy does
// it: a fused multiply-add on whole 16-float chunks, a multiply then an add
// on the rest (four at a time); hs a positive multiple of 4, n positive.
// One chunk of out stays in a register across j.
TEXT ·attnMixAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ vstride+24(FP), R8
	SHLQ $2, R8
	MOVQ hs+32(FP), R9
	MOVQ n+40(FP), R13
	MOVQ R9, R14
	ANDQ $15, R14 // tail floats
	ANDQ $-16, R9
mixc:
	TESTQ R9, R9
	JZ    mixtail
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
	JMP  mixc
mixtail:
	TESTQ R14, R14
	JZ    mixdone
	VMOVUPS (DI), X0
	MOVQ SI, R10
	MOVQ BX, R11
	MOVQ R13, CX
mixtj:
	VBROADCASTSS (R10), X1
	VMULPS (R11), X1, X3
	VADDPS X3, X0, X0
	ADDQ $4, R10
	ADDQ R8, R11
	DECQ CX
	JNZ  mixtj
	VMOVUPS X0, (DI)
	ADDQ $16, DI
	ADDQ $16, BX
	SUBQ $4, R14
	JMP  mixtail
mixdone:
	VZEROUPPER
	RET

// func attnScores2AVX512(q, k *float32, kstride, hs, n int, out0, out1 *float32)
// attnScoresAVX512 for the two query heads q[:hs] and q[hs:2hs] that share
// one key head (grouped-query attention): each key chunk is loaded once and
// feeds both heads' accumulators (Z0, Z2), each summed in dotAVX512's order,
// so out0 and out1 hold the bits of two separate calls.
TEXT ·attnScores2AVX512(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	MOVQ hs+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out0+40(FP), DX
	MOVQ out1+48(FP), BX
	MOVQ R9, R13
	SHLQ $2, R13 // bytes from head 0's query to head 1's
score2j:
	VXORPS Z0, Z0, Z0
	VXORPS Z2, Z2, Z2
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R9, R12
score2h:
	VMOVUPS (R11), Z1
	VFMADD231PS (R10), Z1, Z0
	VFMADD231PS (R10)(R13*1), Z1, Z2
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JNZ  score2h
	SUM16
	MOVSS X0, (DX)
	VMOVAPS Z2, Z0
	SUM16
	MOVSS X0, (BX)
	ADDQ $4, DX
	ADDQ $4, BX
	ADDQ R8, DI
	DECQ CX
	JNZ  score2j
	VZEROUPPER
	RET

// func attnMix2AVX512(out, p0, p1, v *float32, vstride, hs, n int)
// attnMixAVX512 for two heads sharing one value head: out[:hs] += p0[j]*v_j
// and out[hs:2hs] += p1[j]*v_j for j in order, each value chunk loaded once;
// the bits of two separate calls.
TEXT ·attnMix2AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ p0+8(FP), SI
	MOVQ p1+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ vstride+32(FP), R8
	SHLQ $2, R8
	MOVQ hs+40(FP), R9
	MOVQ n+48(FP), R13
	MOVQ R9, R14
	SHLQ $2, R14 // bytes from head 0's output to head 1's
mix2c:
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(R14*1), Z2
	MOVQ SI, R10
	MOVQ DX, R12
	MOVQ BX, R11
	MOVQ R13, CX
mix2j:
	VMOVUPS (R11), Z1
	VBROADCASTSS (R10), Z3
	VFMADD231PS Z1, Z3, Z0
	VBROADCASTSS (R12), Z4
	VFMADD231PS Z1, Z4, Z2
	ADDQ $4, R10
	ADDQ $4, R12
	ADDQ R8, R11
	DECQ CX
	JNZ  mix2j
	VMOVUPS Z0, (DI)
	VMOVUPS Z2, (DI)(R14*1)
	ADDQ $64, DI
	ADDQ $64, BX
	SUBQ $16, R9
	JNZ  mix2c
	VZEROUPPER
	RET
