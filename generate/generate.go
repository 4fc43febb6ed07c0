package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// Request is one prompt (token ids) to complete.
type Request struct {
	Prompt []int32
	Params
}

// Output is one completion.
type Output struct {
	Tokens   []int32   // generated ids, EOS included when it ended the sequence
	LogProbs []float32 // per generated token, see sampler.next
	Text     string    // decoded completion, cut before a stop string, without EOS
	Finish   string    // "eos", "stop" or "length"
	// Keep is how many leading Tokens are the completion proper: all of them
	// (EOS included) unless a stop string ended it, then those that decode
	// to text before the stop string. Training masks the rest.
	Keep int
}

// Generator runs requests through a model.
type Generator struct {
	Model *model.Model
	Tok   tokenizer.Tokenizer
	// Slots bounds the decoding batch (0: 64).
	Slots int
	// KV is how the cache stores keys and values ("": float32); see
	// model.KVType.
	KV model.KVType
	// Weights is what decoding reads the weights as ("": float32); see
	// model.WeightType.
	Weights model.WeightType
	// Progress, if set, is called after each finished request.
	Progress func(done, total int)
	// Ctx, if set, is checked at every decoding step: cancelling it (Ctrl-C,
	// SIGTERM) ends Run with its error within one step.
	Ctx context.Context
	// Phases, if set, has Run's time in each phase added to it.
	Phases *Phases
	// OnlyTokenizerEOS ends sequences at Tok.EOS() alone. By default the
	// model's generation_config.json stop tokens (Model.Generation.EOS,
	// e.g. Llama 3's <|eot_id|>) end them too.
	OnlyTokenizerEOS bool
}

// ends is the set of tokens that end a sequence.
func (g *Generator) ends() []int32 {
	ends := []int32{g.Tok.EOS()}
	if !g.OnlyTokenizerEOS {
		ends = append(ends, g.Model.Generation.EOS...)
	}
	return ends
}

// Phases is where Run's time went: starting requests (the prompts'
// prefill, cache rows copied for a repeated prompt, the first token
// sampled) and decoding steps (a token for every busy slot, sampled).
type Phases struct {
	Prefill, Decode time.Duration
}

type slotState struct {
	req     int
	s       *sampler
	out     Output
	last    int32
	started bool
}

// Run completes every request and returns the outputs in request order.
func (g *Generator) Run(reqs []Request) ([]Output, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	capNeeded, err := g.check(reqs)
	if err != nil {
		return nil, err
	}
	m := g.Model
	slots := g.Slots
	if slots <= 0 {
		slots = 64
	}
	slots = min(slots, len(reqs))
	// Capacity in steps of 64 positions, so that consecutive calls (an RL
	// round's prompts of slightly different lengths) reuse one cache.
	kv := g.KV
	if kv == "" {
		kv = model.KVFloat32
	}
	w := g.Weights
	if w == "" {
		w = model.WeightFloat32
	}
	kc, err := m.NewCacheWith(slots, min(m.Cfg.MaxSeq, (capNeeded+63)/64*64), kv, w)
	if err != nil {
		return nil, err
	}
	defer m.FreeCache(kc)
	r := &run{g: g, reqs: reqs, kc: kc, slots: slots, outs: make([]Output, len(reqs)), state: make([]*slotState, slots),
		slotGen: make([]int, slots), ends: g.ends(), tokens: make([]int32, slots), active: make([]bool, slots), ended: make([]bool, slots)}
	r.last.slot = -1
	all := make([]int, slots)
	for s := range all {
		all[s] = s
	}
	var ph Phases
	if g.Phases != nil {
		defer func() { g.Phases.Prefill, g.Phases.Decode = g.Phases.Prefill+ph.Prefill, g.Phases.Decode+ph.Decode }()
	}
	t := time.Now()
	if err := r.start(all); err != nil {
		return nil, err
	}
	for r.done < len(reqs) {
		if g.Ctx != nil && g.Ctx.Err() != nil {
			return nil, fmt.Errorf("generate: %w after %d of %d requests", g.Ctx.Err(), r.done, len(reqs))
		}
		t1 := time.Now()
		ph.Prefill += t1.Sub(t)
		free, err := r.step()
		if err != nil {
			return nil, err
		}
		t = time.Now()
		ph.Decode += t.Sub(t1)
		if err := r.start(free); err != nil {
			return nil, err
		}
	}
	ph.Prefill += time.Since(t)
	return r.outs, nil
}

// check refuses a request that cannot run and returns the cache positions
// the longest needs.
func (g *Generator) check(reqs []Request) (int, error) {
	capNeeded := 0
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return 0, fmt.Errorf("request %d: empty prompt", i)
		}
		if r.MaxNewTokens <= 0 {
			return 0, fmt.Errorf("request %d: max_new_tokens must be positive, got %d", i, r.MaxNewTokens)
		}
		need := len(r.Prompt) + r.MaxNewTokens
		if need > g.Model.Cfg.MaxSeq {
			return 0, fmt.Errorf("request %d: %d prompt tokens + %d new tokens exceed the model's %d positions",
				i, len(r.Prompt), r.MaxNewTokens, g.Model.Cfg.MaxSeq)
		}
		capNeeded = max(capNeeded, need)
	}
	return capNeeded, nil
}

