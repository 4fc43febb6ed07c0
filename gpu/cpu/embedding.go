package cpu

import "github.com/corl-project/corl/gpu"

// EmbeddingForward implements gpu.Backend.
// ids, pos (N), wte (V, C), wpe (maxT, C) or nil -> out (N, C).
func (be *Backend) EmbeddingForward(out, wte, wpe gpu.Buffer, ids, pos []int32, N, C int) {
	o, te, pe := Data(out), Data(wte), Data(wpe)
	V := len(te) / C
	be.parallelFor(N, 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			id := int(ids[i])
			if id < 0 || id >= V {
				panic("gpu: token id out of vocabulary range")
			}
			row := o[i*C : (i+1)*C]
			copy(row, te[id*C:(id+1)*C])
			if pe != nil {
				p := pe[int(pos[i])*C : (int(pos[i])+1)*C]
				for c := range row {
					row[c] += p[c]
				}
			}
		}
	})
}

// EmbeddingBackward implements gpu.Backend. Work is split over channels, and
// every goroutine visits the tokens in order, so repeated ids and positions
// accumulate in a fixed order.
func (be *Backend) EmbeddingBackward(dwte, dwpe, dout gpu.Buffer, ids, pos []int32, N, C int) {
	dte, dpe, d := Data(dwte), Data(dwpe), Data(dout)
	be.parallelFor(C, 32, func(lo, hi int) {
		for i := 0; i < N; i++ {
			src := d[i*C+lo : i*C+hi]
			if dte != nil {
				dst := dte[int(ids[i])*C+lo : int(ids[i])*C+hi]
				for c, v := range src {
					dst[c] += v
				}
			}
			if dpe != nil {
				p := int(pos[i])
				dst := dpe[p*C+lo : p*C+hi]
				for c, v := range src {
					dst[c] += v
				}
			}
		}
	})
}
