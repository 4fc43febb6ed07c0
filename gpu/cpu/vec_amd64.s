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

// func attnRowScoresAVX512(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)
// Every head's scores for one query row, key row by key row: for j < n, for
// each key/value head kvh and each of its group query heads h,
// p[h*pstride+j] = dot(q[h*hs:][:hs], k[j*kstride+kvh*hs:][:hs]), each
// exactly as attnScoresAVX512 computes it. A key row is read once, front to
// back, for all heads (the cache streams in order instead of once per head
// at the row stride). hs is a positive multiple of 4; nkv, group, n positive.
TEXT ·attnRowScoresAVX512(SB), NOSPLIT, $0-72
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	MOVQ hs+24(FP), R9
	MOVQ R9, R13
	ANDQ $15, R13 // tail floats, a multiple of 4
	ANDQ $-16, R9 // whole chunks' floats
	MOVQ n+48(FP), CX
	MOVQ p+56(FP), DX
	MOVQ pstride+64(FP), BX
	SHLQ $2, BX
rsj:
	MOVQ q+0(FP), R10 // head h's query; the heads lie back to back
	MOVQ DI, R11      // key/value head kvh's keys in row j
	MOVQ DX, R15      // p[h*pstride+j]
	MOVQ nkv+32(FP), AX
rskv:
	MOVQ group+40(FP), R14
rsg:
	VXORPS Z0, Z0, Z0
	MOVQ R9, R12
rsh:
	TESTQ R12, R12
	JZ    rssum
	VMOVUPS (R10), Z1
	VFMADD231PS (R11), Z1, Z0
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  rsh
rssum:
	SUM16
	VXORPS X2, X2, X2
	MOVQ R13, R12
rstail:
	TESTQ R12, R12
	JZ    rsdone
	VMOVUPS (R10), X3
	VMULPS (R11), X3, X3
	VADDPS X3, X2, X2
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, R12
	JMP  rstail
rsdone:
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VADDSS X2, X0, X0
	MOVSS X0, (R15)
	ADDQ BX, R15
	DECQ R14
	JZ   rsnextkv
	// the group's next query head reads the same keys again (from L1)
	MOVQ hs+24(FP), R12
	SHLQ $2, R12
	SUBQ R12, R11
	JMP  rsg
rsnextkv:
	DECQ AX
	JNZ  rskv
	ADDQ R8, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  rsj
	VZEROUPPER
	RET

// func attnRowMixAVX512(out, p *float32, pstride int, v *float32, vstride, hs, nkv, group, n int)
// Every head's mixture for one query row, value row by value row: for
// j < n in order, for each key/value head kvh and each of its group query
// heads h, out[h*hs:][:hs] += p[h*pstride+j] * v[j*vstride+kvh*hs:][:hs]:
// a fused multiply-add on whole 16-float chunks, a multiply then an add on
// the rest, so every element is summed over j as attnMixAVX512 sums it. A
// value row is read once, front to back; the output row stays in L1. hs is
// a positive multiple of 4; nkv, group, n positive.
TEXT ·attnRowMixAVX512(SB), NOSPLIT, $0-72
	MOVQ p+8(FP), DX
	MOVQ pstride+16(FP), BX
	SHLQ $2, BX
	MOVQ v+24(FP), SI
	MOVQ vstride+32(FP), R8
	SHLQ $2, R8
	MOVQ hs+40(FP), R9
	MOVQ R9, R13
	ANDQ $15, R13 // tail floats
	ANDQ $-16, R9
	MOVQ n+64(FP), CX
rmj:
	MOVQ out+0(FP), R10 // head h's output; the heads lie back to back
	MOVQ SI, R11        // key/value head kvh's values in row j
	MOVQ DX, R15        // p[h*pstride+j]
	MOVQ nkv+48(FP), AX
rmkv:
	MOVQ group+56(FP), R14
rmg:
	VBROADCASTSS (R15), Z1
	MOVQ R9, R12
rmc:
	TESTQ R12, R12
	JZ    rmtail
	VMOVUPS (R10), Z0
	VFMADD231PS (R11), Z1, Z0
	VMOVUPS Z0, (R10)
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  rmc
rmtail:
	MOVQ R13, R12
rmt:
	TESTQ R12, R12
	JZ    rmdone
	VMOVUPS (R10), X0
	VMULPS (R11), X1, X3
	VADDPS X3, X0, X0
	VMOVUPS X0, (R10)
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, R12
	JMP  rmt
