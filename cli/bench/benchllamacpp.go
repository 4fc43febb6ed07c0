package bench

import (
	"bufio"
	"cmp"
	"fmt"
	"github.com/corl-project/corl/cli"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/gguf"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

const benchLlamaCppLong = `Runs one model (random weights from seed 1, norm weights and biases drawn
around their initial ones and zeros) in corl and in llama.cpp side by side.
The model is written as GGUF (float32, corl's byte tokenizer as llama.cpp's
gpt2 vocabulary) and loaded by --reference, a small C program
(scripts/llamacpp/llama-ref.c) calling the prebuilt CPU library that
node-llama-cpp 3.21.1 ships; make bench-llamacpp installs the pinned package,
builds the program and runs this.

First a check that both run the same model: the next-token distribution after
each of four prompts (the largest difference in any probability) and
--greedy greedy tokens after each; a first greedy token that differs, or a
probability off by more than 1e-5, stops the command (--check-only stops it
there either way). Then, for every --threads and --batch, both engines sample
(temperature 1, untruncated) --new tokens after each of --batch prompts of
--prompt-tokens, EOS or not, all decoded together, one
sequence a KV cache: --warmup untimed runs, then --reps timed ones, the
engines alternating run by run. The table shows generated tokens per second
(the prompts' prefill included in the time), the median of the repetitions,
and corl's over llama.cpp's. Each engine loads its model once: corl packs
its weights for its kernels in the first run and keeps them packed.

Examples:
  make bench-llamacpp
  corl bench llamacpp --layers 12 --dim 768 --heads 12 --batch 1,16 --threads 2
  corl bench llamacpp --kv-heads 2 --tied --check-only`

// llamaCppBench is what one corl bench llamacpp compares.
type llamaCppBench struct {
	mf                                  cli.ModelFlags
	batches, threads                    []int
	prompt, newTok, reps, warmup, check int
	refPath, keep, checkpoint           string
	kv                                  model.KVType
	weights                             model.WeightType
	flash, checkOnly                    bool
}

func newBenchLlamaCppCmd(stdio IO, _ func(string) string) *cobra.Command {
	var o llamaCppBench
	cmd := &cobra.Command{
		Use:   "llamacpp",
		Short: "Check corl's model against llama.cpp's reading of it, and time generation in both",
		Long:  benchLlamaCppLong,
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return o.run(stdio) },
	}
	o.mf.Register(cmd)
	fl := cmd.Flags()
	for name, v := range map[string]string{"family": "llama", "layers": "6", "dim": "256", "vocab": "257"} {
		fl.Lookup(name).DefValue = v
		fl.Set(name, v)
	}
	fl.IntSliceVar(&o.batches, "batch", []int{1, 16, 128}, "sequences decoded together (a list)")
	fl.IntSliceVar(&o.threads, "threads", []int{1, 2}, "CPU threads, both engines (a list)")
	fl.IntVar(&o.prompt, "prompt-tokens", 64, "prompt length")
	fl.IntVar(&o.newTok, "new", 64, "tokens to generate per sequence")
	fl.IntVar(&o.reps, "reps", 2, "timed repetitions")
	fl.IntVar(&o.warmup, "warmup", 1, "untimed repetitions first")
	fl.IntVar(&o.check, "greedy", 16, "greedy tokens compared after each check prompt")
	fl.BoolVar(&o.checkOnly, "check-only", false, "stop after the check")
	fl.StringVar(&o.refPath, "reference", ".tools/llamacpp/llama-ref", "the llama.cpp program (scripts/llamacpp/llama-ref.c; make bench-llamacpp builds it)")
	fl.StringVar(&o.keep, "gguf", "", "also keep the GGUF file at this path (default: a temporary file, removed)")
	fl.BoolVar(&o.flash, "flash-attn", false, "llama.cpp's flash attention")
	fl.StringVar(&o.checkpoint, "checkpoint", "", "run this Hugging Face checkpoint directory instead of a random model (its token ids, not its tokenizer: see corl model random)")
	cli.RegisterKVCache(fl, &o.kv)
	cli.RegisterWeights(fl, &o.weights)
	return cmd
}

