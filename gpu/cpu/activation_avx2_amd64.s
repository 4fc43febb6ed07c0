//go:build amd64 && !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The exp-based kernels of activation_amd64.s (GELU, SwiGLU, the softmax
// row, the log-sum-exp row and its scaled exponentials) for CPUs with AVX2
// and FMA but not AVX-512: eight floats a vector, the same instructions in
// the same order on every element, constants from memory instead of Z13-Z31,
// and a row's last n%16 elements through VMASKMOVPS masks instead of K1.
// A 16-lane sum runs as two 8-lane halves added before SUM8 (float64 sums:
// four 4-lane quarters, added as the AVX-512 reduction pairs them), so every
// result has the AVX-512 kernels' bits.

// SPLAT fills the 32 bytes at off with the 32-bit pattern in bits (given
// twice, as a 64-bit value).
#define SPLAT(off, bits) DATA expc<>+(off)(SB)/8, $bits; DATA expc<>+(off+8)(SB)/8, $bits; DATA expc<>+(off+16)(SB)/8, $bits; DATA expc<>+(off+24)(SB)/8, $bits

SPLAT(0, 0x42b1666642b16666)   // 88.7, the clamp above
SPLAT(32, 0xc2ae999ac2ae999a)  // -87.3, the clamp below
SPLAT(64, 0x3fb8aa3b3fb8aa3b)  // log2 e
SPLAT(96, 0x3f3180003f318000)  // ln 2, high part
SPLAT(128, 0x395e8083395e8083) // ln 2, low part
SPLAT(160, 0x3950696739506967) // Cephes' polynomial, p0 ...
SPLAT(192, 0x3ab743ce3ab743ce)
SPLAT(224, 0x3c0889083c088908)
SPLAT(256, 0x3d2aa9c13d2aa9c1)
SPLAT(288, 0x3e2aaaaa3e2aaaaa)
SPLAT(320, 0x3f0000003f000000) // ... p5, which is also 0.5
SPLAT(352, 0x3f8000003f800000) // 1
SPLAT(384, 0x0000007f0000007f) // 127, the exponent bias (int32)
SPLAT(416, 0x4000000040000000) // 2
SPLAT(448, 0x3e095d4f3e095d4f) // 3*0.044715
SPLAT(480, 0x3f4c422a3f4c422a) // sqrt(2/pi)
SPLAT(512, 0x3d3727133d372713) // 0.044715
SPLAT(544, 0x3fcc422a3fcc422a) // 2*sqrt(2/pi)
SPLAT(576, 0xff800000ff800000) // -inf
GLOBL expc<>(SB), RODATA|NOPTR, $608

#define EXPHI expc<>+0(SB)
#define EXPLO expc<>+32(SB)
#define LOG2E expc<>+64(SB)
#define LN2HI expc<>+96(SB)
#define LN2LO expc<>+128(SB)
#define HALF expc<>+320(SB)
#define ONE expc<>+352(SB)
#define BIAS expc<>+384(SB)
#define TWO expc<>+416(SB)
#define K3 expc<>+448(SB)
#define SQ2PI expc<>+480(SB)
#define K1C expc<>+512(SB)
#define SQ2PI2 expc<>+544(SB)
#define NINF expc<>+576(SB)

// Eight all-ones lanes, then eight zeros: the eight lanes from byte 32-4t
// are the mask of a vector's first t lanes.
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// EXP2: Y2 = exp(Y1) as EXP computes it; clobbers Y1, Y4, Y5, Y6.
#define EXP2 \
	VMINPS EXPHI, Y1, Y1; VMAXPS EXPLO, Y1, Y1; \
	VMULPS LOG2E, Y1, Y4; VROUNDPS $0, Y4, Y4; \
	VMOVAPS Y1, Y5; VFNMADD231PS LN2HI, Y4, Y5; VFMADD231PS LN2LO, Y4, Y5; \
	VMOVUPS expc<>+160(SB), Y2; VFMADD213PS expc<>+192(SB), Y5, Y2; VFMADD213PS expc<>+224(SB), Y5, Y2; \
	VFMADD213PS expc<>+256(SB), Y5, Y2; VFMADD213PS expc<>+288(SB), Y5, Y2; VFMADD213PS HALF, Y5, Y2; \
	VMULPS Y5, Y5, Y6; VFMADD213PS Y5, Y6, Y2; VADDPS ONE, Y2, Y2; \
	VCVTPS2DQ Y4, Y4; VPADDD BIAS, Y4, Y4; VPSLLD $23, Y4, Y4; VMULPS Y4, Y2, Y2

