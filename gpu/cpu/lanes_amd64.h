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
