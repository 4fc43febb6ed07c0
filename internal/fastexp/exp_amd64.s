//go:build amd64 && !purego

#include "textflag.h"

// The constants of math.Exp's amd64 kernel (exp_amd64.s), in its order.
DATA expc<>+0(SB)/8, $0.5
DATA expc<>+8(SB)/8, $1.0
DATA expc<>+16(SB)/8, $2.0
DATA expc<>+24(SB)/8, $1.6666666666666666667e-1
DATA expc<>+32(SB)/8, $4.1666666666666666667e-2
DATA expc<>+40(SB)/8, $8.3333333333333333333e-3
DATA expc<>+48(SB)/8, $1.3888888888888888889e-3
DATA expc<>+56(SB)/8, $1.9841269841269841270e-4
DATA expc<>+64(SB)/8, $2.4801587301587301587e-5
DATA expc<>+72(SB)/8, $1.4426950408889634073599246810018920   // log2(e)
DATA expc<>+80(SB)/8, $0.69314718055966295651160180568695068359375 // ln 2, upper part
DATA expc<>+88(SB)/8, $0.28235290563031577122588448175013436025525412068e-12 // ln 2, lower part
DATA expc<>+96(SB)/8, $0.0625
DATA expc<>+104(SB)/8, $-708.0 // the kernel's range: 2^k stays a normal number
DATA expc<>+112(SB)/8, $709.0
DATA expc<>+120(SB)/4, $1023
GLOBL expc<>(SB), RODATA, $124

// func shiftedExpAVX512(dst, src *float64, shift float64, n int) int
// dst[i] = exp(src[i] - shift) for whole chunks of eight, each lane through
// the operations math.Exp's FMA path takes (round x*log2(e) to k, reduce
// by k*ln2 in two parts, divide by 16, a Taylor polynomial in Horner form,
// four squarings of (1+r) as r*(r+2), times 2^k), so every result has its
// bits. Stops before the first chunk with an argument outside [-708, 709]
// (or not a number) and returns how many it did; n a positive multiple of 8.
TEXT ·shiftedExpAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	VBROADCASTSD shift+16(FP), Z15
	MOVQ n+24(FP), CX
	XORQ AX, AX
	VBROADCASTSD expc<>+104(SB), Z13
	VBROADCASTSD expc<>+112(SB), Z14
	VPBROADCASTD expc<>+120(SB), Y12
	VBROADCASTSD expc<>+0(SB), Z16
	VBROADCASTSD expc<>+8(SB), Z17
	VBROADCASTSD expc<>+16(SB), Z18
	VBROADCASTSD expc<>+24(SB), Z19
	VBROADCASTSD expc<>+32(SB), Z20
	VBROADCASTSD expc<>+40(SB), Z21
	VBROADCASTSD expc<>+48(SB), Z22
	VBROADCASTSD expc<>+56(SB), Z23
	VBROADCASTSD expc<>+64(SB), Z24
	VBROADCASTSD expc<>+72(SB), Z25
	VBROADCASTSD expc<>+80(SB), Z26
	VBROADCASTSD expc<>+88(SB), Z27
	VBROADCASTSD expc<>+96(SB), Z28
