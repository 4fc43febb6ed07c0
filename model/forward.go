package model

import (
	"fmt"
	"math"
	"os"

	"github.com/corl-project/corl/gpu"
)

// activations holds what the forward pass saves for backward, for one (B, T),
// plus the gradient scratch the backward pass needs.
type activations struct {
	B, T         int
	res          []gpu.Buffer // (N, C) residual stream entering each layer, and the final one
	res2         []gpu.Buffer // (N, C) after attention's residual add
	ln1, ln2     []gpu.Buffer // (N, C) normalised inputs
	mean1, rstd1 []gpu.Buffer // (N) norm statistics (mean unused by RMSNorm)
	mean2, rstd2 []gpu.Buffer
	q, k, v      []gpu.Buffer // (N, NH*HS), (N, NKV*HS) after RoPE
	att          []gpu.Buffer // (B, NH, T, T); tiled attention: lse (B, NH, T)
	flash        bool         // attention through gpu.FlashAttention
	// recompute: every layer's entries below res are one layer's buffers,
	// refilled by layerForward before the backward differentiates a layer.
	recompute             bool
	logitRows             int          // rows of logits held at once (B*T: all of them)
	attOut                []gpu.Buffer // (N, NH*HS)
	fc                    []gpu.Buffer // gpt2 (N, H) pre-GELU; llama (N, 2H) gate|up
	act                   []gpu.Buffer // (N, H) after GELU / SwiGLU
	lnf, meanf, rstdf     gpu.Buffer
	logits                gpu.Buffer // (N, V); overwritten by dlogits in backward
	logp, stats           gpu.Buffer // (N), (N, 2)
	dres, dln, dattOut    gpu.Buffer
	dq, dk, dv, dfc, dact gpu.Buffer
	tmp                   gpu.Buffer // (N, C)
	inputs, targets       []int32
	pos                   []int32 // (N) position of each token: t
	temperature           float32 // the logits were divided by it before the log-softmax
}

func (p *Pass) activationsFor(B, T int) *activations {
	m := p.m
	rows := logitRows(B*T, m.LogitRows)
	if a := p.acts; a != nil && a.B == B && a.T == T && a.recompute == m.Recompute && a.logitRows == rows {
		return a
	}
	c := m.Cfg
	a := &activations{B: B, T: T, pos: make([]int32, B*T), flash: c.tiledOn(p.be), recompute: m.Recompute, logitRows: rows}
	for i := range a.pos {
		a.pos[i] = int32(i % T)
	}
	// Every buffer is a view of one arena, kept from call to call and
	// regrown only when a batch needs more: an update's micro-batches
	// differ in length, and allocating (and zeroing) their activations
	// anew each time cost a tenth of an update. Every operation writes
	// all of its outputs and Backward zeroes what it accumulates into, so
	// a view's stale contents are never read. carve lays the buffers out
	// with take; run once to measure (take returns nil), then to cut.
	total := a.carve(c, func(int) gpu.Buffer { return nil })
	if p.arena == nil || p.arena.Len() < total {
		if p.arena != nil {
			m.be.Free(p.arena)
		}
		p.arena = m.be.Alloc(total + total/4) // room for somewhat longer batches
	}
	off := 0
	a.carve(c, func(n int) gpu.Buffer {
		b := p.arena.Slice(off, n)
		off += n
		return b
	})
	p.acts = a
	return a
}

// carve lays out the activations of a (B, T) batch with take and returns
// the floats they need.
func (a *activations) carve(c Config, take func(n int) gpu.Buffer) int {
	B, T := a.B, a.T
	N, C, L := B*T, c.Dim, c.Layers
	QD, KVD, H := c.Heads*c.HeadSize(), c.KVHeads*c.HeadSize(), c.Hidden
	fcW := H
	if c.Family == Llama {
		fcW = 2 * H
	}
	total := 0
	one := func(n int) gpu.Buffer { total += n; return take(n) }
	each := func(n, size int) []gpu.Buffer {
		s := make([]gpu.Buffer, n)
		for i := range s {
			s[i] = one(size)
		}
		return s
	}
	// many is a buffer per layer, or one that every layer shares when
	// the backward recomputes each layer's.
	many := func(n, size int) []gpu.Buffer {
		if !a.recompute {
			return each(n, size)
		}
		b, s := one(size), make([]gpu.Buffer, n)
		for i := range s {
			s[i] = b
		}
		return s
	}
	a.res, a.res2 = each(L+1, N*C), many(L, N*C)
	a.ln1, a.ln2 = many(L, N*C), many(L, N*C)
	a.mean1, a.rstd1, a.mean2, a.rstd2 = many(L, N), many(L, N), many(L, N), many(L, N)
	a.q, a.k, a.v = many(L, N*QD), many(L, N*KVD), many(L, N*KVD)
	if a.flash {
		a.att = many(L, B*c.Heads*T)
	} else {
		a.att = many(L, B*c.Heads*T*T)
	}
	a.attOut = many(L, N*QD)
	a.fc, a.act = many(L, N*fcW), many(L, N*H)
	a.lnf, a.meanf, a.rstdf = one(N*C), one(N), one(N)
	a.logits, a.logp, a.stats = one(a.logitRows*c.Vocab), one(N), one(2*N)
	a.dres, a.dln, a.dattOut, a.tmp = one(N*C), one(N*C), one(N*QD), one(N*C)
	a.dq, a.dk, a.dv = one(N*QD), one(N*KVD), one(N*KVD)
	a.dfc, a.dact = one(N*fcW), one(N*H)
	return total
}