func (o *llamaCppBench) run(stdio IO) error {
	if o.reps < 1 || o.warmup < 0 || o.prompt < 1 || o.newTok < 1 || o.check < 1 {
		return fmt.Errorf("--reps, --prompt-tokens, --new and --greedy must be positive, --warmup at least 0")
	}
	for _, v := range append(slices.Clone(o.batches), o.threads...) {
		if v < 1 {
			return fmt.Errorf("--batch and --threads: %v, %v; each must be positive", o.batches, o.threads)
		}
	}
	m, eng, err := o.engine(1)
	if err != nil {
		return err
	}
	ref, err := o.startOn(m, eng.vocab, stdio.Err)
	if err != nil {
		return err
	}
	defer ref.close()
	fmt.Fprintf(stdio.Out, "model: %s, %d layers, dim %d, %.2fM parameters (%s); llama.cpp: node-llama-cpp's prebuilt CPU library\n",
		m.Cfg.Family, m.Cfg.Layers, m.Cfg.Dim, float64(m.NumParams())/1e6, eng.origin)
	if err := checkAgainstLlamaCpp(stdio.Out, ref, m, eng.tok, benchPrompts(4, o.prompt, m.Cfg.Vocab), o.check); err != nil || o.checkOnly {
		return err
	}
	fmt.Fprintf(stdio.Out, "generated tokens/s, median of %d; kv cache %s; corl weights %s, llama.cpp float32; llama.cpp flash attention %v\n",
		o.reps, o.kv, o.weights, o.flash)
	tw := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "batch\tthreads\tcorl\tllama.cpp\tcorl / llama.cpp\t")
	for _, t := range o.threads {
		mt, _, err := o.engine(t)
		if err != nil {
			return err
		}
		for _, b := range o.batches {
			ours, theirs, err := o.timeBoth(ref, mt, eng.tok, b, t)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "batch %d, %d threads: corl %.0f, llama.cpp %.0f generated tokens/s\n", b, t, ours, theirs)
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.2f\t\n", b, t, ours, theirs, ours/theirs)
		}
	}
	return tw.Flush()
}

// startOn writes m as GGUF (to --gguf or a temporary file), starts the
// reference and has it load the file.
func (o *llamaCppBench) startOn(m *model.Model, vocab []gguf.KV, stderr io.Writer) (*llamaCpp, error) {
	path := o.keep
	if path == "" {
		tmp, err := os.MkdirTemp("", "corl-llamacpp-")
		if err != nil {
			return nil, err
		}
		// Removed once load has answered: the reference holds the file open
		// (mapped), which outlives its name.
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "model.gguf")
	}
	if err := writeGGUF(path, m, vocab); err != nil {
		return nil, err
	}
	ref, err := startLlamaCpp(o.refPath, stderr)
	if err != nil {
		return nil, err
	}
	V, err := ref.load(path)
	if err == nil && V != m.Cfg.Vocab {
		err = fmt.Errorf("%s: read a vocabulary of %d from the GGUF file, the model has %d", o.refPath, V, m.Cfg.Vocab)
	}
	if err != nil {
		ref.close()
		return nil, err
	}
	return ref, nil
}

