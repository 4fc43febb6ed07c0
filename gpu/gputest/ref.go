package gputest

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// float64 reference implementations of every forward op: straightforward loops,
// written from the definitions in gpu.Backend's documentation.

func refEmbedding(wte, wpe []float64, ids, pos []int32, N, C int) []float64 {
	out := make([]float64, N*C)
	for i := 0; i < N; i++ {
		for c := 0; c < C; c++ {
			out[i*C+c] = wte[int(ids[i])*C+c]
			if wpe != nil {
				out[i*C+c] += wpe[int(pos[i])*C+c]
			}
		}
	}
	return out
}

func refMatMul(inp, w, bias []float64, N, C, OC int) []float64 {
	out := make([]float64, N*OC)
	for i := 0; i < N; i++ {
		for o := 0; o < OC; o++ {
			s := 0.0
			if bias != nil {
				s = bias[o]
			}
			for c := 0; c < C; c++ {
				s += inp[i*C+c] * w[o*C+c]
			}
			out[i*OC+o] = s
		}
	}
	return out
}

func refRMSNorm(inp, w []float64, N, C int, eps float64) []float64 {
	out := make([]float64, N*C)
	for i := 0; i < N; i++ {
		ss := 0.0
		for c := 0; c < C; c++ {
			ss += inp[i*C+c] * inp[i*C+c]
		}
		r := 1 / math.Sqrt(ss/float64(C)+eps)
		for c := 0; c < C; c++ {
			out[i*C+c] = inp[i*C+c] * r * w[c]
		}
	}
	return out
}

func refLayerNorm(inp, w, b []float64, N, C int, eps float64) []float64 {
	out := make([]float64, N*C)
	for i := 0; i < N; i++ {
		m := 0.0
		for c := 0; c < C; c++ {
			m += inp[i*C+c]
		}
		m /= float64(C)
		v := 0.0
		for c := 0; c < C; c++ {
			v += (inp[i*C+c] - m) * (inp[i*C+c] - m)
		}
		r := 1 / math.Sqrt(v/float64(C)+eps)
		for c := 0; c < C; c++ {
			out[i*C+c] = (inp[i*C+c]-m)*r*w[c] + b[c]
		}
	}
	return out
}

func refRoPE(x []float64, pos []int32, N, H, HS int, theta float64) []float64 {
	out := append([]float64(nil), x...)
	half := HS / 2
	for n := 0; n < N; n++ {
		{
			for h := 0; h < H; h++ {
				base := (n*H + h) * HS
				for i := 0; i < half; i++ {
					ang := float64(pos[n]) * math.Pow(theta, -2*float64(i)/float64(HS))
					c, s := math.Cos(ang), math.Sin(ang)
					x1, x2 := x[base+i], x[base+i+half]
					out[base+i] = x1*c - x2*s
					out[base+i+half] = x1*s + x2*c
				}
			}
		}
	}
	return out
}

// refAttnScores is query tq of row b, head h's scaled scores over its
// causal keys (keys 0..Keys(b)-Tq+tq) and their maximum, in float64.
func refAttnScores(q, k []float64, s gpu.AttnShape, b, h, tq int) ([]float64, float64) {
	C, CKV, kvo := s.NH*s.HS, s.NKV*s.HS, (h/(s.NH/s.NKV))*s.HS
	scale := 1 / math.Sqrt(float64(s.HS))
	p := make([]float64, s.Keys(b)-s.Tq+tq+1)
	mx := math.Inf(-1)
	for tk := range p {
		for i := 0; i < s.HS; i++ {
			p[tk] += q[(b*s.Tq+tq)*C+h*s.HS+i] * k[(b*s.Tcap+tk)*CKV+kvo+i]
		}
		p[tk] *= scale
		mx = math.Max(mx, p[tk])
	}
	return p, mx
}

// refAttnProbs is the softmax of refAttnScores.
func refAttnProbs(q, k []float64, s gpu.AttnShape, b, h, tq int) []float64 {
	p, mx := refAttnScores(q, k, s, b, h, tq)
	var sum float64
	for tk := range p {
		p[tk] = math.Exp(p[tk] - mx)
		sum += p[tk]
	}
	for tk := range p {
		p[tk] /= sum
	}
	return p
}

func refAttention(q, k, v []float64, s gpu.AttnShape) []float64 {
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	out := make([]float64, s.B*s.Tq*C)
	for b := 0; b < s.B; b++ {
		for h := 0; h < s.NH; h++ {
			kvo := (h / group) * s.HS
			for tq := 0; tq < s.Tq; tq++ {
				for tk, p := range refAttnProbs(q, k, s, b, h, tq) {
					for i := 0; i < s.HS; i++ {
						out[(b*s.Tq+tq)*C+h*s.HS+i] += p * v[(b*s.Tcap+tk)*CKV+kvo+i]
					}
				}
			}
		}
	}
	return out
}

func refGELU(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	return out
}

