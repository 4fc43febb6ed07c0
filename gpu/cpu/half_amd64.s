//go:build amd64 && !purego

#include "textflag.h"

#include "lanes_amd64.h"
#include "mix_amd64.h"

// Kernels of the binary16 key/value cache (gpu.HalfKV) for CPUs with AVX2,
// FMA and F16C (every AVX-512 CPU has them too, so one set serves both).
// Each widens binary16 values exactly (VCVTPH2PS) and then does what the
// float32 kernel in attn_avx2_amd64.s does, so a score has dot's bits and a
// mixed output axpy's over the widened values.

// func storeHalfAVX2(dst *uint16, src *float32, n int)
// dst[i] = binary16(src[i]) rounded to nearest, ties to even (VCVTPS2PH
// mode 0), and src[i] = float32(dst[i]), for i < n, n a positive multiple
// of 8.
TEXT ·storeHalfAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
st8:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVUPS X1, (DI)
	VCVTPH2PS X1, Y2
	VMOVUPS Y2, (SI)
	ADDQ $16, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  st8
	VZEROUPPER
	RET

// func widenHalfAVX2(dst *float32, src *uint16, n int)
// dst[i] = float32(src[i]) for i < n, n a positive multiple of 8.
TEXT ·widenHalfAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
wd8:
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  wd8
	VZEROUPPER
	RET

// HKEYS2 is KEYS2 (attn_avx2_amd64.s) on a binary16 key chunk whose
// halves are at m0 and m1, widened into Y10 and Y11 first.
#define HKEYS2(m0, m1, lo, hi) \
	VCVTPH2PS m0, Y10; \
	VFMADD231PS Y10, Y8, lo; \
	VCVTPH2PS m1, Y11; \
	VFMADD231PS Y11, Y9, hi

// func halfScores4AVX2(q *float32, k *uint16, hs, group, n int, p *float32, pstride int, end *uint16)
// attnRowScores4AVX2 for one key/value head of a half cache: its keys lie
// back to back (row j at k+j*hs), and for each of its group query heads h
// (queries back to back from q), p[h*pstride+j] = dot(q[h*hs:][:hs],
// float32(k[j*hs:][:hs])) for j < n. hs a positive multiple of 16; group
// positive; n a positive multiple of 4. Each block of four rows also
// prefetches the block four ahead (no further than end, the head's last
// row), which streams the cache at nearly twice the rate the hardware
// prefetcher alone reaches.
TEXT ·halfScores4AVX2(SB), NOSPLIT, $0-64
	MOVQ k+8(FP), DI
	MOVQ hs+16(FP), R8
	SHLQ $1, R8         // one row's bytes
	LEAQ (R8)(R8*2), R9 // three rows
	MOVQ p+40(FP), DX
	MOVQ pstride+48(FP), BX
	SHLQ $2, BX
	SHRQ $2, n+32(FP) // blocks left
h4blk:
	// prefetch the block four ahead, clamped to the last row
	LEAQ (DI)(R8*8), R12
	LEAQ (R12)(R8*8), R12
	MOVQ end+56(FP), R13
	CMPQ R12, R13
	CMOVQGT R13, R12
	MOVQ hs+16(FP), CX
	SHRQ $3, CX // the block's 64-byte lines (8*hs bytes)
h4pf:
	PREFETCHT0 (R12)
	ADDQ $64, R12
	DECQ CX
	JNZ  h4pf
	MOVQ q+0(FP), R10 // head h's query
	MOVQ DX, R15      // p[h*pstride+j0]
	MOVQ group+24(FP), SI
h4g:
	MOVQ DI, R11 // the block's row 0
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ hs+16(FP), CX
	SHRQ $4, CX
h4c:
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	HKEYS2((R11), 16(R11), Y0, Y1)
	HKEYS2((R11)(R8*1), 16(R11)(R8*1), Y2, Y3)
	HKEYS2((R11)(R8*2), 16(R11)(R8*2), Y4, Y5)
	HKEYS2((R11)(R9*1), 16(R11)(R9*1), Y6, Y7)
	ADDQ $64, R10
	ADDQ $32, R11
	DECQ CX
	JNZ  h4c
	// no tail groups: attnRowScores4AVX2's tail sums are +0 here
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
	SUM8X4
	VMOVUPS X1, (R15)
	ADDQ BX, R15
	DECQ SI
	JNZ  h4g // the group's next query head reads the same keys (from L1)
	LEAQ (DI)(R8*4), DI // the next four rows
	ADDQ $16, DX
	DECQ n+32(FP)
	JNZ  h4blk
	VZEROUPPER
	RET

// HMIX2 is MIX2 (attn_avx2_amd64.s) on a binary16 value chunk whose
// halves are at v0 and v1.
#define HMIX2(pm, v0, v1, lo, hi) \
	VBROADCASTSS pm, Y12; \
	VCVTPH2PS v0, Y10; \
	VFMADD231PS Y10, Y12, lo; \
	VCVTPH2PS v1, Y11; \
	VFMADD231PS Y11, Y12, hi

// HMIX4KEYS is MIX4's key step over binary16 values.
#define HMIX4KEYS \
	HMIX2((R14), (R15)(R10*1), 16(R15)(R10*1), Y0, Y1); \
	HMIX2((R14)(BX*1), (R15)(R11*1), 16(R15)(R11*1), Y2, Y3); \
	HMIX2((R14)(BX*2), (R15)(R12*1), 16(R15)(R12*1), Y4, Y5); \
	HMIX2((R14)(R9*1), (R15)(R13*1), 16(R15)(R13*1), Y6, Y7)

// func halfMix4AVX2(out, p *float32, pstride int, v *uint16, vstride, hs, n int, kvoff *[4]int)
// attnMix4AVX2 over binary16 values: out[i*hs:][:hs] += p[i*pstride+j] *
// float32(v[kvoff[i]+j*vstride:][:hs]) for the four query heads i and
// j < n in order, fused; hs a positive multiple of 16, offsets in values
// (mix_amd64.h).
TEXT ·halfMix4AVX2(SB), NOSPLIT, $0-64
	MIX4($1, $32, HMIX4KEYS, hx4c, hx4j)