// timeBoth is each engine's median generated tokens/s at batch b on t
// threads, the engines alternating run by run: this machine's speed drifts
// within a minute.
func (o *llamaCppBench) timeBoth(ref *llamaCpp, m *model.Model, tok tokenizer.Tokenizer, b, t int) (ours, theirs float64, err error) {
	prompts := benchPrompts(b, o.prompt, m.Cfg.Vocab)
	g := &generate.Generator{Model: m, Tok: untilLength{tok}, Slots: b, KV: o.kv, Weights: o.weights, OnlyTokenizerEOS: true}
	// The weights packed once (in the first untimed run) for every run, as
	// llama.cpp loads its model once.
	defer m.HoldWeights(o.weights)()
	var us, them []float64
	for r := range o.reps {
		w := 0
		if r == 0 {
			w = o.warmup
		}
		rate, err := ref.rate(prompts, o.newTok, t, o.kv, o.flash, w)
		if err != nil {
			return 0, 0, err
		}
		them = append(them, rate)
		for i := range w + 1 {
			if rate, err = sampleRate(g, prompts, o.newTok, uint64(r*(o.warmup+1)+i)); err != nil {
				return 0, 0, err
			}
		}
		us = append(us, rate)
	}
	return median(us), median(them), nil
}

// benchPrompts are the n prompts of length tokens that corl bench generate
// and corl bench llamacpp decode.
func benchPrompts(n, length, vocab int) [][]int32 {
	out := make([][]int32, n)
	for i := range out {
		p := make([]int32, length)
		for j := range p {
			p[j] = int32((i*7 + j) % vocab)
		}
		out[i] = p
	}
	return out
}

// engine is what one side of the comparison runs.
type engine struct {
	tok    tokenizer.Tokenizer
	vocab  []gguf.KV // the tokenizer as GGUF metadata
	origin string
}

// engine builds the model on a backend of threads threads: the checkpoint,
// or the random model of the flags (seed 1, norm weights and biases
// perturbed), the same every call.
func (o *llamaCppBench) engine(threads int) (*model.Model, engine, error) {
	if o.checkpoint != "" {
		m, err := model.LoadHF(cpu.New(threads), o.checkpoint)
		if err != nil {
			return nil, engine{}, err
		}
		eos := int32(m.Cfg.Vocab - 1)
		if len(m.Generation.EOS) > 0 {
			eos = m.Generation.EOS[0]
		}
		return m, engine{tok: idTokens{n: m.Cfg.Vocab}, vocab: idVocab(m.Cfg.Vocab, eos), origin: o.checkpoint + ", " + string(m.StoredAs())}, nil
	}
	tok := tokenizer.NewBytes()
	if o.mf.Vocab() != tok.VocabSize() {
		return nil, engine{}, fmt.Errorf("--vocab: %d; the benchmark runs corl's byte tokenizer, %d tokens", o.mf.Vocab(), tok.VocabSize())
	}
	m, err := model.New(cpu.New(threads), o.mf.Config(o.prompt+max(o.newTok, o.check)), 1)
	if err == nil {
		err = m.PerturbVectors(7)
	}
	if err != nil {
		return nil, engine{}, err
	}
	return m, engine{tok: tok, vocab: bytesVocab(tok), origin: "random, seed 1"}, nil
}

// idTokens is a tokenizer of n ids and no text, for a checkpoint run by its
// token ids: decoding gives "", and nothing ends a sequence.
type idTokens struct{ n int }

func (idTokens) Encode(string) ([]int32, error) {
	return nil, fmt.Errorf("a checkpoint is run by token ids")
}
func (idTokens) Decode([]int32) string { return "" }
func (t idTokens) VocabSize() int      { return t.n }
func (idTokens) EOS() int32            { return -1 }

// idVocab is GGUF metadata for a vocabulary of n tokens that are never
// spelled: corl's 256 byte tokens first (llama.cpp's gpt2 vocabulary wants
// them), then control tokens named by id; eos is the end of sequence.
func idVocab(n int, eos int32) []gguf.KV {
	byteTok := tokenizer.NewBytes()
	tokens, types := make([]string, n), make([]int32, n)
	for id := range n {
		tokens[id], types[id] = fmt.Sprintf("<|id_%d|>", id), 3 // LLAMA_TOKEN_TYPE_CONTROL
		if id < 256 {
			tokens[id], _ = byteTok.Token(int32(id))
			types[id] = 1 // LLAMA_TOKEN_TYPE_NORMAL
		}
	}
	return gpt2Vocab(tokens, types, eos)
}