chunk:
	VMOVUPD (SI)(AX*8), Z0
	VSUBPD Z15, Z0, Z0
	VCMPPD $0x1D, Z13, Z0, K1 // x >= -708, false for NaN
	VCMPPD $0x12, Z14, Z0, K2 // x <= 709
	KANDB K1, K2, K3
	KMOVB K3, BX
	CMPB BX, $0xFF
	JNE  done
	VMULPD Z25, Z0, Z1
	VCVTPD2DQ Z1, Y2            // k, rounded to nearest even as CVTSD2SL does
	VCVTDQ2PD Y2, Z1
	VFNMADD231PD Z26, Z1, Z0    // x -= k*ln2 (upper)
	VFNMADD231PD Z27, Z1, Z0    // x -= k*ln2 (lower)
	VMULPD Z28, Z0, Z0
	VMOVAPD Z24, Z1
	VFMADD213PD Z23, Z0, Z1
	VFMADD213PD Z22, Z0, Z1
	VFMADD213PD Z21, Z0, Z1
	VFMADD213PD Z20, Z0, Z1
	VFMADD213PD Z19, Z0, Z1
	VFMADD213PD Z16, Z0, Z1
	VFMADD213PD Z17, Z0, Z1
	VMULPD Z1, Z0, Z0
	VADDPD Z18, Z0, Z1
	VMULPD Z1, Z0, Z0
	VADDPD Z18, Z0, Z1
	VMULPD Z1, Z0, Z0
	VADDPD Z18, Z0, Z1
	VMULPD Z1, Z0, Z0
	VADDPD Z18, Z0, Z1
	VFMADD213PD Z17, Z1, Z0
	VPADDD Y12, Y2, Y2          // k + 1023, the biased exponent
	VPMOVSXDQ Y2, Z3
	VPSLLQ $52, Z3, Z3          // 2^k
	VMULPD Z3, Z0, Z0
	VMOVUPD Z0, (DI)(AX*8)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  chunk
done:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET

// func shiftedExpAVX2(dst, src *float64, shift float64, n int) int
// shiftedExpAVX512 four lanes at a time, for CPUs with AVX2 and FMA but not
// AVX-512: the same operations on every lane, so the same bits (math.Exp's).
// Stops before the first chunk of four with an argument outside [-708, 709]
// (or not a number) and returns how many it did; n a positive multiple of 4.
TEXT ·shiftedExpAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	VBROADCASTSD shift+16(FP), Y15
	MOVQ n+24(FP), CX
	XORQ AX, AX
	VBROADCASTSD expc<>+104(SB), Y13
	VBROADCASTSD expc<>+112(SB), Y14
	VPBROADCASTD expc<>+120(SB), X12
	VBROADCASTSD expc<>+0(SB), Y4
	VBROADCASTSD expc<>+8(SB), Y5
	VBROADCASTSD expc<>+16(SB), Y6
	VBROADCASTSD expc<>+72(SB), Y7
	VBROADCASTSD expc<>+80(SB), Y8
	VBROADCASTSD expc<>+88(SB), Y9
	VBROADCASTSD expc<>+96(SB), Y10
chunk2:
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD Y15, Y0, Y0
	VCMPPD $0x1D, Y13, Y0, Y1 // x >= -708, false for NaN
	VCMPPD $0x12, Y14, Y0, Y2 // x <= 709
	VANDPD Y2, Y1, Y1
	VMOVMSKPD Y1, BX
	CMPQ BX, $0x0F
	JNE  done2
	VMULPD Y7, Y0, Y1
	VCVTPD2DQY Y1, X2           // k, rounded to nearest even
	VCVTDQ2PD X2, Y1
	VFNMADD231PD Y8, Y1, Y0     // x -= k*ln2 (upper)
	VFNMADD231PD Y9, Y1, Y0     // x -= k*ln2 (lower)
	VMULPD Y10, Y0, Y0
	VBROADCASTSD expc<>+64(SB), Y1
	VBROADCASTSD expc<>+56(SB), Y3
	VFMADD213PD Y3, Y0, Y1
	VBROADCASTSD expc<>+48(SB), Y3
	VFMADD213PD Y3, Y0, Y1
	VBROADCASTSD expc<>+40(SB), Y3
	VFMADD213PD Y3, Y0, Y1
	VBROADCASTSD expc<>+32(SB), Y3
	VFMADD213PD Y3, Y0, Y1
	VBROADCASTSD expc<>+24(SB), Y3
	VFMADD213PD Y3, Y0, Y1
	VFMADD213PD Y4, Y0, Y1
	VFMADD213PD Y5, Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD Y6, Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD Y6, Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD Y6, Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD Y6, Y0, Y1
	VFMADD213PD Y5, Y1, Y0
	VPADDD X12, X2, X2          // k + 1023, the biased exponent
	VPMOVSXDQ X2, Y3
	VPSLLQ $52, Y3, Y3          // 2^k
	VMULPD Y3, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	CMPQ AX, CX
	JLT  chunk2
done2:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