// ActivationFloats is the float32 values one forward and backward pass over
// a (B, T) batch keeps (Pass's arena holds a quarter more, for somewhat
// longer batches); tiled: attention through gpu.FlashAttention, which keeps
// a log-sum-exp per query where the other keeps T probabilities;
// recompute: Model.Recompute, one layer's activations and the residual
// stream entering each; rows: Model.LogitRows (0: every token's logits).
func (c Config) ActivationFloats(B, T int, tiled, recompute bool, rows int) int {
	a := &activations{B: B, T: T, flash: tiled, recompute: recompute, logitRows: logitRows(B*T, rows)}
	return a.carve(c, func(int) gpu.Buffer { return nil })
}

// logitRows is the rows of logits a pass of N tokens holds at once under
// Model.LogitRows rows.
func logitRows(N, rows int) int {
	if rows <= 0 || rows > N {
		return N
	}
	return rows
}

// UntiledAttention, when set, keeps training on AttentionForward's stored
// probabilities on every backend (CORL_TILED_ATTENTION=off).
var UntiledAttention = os.Getenv("CORL_TILED_ATTENTION") == "off"

// tiledOn reports whether training on be computes attention in tiles: be
// has gpu.FlashAttention and the head size is within its limit.
func (c Config) tiledOn(be gpu.Backend) bool {
	_, ok := be.(gpu.FlashAttention)
	return ok && !UntiledAttention && c.HeadSize() <= gpu.FlashMaxHead
}

func (m *Model) checkTokens(name string, ids []int32, n int) error {
	if len(ids) != n {
		return fmt.Errorf("%s: got %d token ids, want B*T = %d", name, len(ids), n)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= m.Cfg.Vocab {
			return fmt.Errorf("%s[%d]: token id %d outside the vocabulary [0, %d)", name, i, id, m.Cfg.Vocab)
		}
	}
	return nil
}

// normOn applies the family's normalisation on be (the model's backend or
// one of its parts).
func (m *Model) normOn(be gpu.Backend, out, mean, rstd, inp gpu.Buffer, w, b int, N int) {
	if m.Cfg.Family == GPT2 {
		be.LayerNormForward(out, mean, rstd, inp, m.view(m.params, w), m.view(m.params, b), N, m.Cfg.Dim, m.Cfg.NormEps)
	} else {
		be.RMSNormForward(out, rstd, inp, m.view(m.params, w), N, m.Cfg.Dim, m.Cfg.NormEps)
	}
}

// normGrad is where a norm's weight (or bias) gradient i goes: its
// gradient, or with adapters (norms frozen) a discarded tail of the pass's
// gradient buffer, since the norm kernels always write one.
func (p *Pass) normGrad(i int) gpu.Buffer {
	m := p.m
	if i < 0 {
		return nil
	}
	if m.lora != nil {
		return p.grads.Slice(m.lora.total, m.Cfg.Dim)
	}
	return m.view(p.grads, i)
}

func (p *Pass) normBackward(dinp, dout, inp, mean, rstd gpu.Buffer, w, b int, N int) {
	m := p.m
	if m.Cfg.Family == GPT2 {
		p.be.LayerNormBackward(dinp, p.normGrad(w), p.normGrad(b), dout, inp, m.view(m.params, w), mean, rstd, N, m.Cfg.Dim)
	} else {
		p.be.RMSNormBackward(dinp, p.normGrad(w), dout, inp, m.view(m.params, w), rstd, N, m.Cfg.Dim)
	}
}