// gpt2Vocab is llama.cpp's gpt2 (byte-level BPE) vocabulary metadata: the
// tokens and their types, no merges, eos as beginning and end of sequence.
func gpt2Vocab(tokens []string, types []int32, eos int32) []gguf.KV {
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: "default"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: []string{}},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(eos)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(eos)},
		{Key: "tokenizer.ggml.add_bos_token", Value: false},
	}
}

// bytesVocab is corl's byte tokenizer as llama.cpp's gpt2 (byte-level BPE)
// vocabulary: the 256 byte tokens as the tokenizer spells them, no merges,
// the end-of-text token as control, beginning and end of sequence.
func bytesVocab(tok *tokenizer.BPE) []gguf.KV {
	n := tok.VocabSize()
	tokens, types := make([]string, n), make([]int32, n)
	for id := range n {
		s, added := tok.Token(int32(id))
		tokens[id], types[id] = s, 1 // LLAMA_TOKEN_TYPE_NORMAL
		if added {
			types[id] = 3 // LLAMA_TOKEN_TYPE_CONTROL
		}
	}
	return gpt2Vocab(tokens, types, tok.EOS())
}

func writeGGUF(path string, m *model.Model, vocab []gguf.KV) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--gguf: %w", err)
	}
	if err := m.WriteGGUF(f, "corl bench", vocab); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// probTolerance is how far one next-token probability may lie from
// llama.cpp's. The two sum in different orders in float32: measured, they
// differ by 4e-9 to 4e-8 (6 x 256 and 12 x 768, grouped-query, biased, tied),
// while a q bias left unpermuted moves them by 1e-4 and swapped norms by
// 3e-3 (probabilities near 1/257 on random weights).
const probTolerance = 1e-5

// logProbTolerance is how far a log-probability may lie from llama.cpp's,
// in nats: the scale-free measure for a vocabulary of 150,000, where every
// probability is below probTolerance. Measured: 2e-7 to 7e-7 on the random
// byte-vocabulary models above, 4e-6 on Qwen2.5-0.5B's shape and 1.4e-5 on
// Llama-3.2-1B's (BF16 weights); with Llama 3's rope scaling left out of
// the GGUF file, 0.0099 after 8-token prompts and 0.1 after 64, while the
// probabilities moved by 8e-7 and 1.1e-5.
const logProbTolerance = 1e-3