// TANHQ2: from v in Y0, Y3 = q = 2/(exp(2u)+1) as TANHQ computes it (Y15
// holds 1, Y14 2); clobbers Y1, Y2, Y4-Y6.
#define TANHQ2 \
	VMULPS Y0, Y0, Y1; VMOVUPS K1C, Y6; VFMADD213PS Y15, Y6, Y1; VMULPS Y0, Y1, Y1; VMULPS SQ2PI2, Y1, Y1; \
	EXP2; \
	VADDPS Y15, Y2, Y2; VDIVPS Y2, Y14, Y3

// SIGMOID2: from g in Y0, Y3 = 1/(1+exp(-g)) (Y15 holds 1); clobbers Y1,
// Y2, Y4-Y6.
#define SIGMOID2 \
	VXORPS Y1, Y1, Y1; VSUBPS Y0, Y1, Y1; \
	EXP2; \
	VADDPS Y15, Y2, Y2; VDIVPS Y2, Y15, Y3

// TAILMASKS: from n in BX: CX = n%16, DX = n rounded down to whole 16-float
// chunks, Y14 the mask of the tail's first eight lanes, Y15 of the rest
// (R9-R12 clobbered).
#define TAILMASKS \
	MOVQ BX, CX; ANDQ $15, CX; MOVQ BX, DX; ANDQ $-16, DX; \
	MOVQ CX, R9; MOVQ $8, R10; CMPQ CX, R10; CMOVQGT R10, R9; MOVQ CX, R10; SUBQ R9, R10; \
	LEAQ tailmask<>+32(SB), R11; MOVQ R11, R12; SHLQ $2, R9; SUBQ R9, R11; SHLQ $2, R10; SUBQ R10, R12; \
	VMOVDQU (R11), Y14; VMOVDQU (R12), Y15

// MAX8: every lane of X8 = the maximum of Y8's eight lanes (X0 scratch).
#define MAX8 \
	VEXTRACTF128 $1, Y8, X0; VMAXPS X0, X8, X8; \
	VPERMILPS $0x4e, X8, X0; VMAXPS X0, X8, X8; \
	VPERMILPS $0xb1, X8, X0; VMAXPS X0, X8, X8

// func geluFwdAVX2(out, inp *float32, n int)
// n a positive multiple of 8.
TEXT ·geluFwdAVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVUPS ONE, Y15
	VMOVUPS TWO, Y14
gf2loop:
	VMOVUPS (SI), Y0
	TANHQ2
	VSUBPS Y3, Y14, Y3 // 1 + tanh = 2 - q
	VMULPS Y0, Y3, Y3
	VMULPS HALF, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  gf2loop
	VZEROUPPER
	RET

