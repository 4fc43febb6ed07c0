//go:build amd64 && !purego

#include "textflag.h"

#include "lanes_amd64.h"
#include "mix_amd64.h"

// Decoding attention's all-heads row kernels for CPUs with AVX2 and FMA but
// not AVX-512. A 16-float chunk is two 8-float halves accumulated apart and
// added before SUM8, as dotAVX2 stands for dotAVX512, so every score and
// every mixed output has the AVX-512 kernels' bits (and dot's and axpy's).

// func attnRowScoresAVX2(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)
// attnRowScoresAVX512 in 8-float halves: for j < n, for each key/value
// head kvh and each of its group query heads h,
// p[h*pstride+j] = dot(q[h*hs:][:hs], k[j*kstride+kvh*hs:][:hs]). hs is a
// positive multiple of 4; nkv, group, n positive.
TEXT ·attnRowScoresAVX2(SB), NOSPLIT, $0-72
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
s2j:
	MOVQ q+0(FP), R10 // head h's query; the heads lie back to back
	MOVQ DI, R11      // key/value head kvh's keys in row j
	MOVQ DX, R15      // p[h*pstride+j]
	MOVQ nkv+32(FP), AX
s2kv:
	MOVQ group+40(FP), R14
s2g:
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	MOVQ R9, R12
s2h:
	TESTQ R12, R12
	JZ    s2sum
	VMOVUPS (R10), Y1
	VFMADD231PS (R11), Y1, Y0
	VMOVUPS 32(R10), Y3
	VFMADD231PS 32(R11), Y3, Y2
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  s2h
s2sum:
	VADDPS Y2, Y0, Y0
	SUM8
	VXORPS X2, X2, X2
	MOVQ R13, R12
s2tail:
	TESTQ R12, R12
	JZ    s2done
	VMOVUPS (R10), X3
	VMULPS (R11), X3, X3
	VADDPS X3, X2, X2
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, R12
	JMP  s2tail
s2done:
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VADDSS X2, X0, X0
	MOVSS X0, (R15)
	ADDQ BX, R15
	DECQ R14
	JZ   s2nextkv
	// the group's next query head reads the same keys again (from L1)
	MOVQ hs+24(FP), R12
	SHLQ $2, R12
	SUBQ R12, R11
	JMP  s2g
s2nextkv:
	DECQ AX
	JNZ  s2kv
	ADDQ R8, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  s2j
	VZEROUPPER
	RET

// KEYS2 is one query chunk (halves in Y8, Y9) times a key's chunk (halves
// at m0, m1), into that key's half accumulators lo and hi.
#define KEYS2(m0, m1, lo, hi) \
	VFMADD231PS m0, Y8, lo; \
	VFMADD231PS m1, Y9, hi

// TAIL1 multiplies the query's four-float tail group (X12) by the key's at
// m, then adds the products to acc (unfused, as dot's scalar tail).
#define TAIL1(m, acc) \
	VMULPS m, X12, X13; \
	VADDPS X13, acc, acc

// func attnRowScores4AVX2(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)
// attnRowScoresAVX2 four keys at a time: each head's four dot products
// accumulate side by side (key i's chunk halves in Y(2i), Y(2i+1); its
// 4-float tail groups in X(8+i)), then the halves are added, 128-bit lanes
// paired across keys and added as SUM8 adds a key's, and two horizontal
// adds finish SUM8 for all four at once; the tails reduce in the same
// pairs and are added last, so each score has the bits of one dot and the
// four land in one register. hs a positive multiple of 4; nkv, group
// positive; n a positive multiple of 4; kstride (floats) at least
// hs, rows j..j+3 together.
TEXT ·attnRowScores4AVX2(SB), NOSPLIT, $0-72
	MOVQ k+8(FP), DI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9 // three rows
	MOVQ p+56(FP), DX
	MOVQ pstride+64(FP), BX
	SHLQ $2, BX
	MOVQ n+48(FP), R14
	DECQ R14
	IMULQ R8, R14
	ADDQ DI, R14 // the last row
	SHRQ $2, n+48(FP) // blocks left
s4blk:
	// Prefetch the block two ahead (its four rows lie together), no
	// further than the last row: the hardware prefetcher alone streams
	// four rows read a head at a time at about four fifths of this rate.
	LEAQ (DI)(R8*8), R12
	CMPQ R12, R14
	CMOVQGT R14, R12
	MOVQ kstride+16(FP), R13
	SHRQ $2, R13 // the block's 64-byte lines (kstride >= hs >= 4)
s4pf:
	PREFETCHT0 (R12)
	ADDQ $64, R12
	DECQ R13
	JNZ  s4pf
	MOVQ q+0(FP), R10 // head h's query; the heads lie back to back
	MOVQ DX, R15      // p[h*pstride+j0]
	MOVQ DI, R11      // key/value head kvh's keys in the block's row 0
	MOVQ nkv+32(FP), AX
s4kv:
	MOVQ group+40(FP), SI