// checkAgainstLlamaCpp compares the next-token distribution after each
// prompt and the greedy continuations, printing both. It is an error for a
// probability to lie past probTolerance or a log-probability past
// logProbTolerance, or for a greedy continuation to leave llama.cpp's where
// corl's top two logits are not within logProbTolerance (a near tie, which
// float32 rounding may decide either way; the continuations are compared up
// to there).
func checkAgainstLlamaCpp(out io.Writer, ref *llamaCpp, m *model.Model, tok tokenizer.Tokenizer, prompts [][]int32, k int) error {
	probsRef, greedyRef, err := ref.check(prompts, k)
	if err != nil {
		return err
	}
	V := m.Cfg.Vocab
	worst, worstLog, agree, total, ties := 0.0, 0.0, 0, 0, 0
	reqs := make([]generate.Request, len(prompts))
	for i, p := range prompts {
		logits, err := m.ForwardLogits(p, 1, len(p))
		if err != nil {
			return err
		}
		probs := softmax(logits[(len(p)-1)*V:])
		if len(probsRef[i]) != V {
			return fmt.Errorf("llama.cpp: %d probabilities, vocabulary %d", len(probsRef[i]), V)
		}
		for j, q := range probsRef[i] {
			worst = max(worst, math.Abs(probs[j]-q))
			if q > 0 && probs[j] > 0 {
				worstLog = max(worstLog, math.Abs(math.Log(probs[j])-math.Log(q)))
			}
		}
		reqs[i] = generate.Request{Prompt: p, Params: generate.Params{MaxNewTokens: k}}
	}
	g := &generate.Generator{Model: m, Tok: tok, Slots: len(prompts), OnlyTokenizerEOS: true} // llama.cpp's greedy run does not stop
	outs, err := g.Run(reqs)
	if err != nil {
		return err
	}
	var diverged []string
	for i, o := range outs {
		n := 0
		for n < min(len(o.Tokens), len(greedyRef[i])) && o.Tokens[n] == greedyRef[i][n] {
			n++
		}
		agree += n
		total += min(k, len(o.Tokens))
		if n == min(len(o.Tokens), len(greedyRef[i])) {
			continue
		}
		seq := append(slices.Clone(prompts[i]), o.Tokens[:n]...)
		logits, err := m.ForwardLogits(seq, 1, len(seq))
		if err != nil {
			return err
		}
		last := logits[(len(seq)-1)*V:]
		margin := float64(last[o.Tokens[n]] - last[greedyRef[i][n]])
		if margin <= logProbTolerance {
			ties++
			continue
		}
		diverged = append(diverged, fmt.Sprintf("prompt %d token %d (corl %d, llama.cpp %d, logit margin %.2g)", i, n, o.Tokens[n], greedyRef[i][n], margin))
	}
	fmt.Fprintf(out, "check: next-token probabilities after %d prompts differ by at most %.2g, log-probabilities by %.2g; greedy continuations agree on %d of %d tokens (%d stop at a near tie)\n",
		len(prompts), worst, worstLog, agree, total, ties)
	if len(diverged) > 0 || worst > probTolerance || worstLog > logProbTolerance {
		return fmt.Errorf("llama.cpp runs a different model: probabilities differ by %.2g (tolerance %g), log-probabilities by %.2g (tolerance %g); greedy continuations leave llama.cpp's at %s",
			worst, probTolerance, worstLog, logProbTolerance, cmp.Or(strings.Join(diverged, "; "), "no non-tie"))
	}
	return nil
}