// func geluBwdAVX2(dinp, dout, inp *float32, n int)
// geluBwdAVX512's steps; n a positive multiple of 8.
TEXT ·geluBwdAVX2(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ inp+16(FP), SI
	MOVQ n+24(FP), CX
	VMOVUPS ONE, Y15
	VMOVUPS TWO, Y14
gb2loop:
	VMOVUPS (SI), Y0
	TANHQ2
	VSUBPS Y3, Y14, Y7       // 1+t = 2-q
	VMULPS Y7, Y3, Y8        // sech^2
	VMULPS Y0, Y0, Y9        // v^2
	VMOVUPS K3, Y10
	VFMADD213PS Y15, Y10, Y9 // 1 + 3k v^2
	VMULPS SQ2PI, Y9, Y9     // * c
	VMULPS Y8, Y9, Y9
	VFMADD213PS Y7, Y0, Y9   // v*sech2*D + (1+t)
	VMULPS HALF, Y9, Y9      // * 0.5
	VMOVUPS (DI), Y10
	VFMADD231PS (DX), Y9, Y10 // dinp += g * dout
	VMOVUPS Y10, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  gb2loop
	VZEROUPPER
	RET

// func swigluFwdAVX2(out, gate, up *float32, n int)
// n a positive multiple of 8.
TEXT ·swigluFwdAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS ONE, Y15
sf2loop:
	VMOVUPS (SI), Y0
	SIGMOID2
	VMULPS Y0, Y3, Y3
	VMULPS (DX), Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  sf2loop
	VZEROUPPER
	RET

// func swigluBwdAVX2(dgate, dup, dout, gate, up *float32, n int)
// swigluBwdAVX512's steps; n a positive multiple of 8.
TEXT ·swigluBwdAVX2(SB), NOSPLIT, $0-48
	MOVQ dgate+0(FP), DI
	MOVQ dup+8(FP), R8
	MOVQ dout+16(FP), R9
	MOVQ gate+24(FP), SI
	MOVQ up+32(FP), DX
	MOVQ n+40(FP), CX
	VMOVUPS ONE, Y15
sb2loop:
	VMOVUPS (SI), Y0
	SIGMOID2
	VMOVUPS (R9), Y7         // dout
	VMULPS Y0, Y3, Y8        // silu = g*s
	VMOVUPS (R8), Y9
	VFMADD231PS Y8, Y7, Y9   // dup += dout*silu
	VMOVUPS Y9, (R8)
	VSUBPS Y3, Y15, Y10      // 1-s
	VFMADD213PS Y15, Y0, Y10 // 1 + g*(1-s)
	VMULPS Y3, Y10, Y10      // * s
	VMULPS (DX), Y10, Y10    // * up
	VMOVUPS (DI), Y11
	VFMADD231PS Y10, Y7, Y11 // dgate += dout * ...
	VMOVUPS Y11, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JNZ  sb2loop
	VZEROUPPER
	RET

// func softmaxRowAVX2(row *float32, n int, scale float32)
// softmaxRowAVX512's three passes; the exponentials summed in 16 lanes as
// two halves (Y10 lanes 0-7 of each chunk, Y11 lanes 8-15). n >= 1; nothing
// past row[n-1] is read or written.
TEXT ·softmaxRowAVX2(SB), NOSPLIT, $0-20
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), BX
	VBROADCASTSS scale+16(FP), Y7
	TAILMASKS
	VMOVUPS NINF, Y8 // running maximum

	MOVQ DI, SI
	MOVQ DX, R8
s2maxloop:
	TESTQ R8, R8
	JZ    s2maxtail
	VMULPS (SI), Y7, Y0
	VMOVUPS Y0, (SI)
	VMAXPS Y0, Y8, Y8
	VMULPS 32(SI), Y7, Y0
	VMOVUPS Y0, 32(SI)
	VMAXPS Y0, Y8, Y8
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  s2maxloop
s2maxtail:
	TESTQ CX, CX
	JZ    s2maxreduce
	VMASKMOVPS (SI), Y14, Y0
	VMULPS Y0, Y7, Y0
	VMASKMOVPS Y0, Y14, (SI)
	VMAXPS Y0, Y8, Y1
	VBLENDVPS Y14, Y1, Y8, Y8
	VMASKMOVPS 32(SI), Y15, Y0
	VMULPS Y0, Y7, Y0
	VMASKMOVPS Y0, Y15, 32(SI)
	VMAXPS Y0, Y8, Y1
	VBLENDVPS Y15, Y1, Y8, Y8
s2maxreduce:
	MAX8
	VBROADCASTSS X8, Y8

	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ DI, SI
	MOVQ DX, R8
s2exploop:
	TESTQ R8, R8
	JZ    s2exptail
	VMOVUPS (SI), Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VMOVUPS Y2, (SI)
	VADDPS Y2, Y10, Y10
	VMOVUPS 32(SI), Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VMOVUPS Y2, 32(SI)
	VADDPS Y2, Y11, Y11
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  s2exploop
s2exptail:
	TESTQ CX, CX
	JZ    s2sum
	VMASKMOVPS (SI), Y14, Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VMASKMOVPS Y2, Y14, (SI)
	VANDPS Y14, Y2, Y2
	VADDPS Y2, Y10, Y10
	VMASKMOVPS 32(SI), Y15, Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VMASKMOVPS Y2, Y15, 32(SI)
	VANDPS Y15, Y2, Y2
	VADDPS Y2, Y11, Y11
s2sum:
	VADDPS Y11, Y10, Y0
	SUM8
	VMOVSS ONE, X3
	VDIVSS X0, X3, X0
	VBROADCASTSS X0, Y0

	MOVQ DI, SI
	MOVQ DX, R8
