// Lane reductions shared by the amd64 kernels (#include "lanes_amd64.h").

// SUM8 leaves in X0's first lane the sum of Y0's eight lanes: the upper
// half added to the lower, then two horizontal adds (X1 is scratch). Every
// dot product reduces in this one order, so the kernels agree bitwise.
#define SUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0

// SUM16 is SUM8 after adding Z0's upper eight lanes to its lower ones.
#define SUM16 \
	VEXTRACTF32X8 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	SUM8

// SUM8X4 is SUM8 for four keys' dot products at once (attnRowScores4AVX2,
// halfScores4AVX2): key i's 16-float chunk halves in Y(2i) and Y(2i+1)
// are added, the 128-bit lanes paired across keys and added as SUM8 adds a
// key's, and two horizontal adds finish SUM8 for all four; their 4-float
// tail groups (X8-X11, zero without a tail) reduce in the same pairs and
// are added last, as dot adds them. X1 = [A B C D], each with one dot's
// bits; Y0-Y7 and X8-X11 are clobbered.
#define SUM8X4 \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y5, Y4, Y4; \
	VADDPS Y7, Y6, Y6; \
	VPERM2F128 $0x20, Y2, Y0, Y1; \
	VPERM2F128 $0x31, Y2, Y0, Y3; \
	VADDPS Y3, Y1, Y1; \
	VPERM2F128 $0x20, Y6, Y4, Y5; \
	VPERM2F128 $0x31, Y6, Y4, Y7; \
	VADDPS Y7, Y5, Y5; \
	VHADDPS Y5, Y1, Y1; \
	VHADDPS Y1, Y1, Y1; \
	VEXTRACTF128 $1, Y1, X3; \
	VUNPCKLPS X3, X1, X1; \
	VHADDPS X9, X8, X8; \
	VHADDPS X11, X10, X10; \
	VHADDPS X10, X8, X8; \
	VADDPS X8, X1, X1