// Forward runs the model over inputs (B*T token ids) and returns, for every
// position, the log-probability of the matching target token (B*T). With
// withStats it also returns per-token [entropy, KL(uniform || p)] pairs.
// Activations are kept for Backward.
func (m *Model) Forward(inputs, targets []int32, B, T int, withStats bool) (logp []float32, stats []float32, err error) {
	return m.ForwardAt(inputs, targets, B, T, 1, withStats)
}

// ForwardAt is Forward under a sampling temperature: the logits are divided
// by it before the log-softmax (as TRL does), so log-probabilities, entropy
// and self-certainty are those of the distribution samples were drawn from,
// and Backward differentiates through the division.
func (m *Model) ForwardAt(inputs, targets []int32, B, T int, temperature float32, withStats bool) (logp []float32, stats []float32, err error) {
	return m.own.ForwardAt(inputs, targets, B, T, temperature, withStats)
}

// ForwardAt is Model.ForwardAt on p: its backend, its activations.
func (p *Pass) ForwardAt(inputs, targets []int32, B, T int, temperature float32, withStats bool) (logp []float32, stats []float32, err error) {
	m := p.m
	c, be := m.Cfg, p.be
	N := B * T
	if B <= 0 || T <= 0 || T > c.MaxSeq {
		return nil, nil, fmt.Errorf("forward: batch %d x %d outside 1..%d positions", B, T, c.MaxSeq)
	}
	if !(temperature > 0) || math.IsInf(float64(temperature), 0) {
		return nil, nil, fmt.Errorf("forward: temperature %v must be positive and finite", temperature)
	}
	if err := m.checkTokens("inputs", inputs, N); err != nil {
		return nil, nil, err
	}
	if err := m.checkTokens("targets", targets, N); err != nil {
		return nil, nil, err
	}
	a := p.activationsFor(B, T)
	a.inputs, a.targets = inputs, targets
	C, HS := c.Dim, c.HeadSize()
	lo := m.lo
	be.EmbeddingForward(a.res[0], m.view(m.params, lo.wte), m.view(m.params, lo.wpe), inputs, a.pos, N, C)
	shape := gpu.AttnShape{B: B, Tq: T, Tk: T, Tcap: T, NH: c.Heads, NKV: c.KVHeads, HS: HS}
	for l := range lo.layers {
		p.layerForward(a, l, shape, true)
	}
	m.normOn(be, a.lnf, a.meanf, a.rstdf, a.res[c.Layers], lo.normfW, lo.normfB, N)
	a.temperature = temperature
	for r := 0; r < N; r += a.logitRows {
		n := min(a.logitRows, N-r)
		logits := p.headLogits(a, r, n)
		var st gpu.Buffer
		if withStats {
			st = a.stats.Slice(2*r, 2*n)
		}
		be.TokenLogProbs(a.logp.Slice(r, n), st, logits, targets[r:r+n], n, c.Vocab)
	}
	logp = make([]float32, N)
	be.Download(logp, a.logp)
	if withStats {
		stats = make([]float32, 2*N)
		be.Download(stats, a.stats)
	}
	if err := be.Sync(); err != nil {
		return nil, nil, fmt.Errorf("forward: %w", err)
	}
	return logp, stats, nil
}

// headLogits computes the logits of a's tokens r..r+n (divided by the
// temperature) into the first n rows of a.logits, and returns them.
func (p *Pass) headLogits(a *activations, r, n int) gpu.Buffer {
	m, be := p.m, p.be
	C, V := m.Cfg.Dim, m.Cfg.Vocab
	logits := a.logits.Slice(0, n*V)
	be.MatMulForward(logits, a.lnf.Slice(r*C, n*C), m.view(m.params, m.lo.lmHead), nil, n, C, V)
	if a.temperature != 1 {
		be.Scale(logits, n*V, 1/a.temperature)
	}
	return logits
}

