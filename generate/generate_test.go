package generate

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

func tinyModel(t testing.TB, family string) *model.Model {
	t.Helper()
	return tinyModelDim(t, family, 32)
}

// tinyModelDim is tinyModel of width dim (64: a head size the binary16
// cache's vector kernels take).
func tinyModelDim(t testing.TB, family string, dim int) *model.Model {
	t.Helper()
	cfg := model.Config{Family: family, Layers: 2, Dim: dim, Heads: 4, KVHeads: 2, Vocab: 257, MaxSeq: 64}
	if family == model.GPT2 {
		cfg.KVHeads = 0
	}
	m, err := model.New(cpu.New(2), cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Sharpen the random model a little so samples are not uniform noise.
	p := cpu.Data(m.Params())
	for i := range p {
		p[i] *= 8
	}
	return m
}

func requests(tok tokenizer.Tokenizer, temp float32) []Request {
	var reqs []Request
	for i, s := range []string{"1+1=", "hello", "a much longer prompt than the others", "x"} {
		ids, _ := tok.Encode(s)
		reqs = append(reqs, Request{Prompt: ids, Params: Params{MaxNewTokens: 6 + i, Temperature: temp, TopK: 50, TopP: 0.95, Seed: uint64(100 + i)}})
	}
	return reqs
}

// TestReproducibleAcrossBatching: a request's completion depends on its seed
// only: the same with 1 slot or 4, and in any order.
func TestReproducibleAcrossBatching(t *testing.T) {
	for _, family := range []string{model.GPT2, model.Llama} {
		tok := tokenizer.NewBytes()
		m := tinyModel(t, family)
		reqs := requests(tok, 1)
		a, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(reqs)
		if err != nil {
			t.Fatal(err)
		}
		b, err := (&Generator{Model: m, Tok: tok, Slots: 1}).Run(reqs)
		if err != nil {
			t.Fatal(err)
		}
		rev := []Request{reqs[3], reqs[2], reqs[1], reqs[0]}
		c, err := (&Generator{Model: m, Tok: tok, Slots: 3}).Run(rev)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			if !reflect.DeepEqual(a[i].Tokens, b[i].Tokens) || !reflect.DeepEqual(a[i].Tokens, c[3-i].Tokens) ||
				!reflect.DeepEqual(a[i].LogProbs, b[i].LogProbs) || !reflect.DeepEqual(a[i].LogProbs, c[3-i].LogProbs) {
				t.Fatalf("%s request %d: %v (4 slots), %v (1 slot), %v (reversed)", family, i, a[i].Tokens, b[i].Tokens, c[3-i].Tokens)
			}
			if len(a[i].LogProbs) != len(a[i].Tokens) {
				t.Fatalf("request %d: %d log-probs for %d tokens", i, len(a[i].LogProbs), len(a[i].Tokens))
			}
		}
		hot := reqs[2]
		hot.Temperature, hot.TopK, hot.TopP = 5, 0, 0 // flat enough that seeds matter
		e, _ := (&Generator{Model: m, Tok: tok}).Run([]Request{hot})
		hot.Seed++
		d, _ := (&Generator{Model: m, Tok: tok}).Run([]Request{hot})
		if reflect.DeepEqual(d[0].Tokens, e[0].Tokens) {
			t.Errorf("%s: another seed gave the same sample %v", family, d[0].Tokens)
		}
	}
}

// TestCacheMatchesRecompute: greedy decoding with the cache equals greedy
// decoding that recomputes the prefix every step, log-probs included.
func TestCacheMatchesRecompute(t *testing.T) {
	for _, family := range []string{model.GPT2, model.Llama} {
		tok := tokenizer.NewBytes()
		m := tinyModel(t, family)
		reqs := requests(tok, 0)
		g := &Generator{Model: m, Tok: tok, Slots: 2}
		a, err := g.Run(reqs)
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.RunWithoutCache(reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			if !reflect.DeepEqual(a[i].Tokens, b[i].Tokens) || a[i].Text != b[i].Text {
				t.Fatalf("%s request %d: cached %v, recomputed %v", family, i, a[i].Tokens, b[i].Tokens)
			}
			for j := range a[i].LogProbs {
				if math.Abs(float64(a[i].LogProbs[j]-b[i].LogProbs[j])) > 1e-4 {
					t.Fatalf("%s request %d token %d: log-prob %v cached, %v recomputed", family, i, j, a[i].LogProbs[j], b[i].LogProbs[j])
				}
			}
		}
	}
}