s2normloop:
	TESTQ R8, R8
	JZ    s2normtail
	VMULPS (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	VMULPS 32(SI), Y0, Y1
	VMOVUPS Y1, 32(SI)
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  s2normloop
s2normtail:
	TESTQ CX, CX
	JZ    s2done
	VMASKMOVPS (SI), Y14, Y1
	VMULPS Y1, Y0, Y1
	VMASKMOVPS Y1, Y14, (SI)
	VMASKMOVPS 32(SI), Y15, Y1
	VMULPS Y1, Y0, Y1
	VMASKMOVPS Y1, Y15, 32(SI)
s2done:
	VZEROUPPER
	RET

// ADDEXP2(q0, q1): q0, q1 += Y2's low and high four lanes as float64 (Y3,
// X3 scratch).
#define ADDEXP2(q0, q1) \
	VCVTPS2PD X2, Y3; VADDPD Y3, q0, q0; \
	VEXTRACTF128 $1, Y2, X3; VCVTPS2PD X3, Y3; VADDPD Y3, q1, q1

// func lseRowAVX2(row *float32, n int) (maxv float32, sum float64)
// lseRowAVX512: the maximum, then exp(row[j] - maxv) summed in float64 over
// 16 lanes, as four quarters (Y10-Y13 hold lanes 0-3, 4-7, 8-11, 12-15).
TEXT ·lseRowAVX2(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), BX
	TAILMASKS
	VMOVUPS NINF, Y8
	MOVQ DI, SI
	MOVQ DX, R8
l2maxloop:
	TESTQ R8, R8
	JZ    l2maxtail
	VMAXPS (SI), Y8, Y8
	VMAXPS 32(SI), Y8, Y8
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  l2maxloop
l2maxtail:
	TESTQ CX, CX
	JZ    l2maxreduce
	VMASKMOVPS (SI), Y14, Y0
	VMAXPS Y0, Y8, Y1
	VBLENDVPS Y14, Y1, Y8, Y8
	VMASKMOVPS 32(SI), Y15, Y0
	VMAXPS Y0, Y8, Y1
	VBLENDVPS Y15, Y1, Y8, Y8
l2maxreduce:
	MAX8
	VMOVSS X8, maxv+16(FP)
	VBROADCASTSS X8, Y8

	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	MOVQ DI, SI
	MOVQ DX, R8
l2exploop:
	TESTQ R8, R8
	JZ    l2exptail
	VMOVUPS (SI), Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	ADDEXP2(Y10, Y11)
	VMOVUPS 32(SI), Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	ADDEXP2(Y12, Y13)
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  l2exploop
l2exptail:
	TESTQ CX, CX
	JZ    l2sum
	VMASKMOVPS (SI), Y14, Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VANDPS Y14, Y2, Y2
	ADDEXP2(Y10, Y11)
	VMASKMOVPS 32(SI), Y15, Y1
	VSUBPS Y8, Y1, Y1
	EXP2
	VANDPS Y15, Y2, Y2
	ADDEXP2(Y12, Y13)
l2sum:
	VADDPD Y12, Y10, Y10 // lanes 0-7 plus lanes 8-15, as Z10 + Z11
	VADDPD Y13, Y11, Y11
	VADDPD Y11, Y10, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, sum+24(FP)
	VZEROUPPER
	RET

// func expScaleAVX2(dst, row *float32, n int, maxv, logsum, scale float32)
// dst[j] = scale * exp((row[j] - maxv) - logsum), as expScaleAVX512.
TEXT ·expScaleAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), BX
	VBROADCASTSS maxv+24(FP), Y8
	VBROADCASTSS logsum+28(FP), Y7
	VBROADCASTSS scale+32(FP), Y9
	TAILMASKS
	MOVQ DX, R8
	SHRQ $3, R8 // whole 8-float vectors
es2loop:
	TESTQ R8, R8
	JZ    es2tail
	VMOVUPS (SI), Y1
	VSUBPS Y8, Y1, Y1
	VSUBPS Y7, Y1, Y1
	EXP2
	VMULPS Y9, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ R8
	JMP  es2loop
es2tail:
	TESTQ CX, CX
	JZ    es2done
	VMASKMOVPS (SI), Y14, Y1
	VSUBPS Y8, Y1, Y1
	VSUBPS Y7, Y1, Y1
	EXP2
	VMULPS Y9, Y2, Y2
	VMASKMOVPS Y2, Y14, (DI)
	VMASKMOVPS 32(SI), Y15, Y1
	VSUBPS Y8, Y1, Y1
	VSUBPS Y7, Y1, Y1
	EXP2
	VMULPS Y9, Y2, Y2
	VMASKMOVPS Y2, Y15, 32(DI)
es2done:
	VZEROUPPER
	RET
