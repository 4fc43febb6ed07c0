// The AVX2 four-head value mix, shared by attnMix4AVX2 (float32 values,
// attn_avx2_amd64.s) and halfMix4AVX2 (binary16 values, half_amd64.s)
// (#include "mix_amd64.h").

// MIX4(vshift, vchunk, KEYS, lc, lj) is the body of
// func(out, p *float32, pstride int, v *T, vstride, hs, n int, kvoff *[4]int):
// out[i*hs:][:hs] += p[i*pstride+j] * v[kvoff[i]+j*vstride:][:hs] for the
// four query heads i and j < n in order, their 16-float chunk columns held
// in Y0-Y7 across the keys. A value is 1<<vshift bytes (vstride and kvoff
// count values) and a chunk of sixteen vchunk bytes; hs is a positive
// multiple of 16. KEYS adds key j's products into Y0-Y7 (head i's
// probability at R14 + i*pstride, its value chunk at R15 + R10..R13) and
// may use Y10-Y12; lc and lj name the loops.
#define MIX4(vshift, vchunk, KEYS, lc, lj) \
	MOVQ out+0(FP), DI; \
	MOVQ p+8(FP), SI; \
	MOVQ pstride+16(FP), BX; \
	SHLQ $2, BX; \
	LEAQ (BX)(BX*2), R9; \
	MOVQ v+24(FP), DX; \
	MOVQ vstride+32(FP), R8; \
	SHLQ vshift, R8; \
	MOVQ kvoff+56(FP), AX; \
	MOVQ 0(AX), R10; \
	MOVQ 8(AX), R11; \
	MOVQ 16(AX), R12; \
	MOVQ 24(AX), R13; \
	SHLQ vshift, R10; \
	SHLQ vshift, R11; \
	SHLQ vshift, R12; \
	SHLQ vshift, R13; \
	MOVQ hs+40(FP), AX; \
	SHRQ $4, AX; \
lc: \
	MOVQ hs+40(FP), CX; \
	SHLQ $2, CX; \
	LEAQ (DI)(CX*2), R14; \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS (DI)(CX*1), Y2; \
	VMOVUPS 32(DI)(CX*1), Y3; \
	VMOVUPS (R14), Y4; \
	VMOVUPS 32(R14), Y5; \
	VMOVUPS (R14)(CX*1), Y6; \
	VMOVUPS 32(R14)(CX*1), Y7; \
	MOVQ SI, R14; \
	MOVQ DX, R15; \
	MOVQ n+48(FP), CX; \
lj: \
	KEYS; \
	ADDQ $4, R14; \
	ADDQ R8, R15; \
	DECQ CX; \
	JNZ  lj; \
	MOVQ hs+40(FP), CX; \
	SHLQ $2, CX; \
	LEAQ (DI)(CX*2), R14; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, (DI)(CX*1); \
	VMOVUPS Y3, 32(DI)(CX*1); \
	VMOVUPS Y4, (R14); \
	VMOVUPS Y5, 32(R14); \
	VMOVUPS Y6, (R14)(CX*1); \
	VMOVUPS Y7, 32(R14)(CX*1); \
	ADDQ $64, DI; \
	ADDQ vchunk, R10; \
	ADDQ vchunk, R11; \
	ADDQ vchunk, R12; \
	ADDQ vchunk, R13; \
	DECQ AX; \
	JNZ  lc; \
	VZEROUPPER; \
	RET
