//go:build amd64 && !purego

#include "textflag.h"
#include "sgemm_amd64.h"

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
	PREFETCHC12
	ZERO24
loop:
	VMOVUPS (BX), Z24
	VMOVUPS 64(BX), Z25
	FMA12ROWS
	ADDQ $48, AX
	ADDQ $128, BX
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
	ZERO8
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
	ROWS4(ADDROW)
	VZEROUPPER
	RET

// STORELANE stores lane L of Z8-Z11 (the four rows' values 4L+0..4L+3)
// at R14, R14+R12, R14+2*R12 and R14+R13 (= R14+3*R12): four columns of
// dst.
#define STORELANE(L) \
	VEXTRACTF32X4 L, Z8, (R14); \
	VEXTRACTF32X4 L, Z9, (R14)(R12*1); \
	VEXTRACTF32X4 L, Z10, (R14)(R12*2); \
	VEXTRACTF32X4 L, Z11, (R14)(R13*1)

// func packRowsAVX512(a *float32, lda, kb, rows int, dst *float32, ldd int)
//
// Transposes rows of a into columns of dst, sixteen values of each row at
// a time: dst[p*ldd+i] = a[i*lda+p] for i < rows, p < kb. This is packA's
// full panel (rows = ldd = 12) and packB's for a transposed b (32 rows of
// b, a weight stored output-major, become a panel's 32 columns). Each
// group of four rows is transposed in 4x4 blocks within the 128-bit lanes
// (unpacks of floats, then of pairs), so lane L of u_k holds the four
// rows' value 4L+k, which is stored where column 4L+k's values go. kb a
// positive multiple of 16, rows a positive multiple of 4.
TEXT ·packRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R8
	SHLQ $2, R8
	MOVQ kb+16(FP), CX
	SHRQ $4, CX
	MOVQ rows+24(FP), BX
	SHRQ $2, BX // four-row groups
	MOVQ dst+32(FP), DI
	MOVQ ldd+40(FP), R12
	SHLQ $2, R12 // bytes from one column of dst to the next
	LEAQ (R12)(R12*2), R13 // three columns
	MOVQ R12, AX
	SHLQ $2, AX // four columns
	LEAQ (R8)(R8*2), R9 // three rows
pr16:
	MOVQ SI, R10 // row group g's first row
	MOVQ DI, R11 // where row group g's four values of column 0 go
	MOVQ BX, DX
prg:
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R8*1), Z1
	VMOVUPS (R10)(R8*2), Z2
	VMOVUPS (R10)(R9*1), Z3
	VUNPCKLPS Z1, Z0, Z4 // per lane: r0[0] r1[0] r0[1] r1[1]
	VUNPCKHPS Z1, Z0, Z5 // r0[2] r1[2] r0[3] r1[3]
	VUNPCKLPS Z3, Z2, Z6
	VUNPCKHPS Z3, Z2, Z7
	VUNPCKLPD Z6, Z4, Z8 // column 4L+0
	VUNPCKHPD Z6, Z4, Z9 // 4L+1
	VUNPCKLPD Z7, Z5, Z10 // 4L+2
	VUNPCKHPD Z7, Z5, Z11 // 4L+3
	MOVQ R11, R14
	STORELANE($0)
	ADDQ AX, R14
	STORELANE($1)
	ADDQ AX, R14
	STORELANE($2)
	ADDQ AX, R14
	STORELANE($3)
	LEAQ (R10)(R8*4), R10
	ADDQ $16, R11
	DECQ DX
	JNZ  prg
	ADDQ $64, SI // the next sixteen values of each row
	LEAQ (DI)(AX*4), DI // sixteen columns on
	DECQ CX
	JNZ  pr16
	VZEROUPPER
	RET

// func kern1x128AVX512(kb int, a, b *float32, pstride int, c *float32)
//
// One row of packed A (stride mr = 12 floats per k) times four consecutive
// packed B panels (each nr = 32 columns, pstride bytes apart), added to
// the row's 128 values of C as the edge path adds them: c += (acc + 0).
// Each column's accumulator is the chain of FMAs over k in order that the
// 4- and 12-row kernels give that row, so the bits are theirs; with eight
// independent accumulators the FMAs are not waiting on each other, which
// a one-row tile of the wider kernels is (decoding one sequence).
TEXT ·kern1x128AVX512(SB), NOSPLIT, $0-40
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ pstride+24(FP), R9
	MOVQ c+32(FP), DX
	LEAQ (BX)(R9*2), R10 // panel 2
	ZERO8
loop1:
	VBROADCASTSS (AX), Z31
	VFMADD231PS (BX), Z31, Z0
	VFMADD231PS 64(BX), Z31, Z1
	VFMADD231PS (BX)(R9*1), Z31, Z2
	VFMADD231PS 64(BX)(R9*1), Z31, Z3
	VFMADD231PS (R10), Z31, Z4
	VFMADD231PS 64(R10), Z31, Z5
	VFMADD231PS (R10)(R9*1), Z31, Z6
	VFMADD231PS 64(R10)(R9*1), Z31, Z7
	ADDQ $48, AX
	ADDQ $128, BX
	ADDQ $128, R10
	DECQ CX
	JNZ  loop1
	ROW128
	VZEROUPPER
	RET

