//go:build amd64 && !purego

#include "textflag.h"

// ADDROW2 adds a sub-tile row (halves lo, hi) to C's row at DX; SETROW2
// stores it there.
#define ADDROW2(lo, hi) \
	VADDPS (DX), lo, lo; \
	VMOVUPS lo, (DX); \
	VADDPS 32(DX), hi, hi; \
	VMOVUPS hi, 32(DX)

#define SETROW2(lo, hi) \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, 32(DX)

// PREFETCHROW2 asks for the cache lines of a sub-tile row of C at R9 (its
// first and last byte) and steps R9 to the next row: the six rows are
// prefetched before the K loop, as PREFETCHC12 does for the AVX-512 tile.
#define PREFETCHROW2 \
	PREFETCHT0 (R9); \
	PREFETCHT0 63(R9); \
	ADDQ R8, R9

// func kern6x16AVX2(kb int, a, b, c *float32, ldc int, set bool)
//
// C[6][16] (row stride ldc) += six rows of a packed A panel (a[p*12+i],
// i < 6) times sixteen columns of a packed B panel (b[p*32+j], j < 16):
// a quarter of the 12x32 tile, for CPUs with AVX2 and FMA but not
// AVX-512. Y0-Y11 hold the sub-tile, row i in Y(2i) and Y(2i+1). Every
// element accumulates its products in the AVX-512 kernel's order (from
// zero, p ascending, fused multiply-add), then adds C: the same bits. With
// set, C is set to the sums instead (they start at +0, so none is -0 and
// storing them gives the bits of adding them to a cleared C).
TEXT ·kern6x16AVX2(SB), NOSPLIT, $0-41
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ DX, R9
	PREFETCHROW2; PREFETCHROW2; PREFETCHROW2
	PREFETCHROW2; PREFETCHROW2; PREFETCHROW2
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
loop:
	VMOVUPS (BX), Y12
	VMOVUPS 32(BX), Y13
	VBROADCASTSS 0(AX), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 4(AX), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 8(AX), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 12(AX), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 16(AX), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 20(AX), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop
	MOVBLZX set+40(FP), R9
	TESTQ R9, R9
	JNZ   setc
	ADDROW2(Y0, Y1)
	ADDQ R8, DX
	ADDROW2(Y2, Y3)
	ADDQ R8, DX
	ADDROW2(Y4, Y5)
	ADDQ R8, DX
	ADDROW2(Y6, Y7)
	ADDQ R8, DX
	ADDROW2(Y8, Y9)
	ADDQ R8, DX
	ADDROW2(Y10, Y11)
	VZEROUPPER
	RET
setc:
	SETROW2(Y0, Y1)
	ADDQ R8, DX
	SETROW2(Y2, Y3)
	ADDQ R8, DX
	SETROW2(Y4, Y5)
	ADDQ R8, DX
	SETROW2(Y6, Y7)
	ADDQ R8, DX
	SETROW2(Y8, Y9)
	ADDQ R8, DX
	SETROW2(Y10, Y11)
	VZEROUPPER
	RET

// PACK4 transposes four rows of eight floats (at b, b+R8, b+2*R8, b+R9) into
// eight columns of four and stores column q's four at d + q*R12: a 4x4
// transpose within each 128-bit lane, then the lower lanes (columns 0-3)
// and, through R14 = d + 4*R12, the upper lanes (4-7).
#define PACK4(b, d) \
	VMOVUPS (b), Y0; VMOVUPS (b)(R8*1), Y1; VMOVUPS (b)(R8*2), Y2; VMOVUPS (b)(R9*1), Y3; \
	VUNPCKLPS Y1, Y0, Y4; VUNPCKHPS Y1, Y0, Y5; VUNPCKLPS Y3, Y2, Y6; VUNPCKHPS Y3, Y2, Y7; \
	VUNPCKLPD Y6, Y4, Y0; VUNPCKHPD Y6, Y4, Y1; VUNPCKLPD Y7, Y5, Y2; VUNPCKHPD Y7, Y5, Y3; \
	VMOVUPS X0, (d); VMOVUPS X1, (d)(R12*1); VMOVUPS X2, (d)(R12*2); VMOVUPS X3, (d)(R13*1); \
	LEAQ (d)(R12*4), R14; \
	VEXTRACTF128 $1, Y0, (R14); VEXTRACTF128 $1, Y1, (R14)(R12*1); VEXTRACTF128 $1, Y2, (R14)(R12*2); VEXTRACTF128 $1, Y3, (R14)(R13*1)

// func packRowsAVX2(a *float32, lda, kb, rows int, dst *float32, ldd int)
// packRowsAVX512 (see there) eight values of each row at a time:
// dst[p*ldd+i] = a[i*lda+p] for p < kb, i < rows, four rows at a time; kb
// a positive multiple of 8, rows of 4.
TEXT ·packRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9 // three rows
	MOVQ kb+16(FP), CX
	MOVQ rows+24(FP), BX
	SHRQ $2, BX // four-row groups
	MOVQ dst+32(FP), DI
	MOVQ ldd+40(FP), R12
	SHLQ $2, R12 // bytes from one column of dst to the next
	LEAQ (R12)(R12*2), R13 // three columns
pa2loop:
	MOVQ SI, R10 // row group g's first row
	MOVQ DI, R11 // where its four values of column 0 go
	MOVQ BX, DX
pa2g:
	PACK4(R10, R11)
	LEAQ (R10)(R8*4), R10
	ADDQ $16, R11
	DECQ DX
	JNZ  pa2g
	ADDQ $32, SI // the next eight values of each row
	LEAQ (DI)(R12*8), DI // eight columns on
	SUBQ $8, CX
	JNZ  pa2loop
	VZEROUPPER
	RET