func refSwiGLU(gu []float64, N, H int) []float64 {
	out := make([]float64, N*H)
	for i := 0; i < N; i++ {
		for j := 0; j < H; j++ {
			g, u := gu[2*i*H+j], gu[(2*i+1)*H+j]
			out[i*H+j] = g / (1 + math.Exp(-g)) * u
		}
	}
	return out
}

func refLogSoftmax(x []float64, N, V int, temperature float64) []float64 {
	out := make([]float64, N*V)
	for i := 0; i < N; i++ {
		mx := math.Inf(-1)
		for j := 0; j < V; j++ {
			mx = math.Max(mx, x[i*V+j]/temperature)
		}
		s := 0.0
		for j := 0; j < V; j++ {
			s += math.Exp(x[i*V+j]/temperature - mx)
		}
		for j := 0; j < V; j++ {
			out[i*V+j] = x[i*V+j]/temperature - mx - math.Log(s)
		}
	}
	return out
}

func refSoftmax(x []float64, N, V int, temperature float64) []float64 {
	out := refLogSoftmax(x, N, V, temperature)
	for i := range out {
		out[i] = math.Exp(out[i])
	}
	return out
}

func refTokenLogProbs(logits []float64, targets []int32, N, V int) []float64 {
	ls := refLogSoftmax(logits, N, V, 1)
	out := make([]float64, N)
	for i := range out {
		out[i] = ls[i*V+int(targets[i])]
	}
	return out
}

// refTokenStats returns [entropy, KL(uniform || p)] per row.
func refTokenStats(logits []float64, N, V int) []float64 {
	ls := refLogSoftmax(logits, N, V, 1)
	out := make([]float64, 2*N)
	for i := 0; i < N; i++ {
		for j := 0; j < V; j++ {
			lp := ls[i*V+j]
			out[2*i] -= math.Exp(lp) * lp
			out[2*i+1] += (-math.Log(float64(V)) - lp) / float64(V)
		}
	}
	return out
}

// refMatMulBackward is the exact backward of refMatMul for dout (N, OC):
// dinp (N, C) = dout W, dw (OC, C) = dout^T inp, dbias (OC) = column sums.
// Used where finite differences over every input would be too slow.
func refMatMulBackward(dout, inp, w []float64, N, C, OC int) (dinp, dw, dbias []float64) {
	dinp, dw, dbias = make([]float64, N*C), make([]float64, OC*C), make([]float64, OC)
	for i := 0; i < N; i++ {
		for o := 0; o < OC; o++ {
			d := dout[i*OC+o]
			dbias[o] += d
			wr, ir := w[o*C:(o+1)*C], inp[i*C:(i+1)*C]
			dr, dwr := dinp[i*C:(i+1)*C], dw[o*C:(o+1)*C]
			for c := range wr {
				dr[c] += d * wr[c]
				dwr[c] += d * ir[c]
			}
		}
	}
	return dinp, dw, dbias
}

// refAttentionBackward is the exact backward of refAttention (causal, GQA)
// for dout (B, Tq, NH*HS): with p = softmax(scale q.k) per query,
// dv += p dout, ds = p (dout.v - sum p dout.v), dq += scale ds k,
// dk += scale ds q.
func refAttentionBackward(dout, q, k, v []float64, s gpu.AttnShape) (dq, dk, dv []float64) {
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	dq, dk, dv = make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
	scale := 1 / math.Sqrt(float64(s.HS))
	for b := 0; b < s.B; b++ {
		for h := 0; h < s.NH; h++ {
			kvo := (h / group) * s.HS
			for tq := 0; tq < s.Tq; tq++ {
				qo := (b*s.Tq+tq)*C + h*s.HS
				p := refAttnProbs(q, k, s, b, h, tq)
				dp := make([]float64, len(p))
				var pdp float64
				for tk := range p {
					ko := (b*s.Tcap+tk)*CKV + kvo
					for i := 0; i < s.HS; i++ {
						dv[ko+i] += p[tk] * dout[qo+i]
						dp[tk] += dout[qo+i] * v[ko+i]
					}
					pdp += p[tk] * dp[tk]
				}
				for tk := range p {
					ds := p[tk] * (dp[tk] - pdp) * scale
					ko := (b*s.Tcap+tk)*CKV + kvo
					for i := 0; i < s.HS; i++ {
						dq[qo+i] += ds * k[ko+i]
						dk[ko+i] += ds * q[qo+i]
					}
				}
			}
		}
	}
	return dq, dk, dv
}

// refLSE is each query's log-sum-exp of its scaled causal scores, (B, NH, Tq).
func refLSE(q, k []float64, s gpu.AttnShape) []float64 {
	out := make([]float64, s.B*s.NH*s.Tq)
	for b := 0; b < s.B; b++ {
		for h := 0; h < s.NH; h++ {
			for tq := 0; tq < s.Tq; tq++ {
				scores, mx := refAttnScores(q, k, s, b, h, tq)
				sum := 0.0
				for _, x := range scores {
					sum += math.Exp(x - mx)
				}
				out[(b*s.NH+h)*s.Tq+tq] = mx + math.Log(sum)
			}
		}
	}
	return out
}