// run is one Run's batch: the cache's slots, which request each holds,
// and the outputs so far.
type run struct {
	g       *Generator
	reqs    []Request
	kc      *model.Cache
	slots   int
	outs    []Output
	state   []*slotState // the request each slot decodes, nil when free
	slotGen []int        // how many requests each slot has been given
	nextReq int
	done    int
	ends    []int32
	// A decoding step's inputs and ended flags, per slot: allocated once.
	tokens        []int32
	active, ended []bool
	// The last prefill, so consecutive requests with the same prompt (the G
	// samples of one RL prompt) copy its cache rows instead of recomputing
	// them: bitwise the same keys, values and logits.
	last struct {
		prompt []int32
		slot   int
		gen    int
		logits []float32
	}
}

// job is one request given to a slot by start.
type job struct {
	slot, req int
	from      int       // slot to copy the prompt's rows from, or -1: prefilled
	logitsOf  int       // job whose logits it shares, or -1
	logits    []float32 // the next token's logits after the prompt
}

// start gives the free slots the next requests and their first tokens.
// Each new prompt is prefilled (all of them in one PrefillMany, shared out
// among the threads); a request repeating the prompt before it copies that
// one's cache rows. A slot whose request ends at its first token takes the
// next one.
func (r *run) start(free []int) error {
	m, V := r.g.Model, r.g.Model.Cfg.Vocab
	for len(free) > 0 && r.nextReq < len(r.reqs) {
		var jobs []job
		var pSlots, pJobs []int
		var pPrompts [][]int32
		lastJob := -1 // the job r.last.slot holds, when it is in this batch
		for _, s := range free {
			if r.nextReq >= len(r.reqs) {
				break
			}
			i := r.nextReq
			r.nextReq++
			j := job{slot: s, req: i, from: -1, logitsOf: -1}
			if r.last.slot >= 0 && r.slotGen[r.last.slot] == r.last.gen && slices.Equal(r.last.prompt, r.reqs[i].Prompt) {
				j.from, j.logitsOf, j.logits = r.last.slot, lastJob, r.last.logits
			} else {
				pSlots, pJobs, pPrompts = append(pSlots, s), append(pJobs, len(jobs)), append(pPrompts, r.reqs[i].Prompt)
			}
			r.slotGen[s]++
			lastJob = len(jobs)
			r.last.prompt, r.last.slot, r.last.gen = r.reqs[i].Prompt, s, r.slotGen[s]
			jobs = append(jobs, j)
		}
		// A copy whose source holds a request of an earlier batch goes
		// first, in job order: that slot may have ended and be given
		// another prompt here. A copy whose source is this batch's
		// (logitsOf) follows the prefill and the copies before it.
		copyRows := func(j *job) error {
			return m.CopyPrefix(r.kc, j.from, j.slot, len(r.reqs[j.req].Prompt))
		}
		for k := range jobs {
			if j := &jobs[k]; j.from >= 0 && j.logitsOf < 0 {
				if err := copyRows(j); err != nil {
					return err
				}
			}
		}
		got, err := m.PrefillMany(r.kc, pSlots, pPrompts)
		if err != nil {
			var pe *model.PromptError
			if errors.As(err, &pe) {
				return fmt.Errorf("request %d: %w", jobs[pJobs[pe.Index]].req, pe.Err)
			}
			return err
		}
		for k, ji := range pJobs {
			jobs[ji].logits = got[k]
		}
		free = free[:0]
		for k := range jobs {
			j := &jobs[k]
			if j.from >= 0 && j.logitsOf >= 0 {
				if err := copyRows(j); err != nil {
					return err
				}
				j.logits = jobs[j.logitsOf].logits
			}
			st := &slotState{req: j.req, s: newSampler(r.reqs[j.req].Params)}
			r.state[j.slot] = st
			if r.g.accept(st, j.logits[:V], r.ends, r.reqs[j.req]) {
				r.finish(j.slot)
				free = append(free, j.slot)
			}
		}
		r.last.logits = jobs[lastJob].logits
	}
	return nil
}