// layerForward runs layer l of a's pass from the residual stream entering
// it, a.res[l], into the layer's activations; with next, also the residual
// stream leaving it, a.res[l+1] (the backward's recompute has it already).
func (p *Pass) layerForward(a *activations, l int, shape gpu.AttnShape, next bool) {
	m, be := p.m, p.be
	c := m.Cfg
	N, C, H := a.B*a.T, c.Dim, c.Hidden
	QD, KVD := c.Heads*c.HeadSize(), c.KVHeads*c.HeadSize()
	lp := m.lo.layers[l]
	P := func(i int) gpu.Buffer { return m.view(m.params, i) }
	m.normOn(be, a.ln1[l], a.mean1[l], a.rstd1[l], a.res[l], lp.norm1w, lp.norm1b, N)
	be.MatMulForward(a.q[l], a.ln1[l], P(lp.wq), P(lp.bq), N, C, QD)
	be.MatMulForward(a.k[l], a.ln1[l], P(lp.wk), P(lp.bk), N, C, KVD)
	be.MatMulForward(a.v[l], a.ln1[l], P(lp.wv), P(lp.bv), N, C, KVD)
	p.loraForward(a.q[l], a.ln1[l], l, loraQ, N)
	p.loraForward(a.k[l], a.ln1[l], l, loraK, N)
	p.loraForward(a.v[l], a.ln1[l], l, loraV, N)
	if c.Family == Llama {
		m.ropeOn(be, a.q[l], a.pos, N, c.Heads, true)
		m.ropeOn(be, a.k[l], a.pos, N, c.KVHeads, true)
	}
	if a.flash {
		be.(gpu.FlashAttention).FlashAttentionForward(a.attOut[l], a.att[l], a.q[l], a.k[l], a.v[l], shape)
	} else {
		be.AttentionForward(a.attOut[l], a.att[l], a.q[l], a.k[l], a.v[l], shape)
	}
	be.MatMulForward(a.tmp, a.attOut[l], P(lp.wo), P(lp.bo), N, QD, C)
	p.loraForward(a.tmp, a.attOut[l], l, loraO, N)
	be.Add(a.res2[l], a.res[l], a.tmp, N*C)
	m.normOn(be, a.ln2[l], a.mean2[l], a.rstd2[l], a.res2[l], lp.norm2w, lp.norm2b, N)
	if c.Family == GPT2 {
		be.MatMulForward(a.fc[l], a.ln2[l], P(lp.wfc), P(lp.bfc), N, C, H)
		be.GELUForward(a.act[l], a.fc[l], N*H)
	} else {
		be.MatMulForward(a.fc[l], a.ln2[l], P(lp.wfc), nil, N, C, 2*H)
		p.loraForward(a.fc[l], a.ln2[l], l, loraGate, N)
		p.loraForward(a.fc[l], a.ln2[l], l, loraUp, N)
		be.SwiGLUForward(a.act[l], a.fc[l], N, H)
	}
	if next {
		be.MatMulForward(a.tmp, a.act[l], P(lp.wproj), P(lp.bproj), N, H, C)
		p.loraForward(a.tmp, a.act[l], l, loraDown, N)
		be.Add(a.res[l+1], a.res2[l], a.tmp, N*C)
	}
}

// Backward accumulates into the gradients the effect of dlogp (B*T), the
// derivative of the loss with respect to each target log-probability returned
// by the last Forward. It consumes the logits of that pass.
func (m *Model) Backward(dlogp []float32) error { return m.own.Backward(dlogp) }

