//go:build amd64 && !purego

#include "textflag.h"
#include "lanes_amd64.h"

// Vectorised GELU (tanh form) and SwiGLU, 16 floats per step, with exp computed
// as in exp32 (mathf.go): clamp, n = round(x*log2 e), r = x - n*ln 2 (two
// parts), Cephes' degree-6 polynomial, scale by 2^n through the exponent bits.
// The scalar Go versions handle tails and CPUs without AVX-512.

#define SETF(bits, reg) MOVL $bits, AX; VPBROADCASTD AX, reg

// Constants: Z13 3*0.044715, Z14 sqrt(2/pi), Z15 127 (int), Z16 1, Z17 0.044715,
// Z18 2*sqrt(2/pi), Z19 2, Z20 0.5, Z21 log2 e, Z22 ln2 hi, Z23 ln2 lo,
// Z24-Z29 polynomial, Z30 -87.3, Z31 88.7.
#define CONSTS \
	SETF(0x3e095d4f, Z13); SETF(0x3f4c422a, Z14); SETF(127, Z15); SETF(0x3f800000, Z16); \
	SETF(0x3d372713, Z17); SETF(0x3fcc422a, Z18); SETF(0x40000000, Z19); SETF(0x3f000000, Z20); \
	SETF(0x3fb8aa3b, Z21); SETF(0x3f318000, Z22); SETF(0x395e8083, Z23); SETF(0x39506967, Z24); \
	SETF(0x3ab743ce, Z25); SETF(0x3c088908, Z26); SETF(0x3d2aa9c1, Z27); SETF(0x3e2aaaaa, Z28); \
	SETF(0x3f000000, Z29); SETF(0xc2ae999a, Z30); SETF(0x42b16666, Z31)

// EXP: Z2 = exp(Z1); clobbers Z1, Z4, Z5, Z6.
#define EXP \
	VMINPS Z31, Z1, Z1; VMAXPS Z30, Z1, Z1; \
	VMULPS Z21, Z1, Z4; VRNDSCALEPS $0, Z4, Z4; \
	VMOVAPS Z1, Z5; VFNMADD231PS Z22, Z4, Z5; VFMADD231PS Z23, Z4, Z5; \
	VMOVAPS Z24, Z2; VFMADD213PS Z25, Z5, Z2; VFMADD213PS Z26, Z5, Z2; VFMADD213PS Z27, Z5, Z2; \
	VFMADD213PS Z28, Z5, Z2; VFMADD213PS Z29, Z5, Z2; \
	VMULPS Z5, Z5, Z6; VFMADD213PS Z5, Z6, Z2; VADDPS Z16, Z2, Z2; \
	VCVTPS2DQ Z4, Z4; VPADDD Z15, Z4, Z4; VPSLLD $23, Z4, Z4; VMULPS Z4, Z2, Z2

// TANHQ: from v in Z0, leaves q = 2/(exp(2u)+1) in Z3 (so tanh(u) = 1-q).
#define TANHQ \
	VMULPS Z0, Z0, Z1; VFMADD213PS Z16, Z17, Z1; VMULPS Z0, Z1, Z1; VMULPS Z18, Z1, Z1; \
	EXP; \
	VADDPS Z16, Z2, Z2; VDIVPS Z2, Z19, Z3

// MASKTAIL: from n in BX: CX = n%16, the tail's length; K1 its lanes;
// DX = n rounded down to whole vectors (AX clobbered).
#define MASKTAIL \
	MOVQ BX, CX; ANDQ $15, CX; MOVL $1, AX; SHLL CX, AX; DECL AX; KMOVW AX, K1; \
	MOVQ BX, DX; ANDQ $-16, DX

// ADDEXP64: Z10, Z11 += Z2's low and high eight lanes as float64 (Z3 scratch).
#define ADDEXP64 \
	VCVTPS2PD Y2, Z3; VADDPD Z3, Z10, Z10; \
	VEXTRACTF32X8 $1, Z2, Y3; VCVTPS2PD Y3, Z3; VADDPD Z3, Z11, Z11

// MAX16: every lane of X8 = the maximum of Z8's sixteen lanes (Z0 scratch;
// Z8's upper lanes are left stale).
#define MAX16 \
	VEXTRACTF32X8 $1, Z8, Y0; VMAXPS Y0, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X0; VMAXPS X0, X8, X8; \
	VPERMILPS $0x4e, X8, X0; VMAXPS X0, X8, X8; \
	VPERMILPS $0xb1, X8, X0; VMAXPS X0, X8, X8