// step decodes one token for every busy slot and returns the slots whose
// requests ended, in slot order.
func (r *run) step() ([]int, error) {
	m, V := r.g.Model, r.g.Model.Cfg.Vocab
	tokens, active, ended := r.tokens, r.active, r.ended
	for s, st := range r.state {
		active[s] = st != nil
		tokens[s] = 0
		if st != nil {
			tokens[s] = st.last
		}
	}
	logits, err := m.Decode(r.kc, tokens, active)
	if err != nil {
		return nil, err
	}
	// Every slot samples from its own stream and writes only its own
	// state, so the slots are shared out among the threads; finished
	// requests are then taken in slot order.
	forSlots(r.slots, m.Backend().Threads(), func(s int) {
		if st := r.state[s]; st != nil {
			ended[s] = r.g.accept(st, logits[s*V:(s+1)*V], r.ends, r.reqs[st.req])
		}
	})
	var free []int
	for s, st := range r.state {
		if st != nil && ended[s] {
			r.finish(s)
			free = append(free, s)
		}
	}
	return free, nil
}

// finish takes the output of the request slot s holds and frees the slot.
func (r *run) finish(s int) {
	r.outs[r.state[s].req], r.state[s] = r.state[s].out, nil
	r.done++
	r.g.report(r.done, len(r.reqs))
}

// forSlots runs fn(s) for s in [0, n), on up to threads goroutines each
// taking a contiguous range.
func forSlots(n, threads int, fn func(s int)) {
	parts := min(threads, n/minSlotsPerThread)
	if parts < 2 {
		for s := range n {
			fn(s)
		}
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := p * n / parts; s < (p+1)*n/parts; s++ {
				fn(s)
			}
		}()
	}
	wg.Wait()
}

// minSlotsPerThread is the fewest slots worth a goroutine of their own.
const minSlotsPerThread = 8

func (g *Generator) report(done, total int) {
	if g.Progress != nil {
		g.Progress(done, total)
	}
}

// accept samples one token for a slot and reports whether its request ended.
func (g *Generator) accept(st *slotState, logits []float32, ends []int32, r Request) bool {
	tok, lp := st.s.next(logits)
	st.out.Tokens = append(st.out.Tokens, tok)
	st.out.LogProbs = append(st.out.LogProbs, lp)
	st.last = tok
	if slices.Contains(ends, tok) {
		st.out.Text = g.Tok.Decode(st.out.Tokens[:len(st.out.Tokens)-1])
		st.out.Finish, st.out.Keep = "eos", len(st.out.Tokens)
		return true
	}
	if len(r.Stop) > 0 || len(st.out.Tokens) >= r.MaxNewTokens {
		text := g.Tok.Decode(st.out.Tokens)
		for _, stop := range r.Stop {
			if i := strings.Index(text, stop); stop != "" && i >= 0 {
				st.out.Text, st.out.Finish = text[:i], "stop"
				st.out.Keep = g.tokensBefore(st.out.Tokens, text[:i])
				return true
			}
		}
		if len(st.out.Tokens) >= r.MaxNewTokens {
			st.out.Text, st.out.Finish, st.out.Keep = text, "length", len(st.out.Tokens)
			return true
		}
	}
	return false
}

// tokensBefore returns the length of the longest prefix of toks whose text
// is a prefix of kept: a token that straddles the start of a stop string
// belongs to the stop string.
func (g *Generator) tokensBefore(toks []int32, kept string) int {
	for k := len(toks); k > 0; k-- {
		if s := g.Tok.Decode(toks[:k]); len(s) <= len(kept) && strings.HasPrefix(kept, s) {
			return k
		}
	}
	return 0
}

// RunWithoutCache completes requests by recomputing the whole sequence at
// every step (rows of equal length batched together). It is the reference
// the cached path is measured against; outputs agree with Run up to float
// rounding in the logits.
func (g *Generator) RunWithoutCache(reqs []Request) ([]Output, error) {
	m := g.Model
	V := m.Cfg.Vocab
	ends := g.ends()
	states := make([]*slotState, len(reqs))
	seqs := make([][]int32, len(reqs))
	for i, r := range reqs {
		if len(r.Prompt)+r.MaxNewTokens > m.Cfg.MaxSeq {
			return nil, fmt.Errorf("request %d: too long for the model's %d positions", i, m.Cfg.MaxSeq)
		}
		states[i] = &slotState{req: i, s: newSampler(r.Params)}
		seqs[i] = append([]int32(nil), r.Prompt...)
	}
	outs := make([]Output, len(reqs))
	for {
		groups := map[int][]int{}
		for i, st := range states {
			if st != nil {
				groups[len(seqs[i])] = append(groups[len(seqs[i])], i)
			}
		}
		if len(groups) == 0 {
			return outs, nil
		}
		for T, rows := range groups {
			flat := make([]int32, 0, len(rows)*T)
			for _, i := range rows {
				flat = append(flat, seqs[i]...)
			}
			logits, err := m.ForwardLogits(flat, len(rows), T)
			if err != nil {
				return nil, err
			}
			for b, i := range rows {
				last := logits[((b+1)*T-1)*V : (b+1)*T*V]
				if g.accept(states[i], last, ends, reqs[i]) {
					outs[i], states[i] = states[i].out, nil
				} else {
					seqs[i] = append(seqs[i], states[i].last)
				}
			}
		}
	}
}