func softmax(logits []float32) []float64 {
	hi := float64(slices.Max(logits))
	p := make([]float64, len(logits))
	sum := 0.0
	for i, l := range logits {
		p[i] = math.Exp(float64(l) - hi)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// untilLength is a tokenizer without an end-of-sequence token, so that every
// timed sequence generates --new tokens, as in the reference: at batch 1 a
// sequence ended after a few tokens leaves the prefill's time over those few.
type untilLength struct{ tokenizer.Tokenizer }

func (untilLength) EOS() int32 { return -1 }

// sampleRate is corl's generated tokens/s on the prompts, sampled as
// llama.cpp is (temperature 1, untruncated), the prefill included.
func sampleRate(g *generate.Generator, prompts [][]int32, newTok int, seed uint64) (float64, error) {
	reqs := make([]generate.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = generate.Request{Prompt: p, Params: generate.Params{MaxNewTokens: newTok, Temperature: 1, Seed: seed<<20 + uint64(i)}}
	}
	start := time.Now()
	outs, err := g.Run(reqs)
	if err != nil {
		return 0, err
	}
	el := time.Since(start)
	n := 0
	for _, o := range outs {
		n += len(o.Tokens)
	}
	return float64(n) / el.Seconds(), nil
}

// llamaCpp is the reference program (scripts/llamacpp/llama-ref.c),
// running, answering one request at a time.
type llamaCpp struct {
	path string
	cmd  *exec.Cmd
	in   *bufio.Writer
	pipe io.WriteCloser
	out  *bufio.Reader
}

func startLlamaCpp(path string, stderr io.Writer) (*llamaCpp, error) {
	cmd := exec.Command(path)
	cmd.Stderr = stderr
	pipe, out, err := startPiped(cmd)
	if err != nil {
		return nil, fmt.Errorf("--reference: %w (make bench-llamacpp builds it)", err)
	}
	return &llamaCpp{path: path, cmd: cmd, pipe: pipe, in: bufio.NewWriterSize(pipe, 1<<20), out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// send writes a request line and its prompts, one a line.
func (l *llamaCpp) send(req string, prompts [][]int32) error {
	fmt.Fprintln(l.in, req)
	for _, p := range prompts {
		fmt.Fprint(l.in, len(p))
		for _, t := range p {
			fmt.Fprintf(l.in, " %d", t)
		}
		fmt.Fprintln(l.in)
	}
	if err := l.in.Flush(); err != nil {
		return fmt.Errorf("%s: %s: %w", l.path, req, err)
	}
	return nil
}

// answer reads one answer line, its words after the leading one checked
// to be want; an "error" line is returned as an error.
func (l *llamaCpp) answer(want string) ([]string, error) {
	line, err := l.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: no answer (%w)", l.path, err)
	}
	f := strings.Fields(line)
	switch {
	case len(f) > 0 && f[0] == "error":
		return nil, fmt.Errorf("%s: %s", l.path, strings.TrimSpace(strings.TrimPrefix(line, "error")))
	case want != "" && (len(f) == 0 || f[0] != want):
		return nil, fmt.Errorf("%s: answer %.80q; want a %q line", l.path, line, want)
	case want != "":
		return f[1:], nil
	}
	return f, nil
}

// load loads the GGUF file and returns the vocabulary the reference read.
func (l *llamaCpp) load(path string) (int, error) {
	if err := l.send("load "+path, nil); err != nil {
		return 0, err
	}
	f, err := l.answer("ok")
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("%s: load answered %q", l.path, f)
	}
	return strconv.Atoi(f[0])
}

// check returns, for each prompt, the next-token distribution after it and
// k greedy tokens.
func (l *llamaCpp) check(prompts [][]int32, k int) (probs [][]float64, greedy [][]int32, err error) {
	if err := l.send(fmt.Sprintf("check %d %d", k, len(prompts)), prompts); err != nil {
		return nil, nil, err
	}
	for range prompts {
		f, err := l.answer("probs")
		if err != nil {
			return nil, nil, err
		}
		p := make([]float64, len(f))
		for i, s := range f {
			if p[i], err = strconv.ParseFloat(s, 64); err != nil {
				return nil, nil, fmt.Errorf("%s: probability %q: %w", l.path, s, err)
			}
		}
		if f, err = l.answer("greedy"); err != nil {
			return nil, nil, err
		}
		g := make([]int32, len(f))
		for i, s := range f {
			v, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: token %q: %w", l.path, s, err)
			}
			g[i] = int32(v)
		}
		probs, greedy = append(probs, p), append(greedy, g)
	}
	return probs, greedy, nil
}

// rate samples up to newTok tokens after every prompt, decoded together
// (warmup untimed runs first), and returns the generated tokens per second.
func (l *llamaCpp) rate(prompts [][]int32, newTok, threads int, kv model.KVType, flash bool, warmup int) (float64, error) {
	fa := 0
	if flash {
		fa = 1
	}
	if err := l.send(fmt.Sprintf("time %d %d %s %d %d %d", newTok, threads, kv, fa, warmup, len(prompts)), prompts); err != nil {
		return 0, err
	}
	f, err := l.answer("")
	if err != nil {
		return 0, err
	}
	var tokens int
	var secs float64
	if len(f) != 2 {
		return 0, fmt.Errorf("%s: time answered %q; want \"TOKENS SECONDS\"", l.path, f)
	}
	if tokens, err = strconv.Atoi(f[0]); err == nil {
		secs, err = strconv.ParseFloat(f[1], 64)
	}
	if err != nil || secs <= 0 {
		return 0, fmt.Errorf("%s: time answered %q; want \"TOKENS SECONDS\"", l.path, f)
	}
	return float64(tokens) / secs, nil
}

func (l *llamaCpp) close() {
	l.pipe.Close()
	_ = l.cmd.Wait()
}