// func geluFwdAVX512(out, inp *float32, n int)
TEXT ·geluFwdAVX512(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ n+16(FP), CX
	CONSTS
gfloop:
	VMOVUPS (SI), Z0
	TANHQ
	VSUBPS Z3, Z19, Z3 // 1 + tanh = 2 - q
	VMULPS Z0, Z3, Z3
	VMULPS Z20, Z3, Z3
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  gfloop
	VZEROUPPER
	RET

// func geluBwdAVX512(dinp, dout, inp *float32, n int)
// dinp += dout * (0.5*(1+t) + 0.5*v*(1-t^2)*c*(1+3*0.044715*v^2)), t = tanh(u)
TEXT ·geluBwdAVX512(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ inp+16(FP), SI
	MOVQ n+24(FP), CX
	CONSTS
gbloop:
	VMOVUPS (SI), Z0
	TANHQ
	VSUBPS Z3, Z19, Z7          // Z7 = 1+t = 2-q
	VMULPS Z7, Z3, Z8           // Z8 = (1-t)(1+t) = sech^2
	VMULPS Z0, Z0, Z9           // v^2
	VFMADD213PS Z16, Z13, Z9    // 1 + 3k v^2
	VMULPS Z14, Z9, Z9          // * c
	VMULPS Z8, Z9, Z9
	VFMADD213PS Z7, Z0, Z9      // v*sech2*D + (1+t)
	VMULPS Z20, Z9, Z9          // * 0.5
	VMOVUPS (DI), Z10
	VFMADD231PS (DX), Z9, Z10   // dinp += g * dout
	VMOVUPS Z10, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $16, CX
	JNZ  gbloop
	VZEROUPPER
	RET

// SIGMOID: from g in Z0, Z3 = 1/(1+exp(-g)); clobbers Z1, Z2, Z4-Z6.
#define SIGMOID \
	VXORPS Z1, Z1, Z1; VSUBPS Z0, Z1, Z1; \
	EXP; \
	VADDPS Z16, Z2, Z2; VDIVPS Z2, Z16, Z3

// func swigluFwdAVX512(out, gate, up *float32, n int)
TEXT ·swigluFwdAVX512(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	CONSTS
sfloop:
	VMOVUPS (SI), Z0
	SIGMOID
	VMULPS Z0, Z3, Z3
	VMULPS (DX), Z3, Z3
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $16, CX
	JNZ  sfloop
	VZEROUPPER
	RET

// func swigluBwdAVX512(dgate, dup, dout, gate, up *float32, n int)
// dgate += dout*up*s*(1+g*(1-s)); dup += dout*g*s
TEXT ·swigluBwdAVX512(SB), NOSPLIT, $0-48
	MOVQ dgate+0(FP), DI
	MOVQ dup+8(FP), R8
	MOVQ dout+16(FP), R9
	MOVQ gate+24(FP), SI
	MOVQ up+32(FP), DX
	MOVQ n+40(FP), CX
	CONSTS
sbloop:
	VMOVUPS (SI), Z0
	SIGMOID
	VMOVUPS (R9), Z7            // dout
	VMULPS Z0, Z3, Z8           // silu = g*s
	VMOVUPS (R8), Z9
	VFMADD231PS Z8, Z7, Z9      // dup += dout*silu
	VMOVUPS Z9, (R8)
	VSUBPS Z3, Z16, Z10         // 1-s
	VFMADD213PS Z16, Z0, Z10    // 1 + g*(1-s)
	VMULPS Z3, Z10, Z10         // * s
	VMULPS (DX), Z10, Z10       // * up
	VMOVUPS (DI), Z11
	VFMADD231PS Z10, Z7, Z11    // dgate += dout * ...
	VMOVUPS Z11, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JNZ  sbloop
	VZEROUPPER
	RET

// func softmaxRowAVX512(row *float32, n int, scale float32)
// row[:n] = softmax(scale*row[:n]), n >= 1, in three passes: scale and
// running maximum; exp(x - max) (EXP) summed in 16 lanes, reduced as SUM16;
// multiply by 1/sum. The last n%16 elements go through mask K1, so nothing
// past row[n-1] is read or written.
TEXT ·softmaxRowAVX512(SB), NOSPLIT, $0-20
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), BX
	VBROADCASTSS scale+16(FP), Z7
	CONSTS
	MASKTAIL
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z8 // running maximum: -inf

	MOVQ DI, SI
	MOVQ DX, R8
smaxloop:
	TESTQ R8, R8
	JZ    smaxtail
	VMULPS (SI), Z7, Z0
	VMOVUPS Z0, (SI)
	VMAXPS Z0, Z8, Z8
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  smaxloop
smaxtail:
	TESTQ CX, CX
	JZ    smaxreduce
	VMOVUPS.Z (SI), K1, Z0
	VMULPS Z0, Z7, Z0
	VMOVUPS Z0, K1, (SI)
	VMAXPS Z0, Z8, K1, Z8
smaxreduce:
	MAX16
	VBROADCASTSS X8, Z8

	VXORPS Z10, Z10, Z10
	MOVQ DI, SI
	MOVQ DX, R8
sexploop:
	TESTQ R8, R8
	JZ    sexptail
	VMOVUPS (SI), Z1
	VSUBPS Z8, Z1, Z1
	EXP
	VMOVUPS Z2, (SI)
	VADDPS Z2, Z10, Z10
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  sexploop
sexptail:
	TESTQ CX, CX
	JZ    ssum
	VMOVUPS.Z (SI), K1, Z1
	VSUBPS Z8, Z1, Z1
	EXP
	VMOVUPS Z2, K1, (SI)
	VADDPS Z2, Z10, K1, Z10
ssum:
	VMOVAPS Z10, Z0
	SUM16
	VDIVSS X0, X16, X0
	VBROADCASTSS X0, Z0

	MOVQ DI, SI
	MOVQ DX, R8
snormloop:
	TESTQ R8, R8
	JZ    snormtail
	VMULPS (SI), Z0, Z1
	VMOVUPS Z1, (SI)
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  snormloop
snormtail:
	TESTQ CX, CX
	JZ    sdone
	VMOVUPS.Z (SI), K1, Z1
	VMULPS Z1, Z0, Z1
	VMOVUPS Z1, K1, (SI)
sdone:
	VZEROUPPER
	RET

// func lseRowAVX512(row *float32, n int) (maxv float32, sum float64)
// maxv = max(row); sum = the sum of exp(row[j] - maxv), each exp as EXP
// computes it, accumulated in float64 over 16 lanes.
TEXT ·lseRowAVX512(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), BX
	CONSTS
	MASKTAIL
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z8 // running maximum: -inf
	MOVQ DI, SI
	MOVQ DX, R8
lmaxloop:
	TESTQ R8, R8
	JZ    lmaxtail
	VMAXPS (SI), Z8, Z8
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  lmaxloop
lmaxtail:
	TESTQ CX, CX
	JZ    lmaxreduce
	VMOVUPS.Z (SI), K1, Z0
	VMAXPS Z0, Z8, K1, Z8
lmaxreduce:
	MAX16
	VMOVSS X8, maxv+16(FP)
	VBROADCASTSS X8, Z8

	VXORPD Z10, Z10, Z10
	VXORPD Z11, Z11, Z11
	MOVQ DI, SI
	MOVQ DX, R8
lexploop:
	TESTQ R8, R8
	JZ    lexptail
	VMOVUPS (SI), Z1
	VSUBPS Z8, Z1, Z1
	EXP
	ADDEXP64
	ADDQ $64, SI
	SUBQ $16, R8
	JMP  lexploop
lexptail:
	TESTQ CX, CX
	JZ    lsum
	VMOVUPS.Z (SI), K1, Z1
	VSUBPS Z8, Z1, Z1
	EXP
	VMOVAPS.Z Z2, K1, Z2
	ADDEXP64
lsum:
	VADDPD Z11, Z10, Z10
	VEXTRACTF64X4 $1, Z10, Y0
	VADDPD Y0, Y10, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, sum+24(FP)
	VZEROUPPER
	RET

// func expScaleAVX512(dst, row *float32, n int, maxv, logsum, scale float32)
// dst[j] = scale * exp((row[j] - maxv) - logsum), exp as EXP computes it.
TEXT ·expScaleAVX512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), BX
	VBROADCASTSS maxv+24(FP), Z8
	VBROADCASTSS logsum+28(FP), Z7
	VBROADCASTSS scale+32(FP), Z9
	CONSTS
	MASKTAIL
	MOVQ DX, R8
esloop:
	TESTQ R8, R8
	JZ    estail
	VMOVUPS (SI), Z1
	VSUBPS Z8, Z1, Z1
	VSUBPS Z7, Z1, Z1
	EXP
	VMULPS Z9, Z2, Z2
	VMOVUPS Z2, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, R8
	JMP  esloop
estail:
	TESTQ CX, CX
	JZ    esdone
	VMOVUPS.Z (SI), K1, Z1
	VSUBPS Z8, Z1, Z1
	VSUBPS Z7, Z1, Z1
	EXP
	VMULPS Z9, Z2, Z2
	VMOVUPS Z2, K1, (DI)
esdone:
	VZEROUPPER
	RET