// constModel returns a gpt2 model whose next token is always tok (greedy):
// ln_f scales to zero and its bias points at tok's embedding.
func constModel(t *testing.T, tok int) *model.Model {
	m, err := model.New(cpu.New(1), model.Config{Family: model.GPT2, Layers: 1, Dim: 8, Heads: 2, Vocab: 257, MaxSeq: 32}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _ := m.Tensor("ln_f.weight")
	b, _, _ := m.Tensor("ln_f.bias")
	wte, _, _ := m.Tensor("wte.weight")
	clear(cpu.Data(w))
	clear(cpu.Data(b))
	cpu.Data(b)[0] = 1000 // the final hidden state is 1000*e0 whatever the input
	for j := 0; j < 257; j++ {
		cpu.Data(wte)[j*8] = 0
	}
	cpu.Data(wte)[tok*8] = 1 // so only tok's logit is large
	return m
}

func TestFinishReasons(t *testing.T) {
	tok := tokenizer.NewBytes()
	prompt, _ := tok.Encode("go")
	g := &Generator{Model: constModel(t, 'a'), Tok: tok}
	outs, err := g.Run([]Request{
		{Prompt: prompt, Params: Params{MaxNewTokens: 3}},
		{Prompt: prompt, Params: Params{MaxNewTokens: 10, Stop: []string{"aa"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Text != "aaa" || outs[0].Finish != "length" {
		t.Errorf("length: %+v", outs[0])
	}
	if outs[1].Text != "" || outs[1].Finish != "stop" || len(outs[1].Tokens) != 2 {
		t.Errorf("stop: %+v", outs[1])
	}
	g = &Generator{Model: constModel(t, int(tok.EOS())), Tok: tok}
	outs, _ = g.Run([]Request{{Prompt: prompt, Params: Params{MaxNewTokens: 5}}})
	if outs[0].Finish != "eos" || outs[0].Text != "" || len(outs[0].Tokens) != 1 {
		t.Errorf("eos: %+v", outs[0])
	}
	if _, err := g.Run([]Request{{Prompt: prompt, Params: Params{MaxNewTokens: 40}}}); err == nil {
		t.Error("a request longer than the model's positions was accepted")
	}
	// generation_config.json's stop tokens end a sequence as EOS does, in
	// both paths, unless the generator is told to use the tokenizer's alone.
	m := constModel(t, 'a')
	m.Generation.EOS = []int32{'b', 'a'}
	for _, only := range []bool{false, true} {
		g = &Generator{Model: m, Tok: tok, OnlyTokenizerEOS: only}
		cached, err := g.Run([]Request{{Prompt: prompt, Params: Params{MaxNewTokens: 4}}})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := g.RunWithoutCache([]Request{{Prompt: prompt, Params: Params{MaxNewTokens: 4}}})
		if err != nil {
			t.Fatal(err)
		}
		want := "eos"
		if only {
			want = "length"
		}
		for _, o := range []Output{cached[0], plain[0]} {
			if o.Finish != want {
				t.Errorf("OnlyTokenizerEOS %v: finished by %q, want %q (%+v)", only, o.Finish, want, o)
			}
		}
	}
}

// TestPhasesAddUp: Run adds its time to Phases, split between starting
// requests and decoding steps, no more than the call took and on top of
// what is there; a run whose requests all end at their first token has no
// decoding time; and keeping the account changes no output.
func TestPhasesAddUp(t *testing.T) {
	tok := tokenizer.NewBytes()
	m := tinyModel(t, model.Llama)
	want, err := (&Generator{Model: m, Tok: tok}).Run(requests(tok, 1))
	if err != nil {
		t.Fatal(err)
	}
	ph := &Phases{}
	g := &Generator{Model: m, Tok: tok, Phases: ph}
	var took time.Duration
	for i := 1; i <= 2; i++ {
		before := *ph
		start := time.Now()
		got, err := g.Run(requests(tok, 1))
		took += time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: outputs with Phases set differ from those without", i)
		}
		if ph.Prefill <= before.Prefill || ph.Decode <= before.Decode {
			t.Errorf("run %d: phases %+v after %+v; want both to grow", i, *ph, before)
		}
		if ph.Prefill+ph.Decode > took {
			t.Errorf("run %d: phases %+v add to more than the %v the runs took", i, *ph, took)
		}
	}
	prompt, _ := tok.Encode("go")
	ph = &Phases{}
	g = &Generator{Model: constModel(t, int(tok.EOS())), Tok: tok, Phases: ph}
	if _, err := g.Run([]Request{{Prompt: prompt, Params: Params{MaxNewTokens: 5}}, {Prompt: prompt, Params: Params{MaxNewTokens: 5}}}); err != nil {
		t.Fatal(err)
	}
	if ph.Decode != 0 || ph.Prefill <= 0 {
		t.Errorf("requests ended by their first token: phases %+v; want prefill time and no decoding", *ph)
	}
}

func TestSamplerDistribution(t *testing.T) {
	logits := []float32{2, 1, 0, -1}
	// log-probs are those of softmax(logits / T), before truncation.
	s := newSampler(Params{Temperature: 0.5, Seed: 1})
	tok, lp := s.next(logits)
	var z float64
	for _, x := range logits {
		z += math.Exp(float64(x) / 0.5)
	}
	if want := float64(logits[tok])/0.5 - math.Log(z); math.Abs(float64(lp)-want) > 1e-5 {
		t.Fatalf("log-prob %v, want %v", lp, want)
	}
	// Frequencies follow the tempered distribution.
	counts := make([]int, 4)
	s = newSampler(Params{Temperature: 1, Seed: 2})
	const n = 20000
	for i := 0; i < n; i++ {
		tk, _ := s.next(logits)
		counts[tk]++
	}
	z = 0
	for _, x := range logits {
		z += math.Exp(float64(x))
	}
	for i, c := range counts {
		p := math.Exp(float64(logits[i])) / z
		// 5 standard deviations of a binomial count.
		if math.Abs(float64(c)-n*p) > 5*math.Sqrt(n*p*(1-p)) {
			t.Errorf("token %d drawn %d times, expected %.0f", i, c, n*p)
		}
	}
	// top-k 2 and top-p 0.5 never leave their candidate sets.
	s = newSampler(Params{Temperature: 1, TopK: 2, Seed: 3})
	for i := 0; i < 1000; i++ {
		if tk, _ := s.next(logits); tk > 1 {
			t.Fatalf("top-k 2 drew token %d", tk)
		}
	}
	s = newSampler(Params{Temperature: 1, TopP: 0.5, Seed: 3}) // p(0) = 0.64 >= 0.5 alone
	for i := 0; i < 1000; i++ {
		if tk, _ := s.next(logits); tk != 0 {
			t.Fatalf("top-p 0.5 drew token %d", tk)
		}
	}
	if tk, _ := newSampler(Params{}).next(logits); tk != 0 {
		t.Fatalf("greedy picked %d", tk)
	}
}

// TestTruncatedSamplingFollowsTheRenormalisedDistribution: top-k and top-p
// draw from the most probable tokens (ties by id) with frequencies of the
// distribution renormalised over them, whatever the tokens' id order.
func TestTruncatedSamplingFollowsTheRenormalisedDistribution(t *testing.T) {
	logits := []float32{-1, 2, 0.5, 2, 1, -3, 0.9}
	// By probability: 1 and 3 (tied, 1 first), 4, 6, 2, 0, 5.
	p := make([]float64, len(logits))
	var z float64
	for i, x := range logits {
		p[i] = math.Exp(float64(x))
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	for _, c := range []struct {
		params Params
		set    []int
	}{
		{Params{Temperature: 1, TopK: 3}, []int{1, 3, 4}},
		{Params{Temperature: 1, TopK: 1}, []int{1}},
		{Params{Temperature: 1, TopP: 0.8}, nil},
	} {
		set := c.set
		if set == nil { // the smallest prefix of the order reaching TopP
			acc := 0.0
			for _, id := range []int{1, 3, 4, 6, 2, 0, 5} {
				set = append(set, id)
				if acc += p[id]; acc >= float64(c.params.TopP) {
					break
				}
			}
		}
		mass := 0.0
		in := map[int]bool{}
		for _, id := range set {
			mass += p[id]
			in[id] = true
		}
		c.params.Seed = 11
		s := newSampler(c.params)
		const n = 20000
		counts := make([]int, len(logits))
		for i := 0; i < n; i++ {
			tk, _ := s.next(logits)
			if !in[int(tk)] {
				t.Fatalf("%+v drew token %d outside %v", c.params, tk, set)
			}
			counts[tk]++
		}
		for _, id := range set {
			q := p[id] / mass
			if math.Abs(float64(counts[id])-n*q) > 5*math.Sqrt(n*q*(1-q))+1 {
				t.Errorf("%+v: token %d drawn %d times, expected %.0f", c.params, id, counts[id], n*q)
			}
		}
	}
}

// TestSharedPromptsMatchSeparateRuns: samples of one prompt share its
// prefill (copied cache rows); each must equal the same request run alone.
func TestSharedPromptsMatchSeparateRuns(t *testing.T) {
	for _, kv := range kvTypes(t) {
		testSharedPrompts(t, kv.m, kv.typ)
	}
}

// kvTypes are the cache types the generator tests run with, each on its
// model: float32 on tinyModel, binary16 on a width its kernels take.
func kvTypes(t *testing.T) []struct {
	typ model.KVType
	m   *model.Model
} {
	return []struct {
		typ model.KVType
		m   *model.Model
	}{{model.KVFloat32, tinyModel(t, model.Llama)}, {model.KVHalf, tinyModelDim(t, model.Llama, 64)}}
}

func testSharedPrompts(t *testing.T, m *model.Model, kv model.KVType) {
	tok := tokenizer.NewBytes()
	ids, _ := tok.Encode("shared prompt for every sample")
	other, _ := tok.Encode("another")
	var reqs []Request
	for k := 0; k < 6; k++ {
		p := ids
		if k == 3 {
			p = other // breaks the run of equal prompts once
		}
		reqs = append(reqs, Request{Prompt: p, Params: Params{MaxNewTokens: 5 + k, Temperature: 1, Seed: uint64(k)}})
	}
	together, err := (&Generator{Model: m, Tok: tok, Slots: 4, KV: kv}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		alone, err := (&Generator{Model: m, Tok: tok, KV: kv}).Run([]Request{r})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(alone[0].Tokens, together[i].Tokens) || !reflect.DeepEqual(alone[0].LogProbs, together[i].LogProbs) {
			t.Fatalf("%s cache, request %d: %v with a shared prefill, %v alone", kv, i, together[i].Tokens, alone[0].Tokens)
		}
	}
}

// TestStopStringIsNotKept: a completion ended by a stop string keeps only
// the tokens before it for training (Keep); one ended by EOS keeps EOS.
func TestStopStringIsNotKept(t *testing.T) {
	tok := tokenizer.NewBytes()
	g := &Generator{Tok: tok}
	script := func(text string, withEOS bool, stop ...string) Output {
		t.Helper()
		ids, _ := tok.Encode(text)
		if withEOS {
			ids = append(ids, tok.EOS())
		}
		req := Request{Params: Params{MaxNewTokens: 50, Stop: stop}}
		st := &slotState{s: newSampler(req.Params)}
		for i, id := range ids {
			logits := make([]float32, tok.VocabSize())
			logits[id] = 10 // greedy picks it
			if done := g.accept(st, logits, []int32{tok.EOS()}, req); done != (i == len(ids)-1) {
				t.Fatalf("%q: finished=%v at token %d of %d", text, done, i+1, len(ids))
			}
		}
		return st.out
	}
	o := script(" 5\nQ:", false, "\nQ:")
	if o.Finish != "stop" || o.Text != " 5" || o.Keep != 2 || tok.Decode(o.Tokens[:o.Keep]) != " 5" {
		t.Errorf("stop: %+v, kept %q", o, tok.Decode(o.Tokens[:o.Keep]))
	}
	o = script("\nQ:", false, "\nQ:")
	if o.Keep != 0 || len(o.Tokens) != 3 {
		t.Errorf("stop string first: keep %d of %d tokens, want 0 of 3", o.Keep, len(o.Tokens))
	}
	o = script(" 7.", true, "\nQ:")
	if o.Finish != "eos" || o.Keep != len(o.Tokens) || o.Tokens[o.Keep-1] != tok.EOS() {
		t.Errorf("eos: %+v: EOS must stay in the trained tokens", o)
	}
}

// TestWeightsChangedBetweenRunsAreSeen: a model's second generation (which
// reuses the first's KV cache, and whose weights the backend packs afresh)
// after its weights changed matches a fresh model with those weights.
func TestWeightsChangedBetweenRunsAreSeen(t *testing.T) {
	tok := tokenizer.NewBytes()
	reqs := requests(tok, 1)
	m := tinyModel(t, model.Llama)
	if _, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(reqs); err != nil {
		t.Fatal(err)
	}
	scale := func(m *model.Model) {
		for i, p := 0, cpu.Data(m.Params()); i < len(p); i++ {
			p[i] *= -1.5
		}
	}
	scale(m)
	got, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	fresh := tinyModel(t, model.Llama)
	scale(fresh)
	want, err := (&Generator{Model: fresh, Tok: tok, Slots: 4}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after a weight change:\n got %+v\nwant %+v", got, want)
	}
}

// TestManySlotsMatchOneSlot: with enough slots that sampling is shared out
// among the threads, every output (tokens, log-probs, text, finish, kept
// tokens) equals decoding the requests one at a time.
func TestManySlotsMatchOneSlot(t *testing.T) {
	for _, kv := range kvTypes(t) {
		testManySlots(t, kv.m, kv.typ)
	}
}

func testManySlots(t *testing.T, m *model.Model, kv model.KVType) {
	tok := tokenizer.NewBytes()
	var reqs []Request
	for i := range 40 {
		ids, _ := tok.Encode(fmt.Sprintf("prompt %d: %s", i, strings.Repeat("ab", i%5)))
		p := Params{MaxNewTokens: 3 + i%9, Temperature: []float32{1, 0.7, 0}[i%3], Seed: uint64(i)}
		if i%4 == 1 {
			p.Stop = []string{"a", "\n"}
		}
		reqs = append(reqs, Request{Prompt: ids, Params: p})
	}
	many, err := (&Generator{Model: m, Tok: tok, Slots: 32, KV: kv}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	one, err := (&Generator{Model: m, Tok: tok, Slots: 1, KV: kv}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if !reflect.DeepEqual(many[i], one[i]) {
			t.Fatalf("%s cache, request %d: 32 slots %+v, one slot %+v", kv, i, many[i], one[i])
		}
	}
}

// TestCopySourceReusedInTheSameBatch: two slots whose requests end at the
// same step are refilled together; the first repeats the prompt the second
// slot holds and copies its rows, while the second is given a longer new
// prompt. The copy must read the old rows, not the new prompt's (which an
// earlier version prefilled first: wrong keys, or an error when the new
// prompt was the shorter).
func TestCopySourceReusedInTheSameBatch(t *testing.T) {
	for _, kv := range kvTypes(t) {
		tok := tokenizer.NewBytes()
		p, _ := tok.Encode("the prompt")
		for _, q := range []string{"a longer prompt than that one", "short"} {
			other, _ := tok.Encode(q)
			var reqs []Request
			for k, prompt := range [][]int32{p, p, p, other} {
				reqs = append(reqs, Request{Prompt: prompt, Params: Params{MaxNewTokens: 4, Temperature: 1, Seed: uint64(k + 1)}})
			}
			together, err := (&Generator{Model: kv.m, Tok: tok, Slots: 2, KV: kv.typ}).Run(reqs)
			if err != nil {
				t.Fatalf("%s cache, new prompt %q: %v", kv.typ, q, err)
			}
			for i, r := range reqs {
				alone, err := (&Generator{Model: kv.m, Tok: tok, KV: kv.typ}).Run([]Request{r})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(alone[0].Tokens, together[i].Tokens) || !reflect.DeepEqual(alone[0].LogProbs, together[i].LogProbs) {
					t.Errorf("%s cache, new prompt %q, request %d: %v batched, %v alone", kv.typ, q, i, together[i].Tokens, alone[0].Tokens)
				}
			}
		}
	}
}
