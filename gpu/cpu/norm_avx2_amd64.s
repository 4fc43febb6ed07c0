//go:build amd64 && !purego

#include "textflag.h"

// The norms' lane sums, row scalings and the add for CPUs with AVX2 but not
// AVX-512: the eight float64 lanes as two 4-lane halves (Y0 lanes 0-3, Y1
// lanes 4-7), every step as the AVX-512 kernels and the Go loops take it,
// so a norm has the same bits on every machine.

// func sumSquaresAVX2(x *float32, n int, lanes *[8]float64)
// lanes[j] += x[i]*x[i] in float64 for i = j, j+8, ... < n in order; n a
// positive multiple of 8.
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
ss2loop:
	VCVTPS2PD (SI), Y2
	VFMADD231PD Y2, Y2, Y0
	VCVTPS2PD 16(SI), Y3
	VFMADD231PD Y3, Y3, Y1
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  ss2loop
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func sumLanesAVX2(x *float32, n int, lanes *[8]float64)
// lanes[j] += x[i] in float64 for i = j, j+8, ... < n in order; n a
// positive multiple of 8.
TEXT ·sumLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
sl2loop:
	VCVTPS2PD (SI), Y2
	VADDPD Y2, Y0, Y0
	VCVTPS2PD 16(SI), Y3
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  sl2loop
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func sqDevLanesAVX2(x *float32, n int, m float64, lanes *[8]float64)
// lanes[j] += (x[i]-m)*(x[i]-m) in float64, the product rounded before the
// add, for i = j, j+8, ... < n in order; n a positive multiple of 8.
TEXT ·sqDevLanesAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD m+16(FP), Y4
	MOVQ lanes+24(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
sd2loop:
	VCVTPS2PD (SI), Y2
	VSUBPD Y4, Y2, Y2
	VMULPD Y2, Y2, Y2
	VADDPD Y2, Y0, Y0
	VCVTPS2PD 16(SI), Y3
	VSUBPD Y4, Y3, Y3
	VMULPD Y3, Y3, Y3
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  sd2loop
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func scaleRowAVX2(dst, x, w *float32, r float32, n int)
// dst[i] = (x[i]*r)*w[i], each product rounded to float32; n a positive
// multiple of 8.
TEXT ·scaleRowAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	VBROADCASTSS r+24(FP), Y2
	MOVQ n+32(FP), CX
sr2loop:
	VMULPS (SI), Y2, Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  sr2loop
	VZEROUPPER
	RET

// func addAVX2(out, a, b *float32, n int)
// out[i] = a[i] + b[i]; n a positive multiple of 8.
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
add2loop:
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  add2loop
	VZEROUPPER
	RET

// func layerNormRowAVX2(dst, x, w, b *float32, m, r float32, n int)
// dst[i] = ((x[i]-m)*r)*w[i] + b[i], each step rounded to float32; n a
// positive multiple of 8.
TEXT ·layerNormRowAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), BX
	VBROADCASTSS m+32(FP), Y2
	VBROADCASTSS r+36(FP), Y3
	MOVQ n+40(FP), CX
ln2loop:
	VMOVUPS (SI), Y0
	VSUBPS Y2, Y0, Y0
	VMULPS Y3, Y0, Y0
	VMULPS (DX), Y0, Y0
	VADDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  ln2loop
	VZEROUPPER
	RET
