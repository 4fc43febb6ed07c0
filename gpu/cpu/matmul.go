package cpu

import "github.com/corl-project/corl/gpu"

// MatMulForward implements gpu.Backend.
// inp (N, C), w (OC, C), bias (OC) or nil -> out (N, OC) = inp @ w^T + bias.
func (be *Backend) MatMulForward(out, inp, w, bias gpu.Buffer, N, C, OC int) {
	o, x, wd, bd := Data(out), Data(inp), Data(w), Data(bias)
	checkLen(o, N*OC, "matmul out")
	checkLen(x, N*C, "matmul inp")
	checkLen(wd, OC*C, "matmul w")
	be.matmulFLOPs.Add(2 * int64(N) * int64(C) * int64(OC))
	if pre, act := be.frozenPack(wd, C, OC); pre != nil {
		if act {
			x = be.roundedBF16(x[:N*C])
		}
		gemmOn(be.parallelWorkers, be.threads, be.pool, pre, false, true, N, OC, C, x, C, wd, C, o, OC, false)
	} else {
		be.gemm(false, true, N, OC, C, x, C, wd, C, o, OC, false)
	}
	if bd != nil {
		checkLen(bd, OC, "matmul bias")
		be.parallelFor(N, 16, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := o[i*OC : (i+1)*OC]
				for j := addVec(row, row, bd[:OC]); j < OC; j++ {
					row[j] += bd[j]
				}
			}
		})
	}
}

// MatMulBackward implements gpu.Backend.
// dout (N, OC) -> dinp (N, C) += dout @ w; dw (OC, C) += dout^T @ inp; dbias += colsum(dout).
// Over a weight frozen for bfloat16 compute (gpu.BF16Compute) the two
// products read dout, w and inp rounded to bfloat16 (copies): the float32
// GEMM of the rounded operands, exact products and float32 sums, so bit
// for bit the float32 backward of the rounded values.
func (be *Backend) MatMulBackward(dinp, dw, dbias, dout, inp, w gpu.Buffer, N, C, OC int) {
	d := Data(dout)
	checkLen(d, N*OC, "matmul dout")
	dm := d
	bf := (dinp != nil || dw != nil) && be.frozenAct(Data(w))
	if bf {
		dm = be.roundedBF16(d[:N*OC])
	}
	if dinp != nil {
		be.matmulFLOPs.Add(2 * int64(N) * int64(C) * int64(OC))
		wd := Data(w)
		if bf {
			wd = be.roundedBF16(wd[:OC*C])
		}
		be.gemm(false, false, N, C, OC, dm, OC, wd, C, Data(dinp), C, true)
	}
	if dw != nil {
		be.matmulFLOPs.Add(2 * int64(N) * int64(C) * int64(OC))
		x := Data(inp)
		if bf {
			x = be.roundedBF16(x[:N*C])
		}
		be.gemm(true, false, OC, C, N, dm, OC, x, C, Data(dw), C, true)
	}
	if dbias != nil {
		be.colSums(Data(dbias), d, N, OC)
	}
}

// colSums adds the column sums of x (N, M) to dst (M). Each column range is
// owned by one goroutine and summed in row order, so it is thread independent.
func (be *Backend) colSums(dst, x []float32, N, M int) {
	be.parallelFor(M, 64, func(lo, hi int) {
		for i := 0; i < N; i++ {
			row := x[i*M+lo : i*M+hi]
			acc := dst[lo:hi]
			for j, v := range row {
				acc[j] += v
			}
		}
	})
}

func checkLen(s []float32, n int, what string) {
	if len(s) < n {
		panic("gpu: buffer too small for " + what)
	}
}