rmdone:
	ADDQ BX, R15
	DECQ R14
	JZ   rmnextkv
	// the group's next query head mixes the same values (from L1)
	MOVQ hs+40(FP), R12
	SHLQ $2, R12
	SUBQ R12, R11
	JMP  rmg
rmnextkv:
	DECQ AX
	JNZ  rmkv
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  rmj
	VZEROUPPER
	RET

// func sumSquaresAVX512(x *float32, n int, lanes *[8]float64)
// lanes[j] += x[i]*x[i] in float64 for i = j, j+8, ... < n in order (the
// squares are exact in float64, so a fused multiply-add rounds as the add
// alone would); n a positive multiple of 8. sumSquares does the same in Go.
TEXT ·sumSquaresAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Z0
ssloop:
	VCVTPS2PD (SI), Z1
	VFMADD231PD Z1, Z1, Z0
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  ssloop
	VMOVUPD Z0, (DI)
	VZEROUPPER
	RET

// func scaleRowAVX512(dst, x, w *float32, r float32, n int)
// dst[i] = (x[i]*r)*w[i], each product rounded to float32 as Go rounds it;
// n a positive multiple of 16.
TEXT ·scaleRowAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	VBROADCASTSS r+24(FP), Z2
	MOVQ n+32(FP), CX