// FMABC adds A's element at byte off, broadcast, times the B vector Z24
// to accumulator acc: the FMA of FMAROW's first half, with the broadcast
// read as part of it.
#define FMABC(off, acc) \
	VFMADD231PS.BCST off(AX), Z24, acc

// EDGESET1 and EDGEADD1 end a row of a narrow tile as the edge path does: acc + 0,
// then set into or added to C's first columns at DX through mask K1.
#define EDGESET1(acc) \
	VADDPS Z30, acc, acc; \
	VMOVUPS acc, K1, (DX)

#define EDGEADD1(acc) \
	VADDPS Z30, acc, acc; \
	VMOVUPS.Z (DX), K1, Z31; \
	VADDPS Z31, acc, acc; \
	VMOVUPS acc, K1, (DX)

// EDGESET2 and EDGEADD2 end a row of two vectors: the first sixteen
// columns whole, the rest through K1 (C's columns from 64(DX)).
#define EDGESET2(lo, hi) \
	VADDPS Z30, lo, lo; \
	VADDPS Z30, hi, hi; \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, K1, 64(DX)

#define EDGEADD2(lo, hi) \
	VADDPS Z30, lo, lo; \
	VADDPS Z30, hi, hi; \
	VADDPS (DX), lo, lo; \
	VMOVUPS lo, (DX); \
	VMOVUPS.Z 64(DX), K1, Z31; \
	VADDPS Z31, hi, hi; \
	VMOVUPS hi, K1, 64(DX)

// ROWS12N(OP) applies a one-vector OP to Z0-Z11, C's rows R8 bytes apart.
#define ROWS12N(OP) \
	OP(Z0); ADDQ R8, DX; OP(Z1); ADDQ R8, DX; OP(Z2); ADDQ R8, DX; \
	OP(Z3); ADDQ R8, DX; OP(Z4); ADDQ R8, DX; OP(Z5); ADDQ R8, DX; \
	OP(Z6); ADDQ R8, DX; OP(Z7); ADDQ R8, DX; OP(Z8); ADDQ R8, DX; \
	OP(Z9); ADDQ R8, DX; OP(Z10); ADDQ R8, DX; OP(Z11)

// func kern12x16mAVX512(kb int, a, b, c *float32, ldc int, set bool, mask uint16)
//
// An edge panel of twelve real rows and nw <= 16 real columns (the panel's
// other columns zero padding; mask has their nw low bits) straight into
// C's twelve rows, nw values each: what the edge path (kernEdge into a cleared tile, then added to C,
// C cleared first with set) writes there, bit for bit. Each element is the
// chain of FMAs over k in order that every kernel gives it; the sums then
// go to C as the edge path takes them from its tile, c + (acc + 0) (with
// set, c = +0). Only the panel's first vector is multiplied: half the FMAs
// of the four-row kernels over the whole panel, and no tile.
TEXT ·kern12x16mAVX512(SB), NOSPLIT, $0-44
	KMOVW mask+42(FP), K1
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	ZERO8
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
loop16m:
	VMOVUPS (BX), Z24
	FMABC(0, Z0)
	FMABC(4, Z1)
	FMABC(8, Z2)
	FMABC(12, Z3)
	FMABC(16, Z4)
	FMABC(20, Z5)
	FMABC(24, Z6)
	FMABC(28, Z7)
	FMABC(32, Z8)
	FMABC(36, Z9)
	FMABC(40, Z10)
	FMABC(44, Z11)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop16m
	VPXORD Z30, Z30, Z30
	CMPB set+40(FP), $0
	JNE  store16m
	ROWS12N(EDGEADD1)
	VZEROUPPER
	RET
store16m:
	ROWS12N(EDGESET1)
	VZEROUPPER
	RET

// func kern12x32mAVX512(kb int, a, b, c *float32, ldc int, set bool, mask uint16)
//
// kern12x16mAVX512 for 16 < nw < 32 real columns: kern12x32AVX512's loop,
// then the edge path's ending, the last nw-16 columns through mask.
TEXT ·kern12x32mAVX512(SB), NOSPLIT, $0-44
	KMOVW mask+42(FP), K1
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	ZERO24
loop32m:
	VMOVUPS (BX), Z24
	VMOVUPS 64(BX), Z25
	FMA12ROWS
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop32m
	VPXORD Z30, Z30, Z30
	CMPB set+40(FP), $0
	JNE  store32m
	ROWS12(EDGEADD2)
	VZEROUPPER
	RET
store32m:
	ROWS12(EDGESET2)
	VZEROUPPER
	RET
