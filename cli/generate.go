package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// maxSamples bounds --n.
const maxSamples = 10000

func newGenerateCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		dir, prompt, template string
		kv                    model.KVType
		weights               model.WeightType
		p                     generate.Params
		n                     int
		bf                    BackendFlags
		stop                  []string
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Sample completions of a prompt from a checkpoint directory",
		Long: `Loads a Hugging Face-style checkpoint directory (config.json, model.safetensors,
tokenizer.json) and prints completions of --prompt. Temperature 0 decodes greedily.

Example:
  corl generate --model runs/pretrain/gpt2-small --prompt "Compute 12+30." --template qa`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || prompt == "" {
				return fmt.Errorf("--model and --prompt are required")
			}
			switch {
			case !(p.Temperature >= 0):
				return fmt.Errorf("--temperature %v: must be 0 (greedy) or positive", p.Temperature)
			case p.TopK < 0:
				return fmt.Errorf("--top-k %d: must be 0 (all tokens) or positive", p.TopK)
			case !(p.TopP > 0 && p.TopP <= 1):
				return fmt.Errorf("--top-p %v: must be in (0, 1]: 0 keeps no token (1, the default, keeps all)", p.TopP)
			}
			tpl, err := tokenizer.LookupPrompter(template, dir)
			if err != nil {
				return fmt.Errorf("--template: %w", err)
			}
			m, tok, err := loadCheckpoint(dir, &bf, stdio.Err)
			if err != nil {
				return err
			}
			text, err := tpl.Prompt(prompt)
			if err != nil {
				return fmt.Errorf("--template: %w", err)
			}
			ids, err := tok.Encode(text)
			if err != nil {
				return fmt.Errorf("--prompt: %w", err)
			}
			if n <= 0 || n > maxSamples {
				return fmt.Errorf("--n %d: must be in 1..%d (every sample's tokens and log-probs stay in memory until all are done)", n, maxSamples)
			}
			p.Stop = stop
			reqs := make([]generate.Request, n)
			for i := range reqs {
				reqs[i] = generate.Request{Prompt: ids, Params: p}
				reqs[i].Seed = p.Seed + uint64(i)
			}
			outs, err := (&generate.Generator{Model: m, Tok: tok, Ctx: cmd.Context(), KV: kv, Weights: weights}).Run(reqs)
			if err != nil {
				if errors.Is(err, model.ErrCacheType) {
					return fmt.Errorf("--kv-cache: %w", err)
				}
				if errors.Is(err, model.ErrWeightType) {
					return fmt.Errorf("--weights: %w", err)
				}
				return err
			}
			for i, o := range outs {
				var sum float64
				for _, lp := range o.LogProbs {
					sum += float64(lp)
				}
				if n > 1 {
					fmt.Fprintf(stdio.Out, "--- sample %d (%d tokens, %s, log-prob %.2f)\n", i+1, len(o.Tokens), o.Finish, sum)
				}
				fmt.Fprintln(stdio.Out, o.Text)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "model", "", "checkpoint directory")
	fl.StringVar(&prompt, "prompt", "", "prompt text")
	fl.StringVar(&template, "template", "plain", "chat template: plain, qa, chatml, llama3, or model (the checkpoint's own chat_template from tokenizer_config.json)")
	fl.IntVar(&p.MaxNewTokens, "max-new-tokens", 64, "tokens to generate at most")
	fl.Float32Var(&p.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fl.IntVar(&p.TopK, "top-k", 0, "keep the k most likely tokens (0: all)")
	fl.Float32Var(&p.TopP, "top-p", 1, "nucleus sampling mass (1: off)")
	fl.Uint64Var(&p.Seed, "seed", 1, "seed of the first sample (sample i uses seed+i)")
	fl.IntVar(&n, "n", 1, "number of samples")
	fl.StringArrayVar(&stop, "stop", nil, "a stop string, any text (a newline too: --stop $'\\n'); repeatable")
	RegisterKVCache(fl, &kv)
	RegisterWeights(fl, &weights)
	bf.Register(fl, getenv)
	return cmd
}