srloop:
	VMULPS (SI), Z2, Z0
	VMULPS (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  srloop
	VZEROUPPER
	RET

// func addAVX512(out, a, b *float32, n int)
// out[i] = a[i] + b[i]; n a positive multiple of 16.
TEXT ·addAVX512(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
addloop:
	VMOVUPS (SI), Z0
	VADDPS (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  addloop
	VZEROUPPER
	RET

// func sumLanesAVX512(x *float32, n int, lanes *[8]float64)
// lanes[j] += x[i] in float64 for i = j, j+8, ... < n in order; n a
// positive multiple of 8. sumLanes does the same in Go.
TEXT ·sumLanesAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Z0
slloop:
	VCVTPS2PD (SI), Z1
	VADDPD Z1, Z0, Z0
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  slloop
	VMOVUPD Z0, (DI)
	VZEROUPPER
	RET

// func sqDevLanesAVX512(x *float32, n int, m float64, lanes *[8]float64)
// lanes[j] += (x[i]-m)*(x[i]-m) in float64, the product rounded before the
// add (no fused multiply-add, as Go computes it), for i = j, j+8, ... < n
// in order; n a positive multiple of 8.
TEXT ·sqDevLanesAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD m+16(FP), Z3
	MOVQ lanes+24(FP), DI
	VMOVUPD (DI), Z0
sdloop:
	VCVTPS2PD (SI), Z1
	VSUBPD Z3, Z1, Z1
	VMULPD Z1, Z1, Z1
	VADDPD Z1, Z0, Z0
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  sdloop
	VMOVUPD Z0, (DI)
	VZEROUPPER
	RET

// func layerNormRowAVX512(dst, x, w, b *float32, m, r float32, n int)
// dst[i] = ((x[i]-m)*r)*w[i] + b[i], each step rounded to float32 as Go
// rounds it; n a positive multiple of 16.
TEXT ·layerNormRowAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), BX
	VBROADCASTSS m+32(FP), Z2
	VBROADCASTSS r+36(FP), Z3
	MOVQ n+40(FP), CX
lnloop:
	VMOVUPS (SI), Z0
	VSUBPS Z2, Z0, Z0
	VMULPS Z3, Z0, Z0
	VMULPS (DX), Z0, Z0
	VADDPS (BX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  lnloop
	VZEROUPPER
	RET

// KEYS4 is one chunk (Z16) of the query times one chunk of each of four
// keys (at m0-m3), into four accumulators.
#define KEYS4(m0, m1, m2, m3, z0, z1, z2, z3) \
	VFMADD231PS m0, Z16, z0; \
	VFMADD231PS m1, Z16, z1; \
	VFMADD231PS m2, Z16, z2; \
	VFMADD231PS m3, Z16, z3

// TAIL4 multiplies the query's four-float tail group (Z22) by that group
// of four keys (at m0-m3, one to a 128-bit lane) and adds the products to
// acc.
#define TAIL4(m0, m1, m2, m3, acc) \
	VMOVUPS m0, X23; \
	VINSERTF32X4 $1, m1, Z23, Z23; \
	VINSERTF32X4 $2, m2, Z23, Z23; \
	VINSERTF32X4 $3, m3, Z23, Z23; \
	VMULPS Z22, Z23, Z23; \
	VADDPS Z23, acc, acc

// LANES128 adds a's and b's 128-bit lanes in the pairs sel1 and sel2 pick
// (VSHUFF32X4 selectors), into dst.
#define LANES128(sel1, sel2, a, b, dst) \
	VSHUFF32X4 sel1, b, a, Z16; \
	VSHUFF32X4 sel2, b, a, Z17; \
	VADDPS Z17, Z16, dst

// PAIRS32 adds a's and b's neighbouring elements within each 128-bit lane
// (even plus odd), into dst.
#define PAIRS32(a, b, dst) \
	VSHUFPS $0x88, b, a, Z16; \
	VSHUFPS $0xDD, b, a, Z17; \
	VADDPS Z17, Z16, dst

// func attnRowScores16AVX512(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)
// attnRowScoresAVX512 sixteen keys at a time: each head's sixteen dot
// products accumulate side by side (Z0-Z15, whole chunks in dot's order;
// the 4-float tail groups, multiplied then added as dot does, four keys to a
// register in Z18-Z21), then shuffle networks of 128-bit lanes and elements
// add the chunk lanes in SUM16's pairs and the tail lanes in its last two
// steps' pairs, and the tail sum is added last: every score has the bits of
// one dot, and the sixteen land in one register (chunk accumulator 4t+L
// holds key 4L+t, tail register m's lane L key 4L+m, which puts key i in
// lane i). hs a positive multiple of 4; nkv, group positive; n a positive
// multiple of 16.
TEXT ·attnRowScores16AVX512(SB), NOSPLIT, $0-72
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9 // three rows
	MOVQ p+56(FP), DX
	MOVQ pstride+64(FP), BX
	SHLQ $2, BX
	SHRQ $4, n+48(FP) // blocks left
r16blk:
	MOVQ q+0(FP), R10 // head h's query; the heads lie back to back
	MOVQ DX, R15      // p[h*pstride+j0]
	MOVQ DI, R11      // key/value head kvh's keys in the block's row 0
	MOVQ nkv+32(FP), AX
r16kv:
	MOVQ group+40(FP), SI
r16g:
	LEAQ (R11)(R8*4), R12 // rows 4, 8, 12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R14
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	MOVQ hs+24(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ    r16tail
r16c:
	VMOVUPS (R10), Z16
	KEYS4((R11), (R12), (R13), (R14), Z0, Z1, Z2, Z3)
	KEYS4((R11)(R8*1), (R12)(R8*1), (R13)(R8*1), (R14)(R8*1), Z4, Z5, Z6, Z7)
	KEYS4((R11)(R8*2), (R12)(R8*2), (R13)(R8*2), (R14)(R8*2), Z8, Z9, Z10, Z11)
	KEYS4((R11)(R9*1), (R12)(R9*1), (R13)(R9*1), (R14)(R9*1), Z12, Z13, Z14, Z15)
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	DECQ CX
	JNZ  r16c
r16tail:
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	VXORPS Z20, Z20, Z20
	VXORPS Z21, Z21, Z21
	MOVQ hs+24(FP), CX
	ANDQ $15, CX
	SHRQ $2, CX // tail groups of four
	TESTQ CX, CX
	JZ    r16red
r16t:
	VBROADCASTF32X4 (R10), Z22
	TAIL4((R11), (R12), (R13), (R14), Z18)
	TAIL4((R11)(R8*1), (R12)(R8*1), (R13)(R8*1), (R14)(R8*1), Z19)
	TAIL4((R11)(R8*2), (R12)(R8*2), (R13)(R8*2), (R14)(R8*2), Z20)
	TAIL4((R11)(R9*1), (R12)(R9*1), (R13)(R9*1), (R14)(R9*1), Z21)
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, R14
	DECQ CX
	JNZ  r16t
r16red:
	LANES128($0x44, $0xEE, Z0, Z1, Z0)
	LANES128($0x44, $0xEE, Z2, Z3, Z1)
	LANES128($0x44, $0xEE, Z4, Z5, Z2)
	LANES128($0x44, $0xEE, Z6, Z7, Z3)
	LANES128($0x44, $0xEE, Z8, Z9, Z4)
	LANES128($0x44, $0xEE, Z10, Z11, Z5)
	LANES128($0x44, $0xEE, Z12, Z13, Z6)
	LANES128($0x44, $0xEE, Z14, Z15, Z7)
	LANES128($0x88, $0xDD, Z0, Z1, Z0)
	LANES128($0x88, $0xDD, Z2, Z3, Z1)
	LANES128($0x88, $0xDD, Z4, Z5, Z2)
	LANES128($0x88, $0xDD, Z6, Z7, Z3)
	PAIRS32(Z0, Z1, Z0)
	PAIRS32(Z2, Z3, Z1)
	PAIRS32(Z0, Z1, Z0)
	PAIRS32(Z18, Z19, Z18)
	PAIRS32(Z20, Z21, Z19)
	PAIRS32(Z18, Z19, Z18)
	VADDPS Z18, Z0, Z0 // the tail sum last (+0 without one), as dot adds it
	VMOVUPS Z0, (R15)
	ADDQ BX, R15
	DECQ SI
	JZ   r16nextkv
	// the group's next query head reads the same keys again
	MOVQ hs+24(FP), CX
	SHLQ $2, CX
	SUBQ CX, R11
	JMP  r16g
r16nextkv:
	DECQ AX
	JNZ  r16kv
	LEAQ (DI)(R8*8), DI // the next sixteen rows
	LEAQ (DI)(R8*8), DI
	ADDQ $64, DX
	DECQ n+48(FP)
	JNZ  r16blk
	VZEROUPPER
	RET

// func attnMix4AVX512(out, p *float32, pstride int, v *float32, vstride, hs, n int, kvoff *[4]int)
// attnRowMix for four query heads whose outputs lie back to back from out
// (head i's probabilities at p+i*pstride, its values at offset kvoff[i]
// floats in each value row), for keys j < n, hs a positive multiple of 16:
// each 16-float chunk column of the four heads is held in Z0-Z3 across the
// keys (four independent chains instead of a load and a store a key),
// added in j order as attnRowMixAVX512 adds it. The caller blocks the keys
// so that their value rows stay in cache across the chunk columns.
TEXT ·attnMix4AVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ pstride+16(FP), BX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R9 // three heads' probabilities on
	MOVQ v+24(FP), DX
	MOVQ vstride+32(FP), R8
	SHLQ $2, R8
	MOVQ kvoff+56(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	SHLQ $2, R10
	SHLQ $2, R11
	SHLQ $2, R12
	SHLQ $2, R13
	MOVQ hs+40(FP), AX
	SHRQ $4, AX // chunk columns
m4c:
	MOVQ hs+40(FP), CX
	SHLQ $2, CX // bytes from one head's output to the next
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(CX*1), Z1
	VMOVUPS (DI)(CX*2), Z2
	LEAQ (DI)(CX*2), R14
	VMOVUPS (R14)(CX*1), Z3
	MOVQ SI, R14 // p for key j
	MOVQ DX, R15 // value row j
	MOVQ n+48(FP), CX
m4j:
	VBROADCASTSS (R14), Z4
	VFMADD231PS (R15)(R10*1), Z4, Z0
	VBROADCASTSS (R14)(BX*1), Z5
	VFMADD231PS (R15)(R11*1), Z5, Z1
	VBROADCASTSS (R14)(BX*2), Z6
	VFMADD231PS (R15)(R12*1), Z6, Z2
	VBROADCASTSS (R14)(R9*1), Z7
	VFMADD231PS (R15)(R13*1), Z7, Z3
	ADDQ $4, R14
	ADDQ R8, R15
	DECQ CX
	JNZ  m4j
	MOVQ hs+40(FP), CX
	SHLQ $2, CX
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, (DI)(CX*1)
	VMOVUPS Z2, (DI)(CX*2)
	LEAQ (DI)(CX*2), R14
	VMOVUPS Z3, (R14)(CX*1)
	ADDQ $64, DI // the next chunk column
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	DECQ AX
	JNZ  m4c
	VZEROUPPER
	RET

// func streamLines(p *float32, lines int)
// Loads one word of each of the lines 64-byte lines from p on, front to
// back, four lines an iteration, and keeps nothing: what is read stays in
// cache (see streamRows).
TEXT ·streamLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), DI
	MOVQ lines+8(FP), CX
	MOVQ CX, DX
	SHRQ $2, CX
	JZ   sl1
sl4:
	MOVQ (DI), AX
	MOVQ 64(DI), AX
	MOVQ 128(DI), AX
	MOVQ 192(DI), AX
	ADDQ $256, DI
	DECQ CX
	JNZ  sl4
sl1:
	ANDQ $3, DX
	JZ   sldone
sl1loop:
	MOVQ (DI), AX
	ADDQ $64, DI
	DECQ DX
	JNZ  sl1loop
sldone:
	RET