// Backward is Model.Backward on p: it differentiates p's last forward pass
// and accumulates into p's gradients.
func (p *Pass) Backward(dlogp []float32) error {
	m, a := p.m, p.acts
	if a == nil || a.inputs == nil {
		return fmt.Errorf("backward: no forward pass to differentiate")
	}
	c, be, lo := m.Cfg, p.be, m.lo
	B, T := a.B, a.T
	N, C, HS, H := B*T, c.Dim, c.HeadSize(), c.Hidden
	QD, KVD := c.Heads*HS, c.KVHeads*HS
	if len(dlogp) != N {
		return fmt.Errorf("backward: got %d token weights, want %d", len(dlogp), N)
	}
	G := func(i int) gpu.Buffer { // nil: a frozen weight's gradient is not computed
		if m.lora != nil {
			return nil
		}
		return m.view(p.grads, i)
	}
	P := func(i int) gpu.Buffer { return m.view(m.params, i) }
	be.Zero(a.dln)
	for r := 0; r < N; r += a.logitRows {
		n := min(a.logitRows, N-r)
		logits := a.logits.Slice(0, n*c.Vocab)
		if a.logitRows < N { // the forward's are another block's: compute these again
			logits = p.headLogits(a, r, n)
		}
		dlogits := logits // the logits are dead after this: reuse their memory
		be.TokenLogProbsBackward(dlogits, logits, a.targets[r:r+n], dlogp[r:r+n], n, c.Vocab)
		if a.temperature != 1 { // logits/T: d/dlogits = d/d(logits/T) / T
			be.Scale(dlogits, n*c.Vocab, 1/a.temperature)
		}
		be.MatMulBackward(a.dln.Slice(r*C, n*C), G(lo.lmHead), nil, dlogits, a.lnf.Slice(r*C, n*C), P(lo.lmHead), n, C, c.Vocab)
	}
	be.Zero(a.dres)
	p.normBackward(a.dres, a.dln, a.res[c.Layers], a.meanf, a.rstdf, lo.normfW, lo.normfB, N)
	shape := gpu.AttnShape{B: B, Tq: T, Tk: T, Tcap: T, NH: c.Heads, NKV: c.KVHeads, HS: HS}
	for l := c.Layers - 1; l >= 0; l-- {
		lp := lo.layers[l]
		if a.recompute && l < c.Layers-1 { // the last layer's are the forward's own
			p.layerForward(a, l, shape, false)
		}
		// MLP: res[l+1] = res2 + proj(act(fc(norm2(res2)))); dres carries d res2 too.
		be.Zero(a.dact)
		be.MatMulBackward(a.dact, G(lp.wproj), G(lp.bproj), a.dres, a.act[l], P(lp.wproj), N, H, C)
		p.loraBackward(a.dact, a.dres, a.act[l], l, loraDown, N)
		be.Zero(a.dfc)
		if c.Family == GPT2 {
			be.GELUBackward(a.dfc, a.dact, a.fc[l], N*H)
			be.Zero(a.dln)
			be.MatMulBackward(a.dln, G(lp.wfc), G(lp.bfc), a.dfc, a.ln2[l], P(lp.wfc), N, C, H)
		} else {
			be.SwiGLUBackward(a.dfc, a.dact, a.fc[l], N, H)
			be.Zero(a.dln)
			be.MatMulBackward(a.dln, G(lp.wfc), nil, a.dfc, a.ln2[l], P(lp.wfc), N, C, 2*H)
			p.loraBackward(a.dln, a.dfc, a.ln2[l], l, loraGate, N)
			p.loraBackward(a.dln, a.dfc, a.ln2[l], l, loraUp, N)
		}
		p.normBackward(a.dres, a.dln, a.res2[l], a.mean2[l], a.rstd2[l], lp.norm2w, lp.norm2b, N)
		// Attention: res2 = res + o(attn(q, k, v)).
		be.Zero(a.dattOut)
		be.MatMulBackward(a.dattOut, G(lp.wo), G(lp.bo), a.dres, a.attOut[l], P(lp.wo), N, QD, C)
		p.loraBackward(a.dattOut, a.dres, a.attOut[l], l, loraO, N)
		be.Zero(a.dq)
		be.Zero(a.dk)
		be.Zero(a.dv)
		if a.flash {
			be.(gpu.FlashAttention).FlashAttentionBackward(a.dq, a.dk, a.dv, a.dattOut, a.attOut[l], a.att[l], a.q[l], a.k[l], a.v[l], shape)
		} else {
			be.AttentionBackward(a.dq, a.dk, a.dv, a.dattOut, a.att[l], a.q[l], a.k[l], a.v[l], shape)
		}
		if c.Family == Llama {
			m.ropeOn(be, a.dq, a.pos, N, c.Heads, false)
			m.ropeOn(be, a.dk, a.pos, N, c.KVHeads, false)
		}
		be.Zero(a.dln)
		be.MatMulBackward(a.dln, G(lp.wq), G(lp.bq), a.dq, a.ln1[l], P(lp.wq), N, C, QD)
		be.MatMulBackward(a.dln, G(lp.wk), G(lp.bk), a.dk, a.ln1[l], P(lp.wk), N, C, KVD)
		be.MatMulBackward(a.dln, G(lp.wv), G(lp.bv), a.dv, a.ln1[l], P(lp.wv), N, C, KVD)
		p.loraBackward(a.dln, a.dq, a.ln1[l], l, loraQ, N)
		p.loraBackward(a.dln, a.dk, a.ln1[l], l, loraK, N)
		p.loraBackward(a.dln, a.dv, a.ln1[l], l, loraV, N)
		p.normBackward(a.dres, a.dln, a.res[l], a.mean1[l], a.rstd1[l], lp.norm1w, lp.norm1b, N)
	}
	if m.lora == nil { // with adapters the embeddings are frozen
		be.EmbeddingBackward(G(lo.wte), G(lo.wpe), a.dres, a.inputs, a.pos, N, C)
	}
	a.inputs = nil // the logits were consumed
	if err := be.Sync(); err != nil {
		return fmt.Errorf("backward: %w", err)
	}
	return nil
}