s4g:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ hs+24(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ    s4tail
s4c:
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	KEYS2((R11), 32(R11), Y0, Y1)
	KEYS2((R11)(R8*1), 32(R11)(R8*1), Y2, Y3)
	KEYS2((R11)(R8*2), 32(R11)(R8*2), Y4, Y5)
	KEYS2((R11)(R9*1), 32(R11)(R9*1), Y6, Y7)
	ADDQ $64, R10
	ADDQ $64, R11
	DECQ CX
	JNZ  s4c
s4tail:
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
	MOVQ hs+24(FP), CX
	ANDQ $15, CX
	SHRQ $2, CX // tail groups of four
	TESTQ CX, CX
	JZ    s4red
s4t:
	VMOVUPS (R10), X12
	TAIL1((R11), X8)
	TAIL1((R11)(R8*1), X9)
	TAIL1((R11)(R8*2), X10)
	TAIL1((R11)(R9*1), X11)
	ADDQ $16, R10
	ADDQ $16, R11
	DECQ CX
	JNZ  s4t
s4red:
	SUM8X4
	VMOVUPS X1, (R15)
	ADDQ BX, R15
	DECQ SI
	JZ   s4nextkv
	// the group's next query head reads the same keys again
	MOVQ hs+24(FP), CX
	SHLQ $2, CX
	SUBQ CX, R11
	JMP  s4g
s4nextkv:
	DECQ AX
	JNZ  s4kv
	LEAQ (DI)(R8*4), DI // the next four rows
	ADDQ $16, DX
	DECQ n+48(FP)
	JNZ  s4blk
	VZEROUPPER
	RET

// func attnRowMixAVX2(out, p *float32, pstride int, v *float32, vstride, hs, nkv, group, n int)
// attnRowMixAVX512 in 8-float halves: for j < n in order, for each
// key/value head kvh and each of its group query heads h,
// out[h*hs:][:hs] += p[h*pstride+j] * v[j*vstride+kvh*hs:][:hs], fused on
// whole 16-float chunks, a multiply then an add on the 4-float tail
// groups. hs a positive multiple of 4; nkv, group, n positive.
TEXT ·attnRowMixAVX2(SB), NOSPLIT, $0-72
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
m2j:
	MOVQ out+0(FP), R10 // head h's output; the heads lie back to back
	MOVQ SI, R11        // key/value head kvh's values in row j
	MOVQ DX, R15        // p[h*pstride+j]
	MOVQ nkv+48(FP), AX
m2kv:
	MOVQ group+56(FP), R14
m2g:
	VBROADCASTSS (R15), Y1
	MOVQ R9, R12
m2c:
	TESTQ R12, R12
	JZ    m2tail
	VMOVUPS (R10), Y0
	VFMADD231PS (R11), Y1, Y0
	VMOVUPS Y0, (R10)
	VMOVUPS 32(R10), Y2
	VFMADD231PS 32(R11), Y1, Y2
	VMOVUPS Y2, 32(R10)
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  m2c
m2tail:
	MOVQ R13, R12
m2t:
	TESTQ R12, R12
	JZ    m2done
	VMOVUPS (R10), X0
	VMULPS (R11), X1, X3
	VADDPS X3, X0, X0
	VMOVUPS X0, (R10)
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, R12
	JMP  m2t
m2done:
	ADDQ BX, R15
	DECQ R14
	JZ   m2nextkv
	// the group's next query head mixes the same values (from L1)
	MOVQ hs+40(FP), R12
	SHLQ $2, R12
	SUBQ R12, R11
	JMP  m2g
m2nextkv:
	DECQ AX
	JNZ  m2kv
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  m2j
	VZEROUPPER
	RET

// MIX2 adds the probability at pm (broadcast into Y12) times a value
// chunk (halves at v0, v1) to one head's output chunk halves lo and hi.
#define MIX2(pm, v0, v1, lo, hi) \
	VBROADCASTSS pm, Y12; \
	VFMADD231PS v0, Y12, lo; \
	VFMADD231PS v1, Y12, hi

// MIX4KEYS is MIX4's key step over float32 values.
#define MIX4KEYS \
	MIX2((R14), (R15)(R10*1), 32(R15)(R10*1), Y0, Y1); \
	MIX2((R14)(BX*1), (R15)(R11*1), 32(R15)(R11*1), Y2, Y3); \
	MIX2((R14)(BX*2), (R15)(R12*1), 32(R15)(R12*1), Y4, Y5); \
	MIX2((R14)(R9*1), (R15)(R13*1), 32(R15)(R13*1), Y6, Y7)

// func attnMix4AVX2(out, p *float32, pstride int, v *float32, vstride, hs, n int, kvoff *[4]int)
// attnMix4AVX512 in 8-float halves: four query heads' 16-float chunk
// columns held in Y0-Y7 across keys j < n, added in j order; hs a positive
// multiple of 16 (mix_amd64.h).
TEXT ·attnMix4AVX2(SB), NOSPLIT, $0-64
	MIX4($2, $64, MIX4KEYS, x4c, x4j)
