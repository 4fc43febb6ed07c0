package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/safetensors"
	"github.com/corl-project/corl/tokenizer"
)

func newModelCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Build and inspect Hugging Face checkpoints",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newModelRandomCmd(stdio), newModelPlanCmd(stdio), newModelMergeLoRACmd(stdio))
	return cmd
}

const modelRandomLong = `Writes a checkpoint of a published model's exact shape with random weights:
its config.json and generation_config.json as published, weights drawn as
corl initialises a model (normal(0, initializer_range) matrices; norm
weights and biases drawn around ones and zeros, standard deviation 0.1, so
that an engine reading a norm or bias wrongly shows it), stored in --dtype
and split into --shards files with model.safetensors.index.json, as
checkpoints are published. For tests and benchmarks at real sizes without
downloading weights; corl bench llamacpp --checkpoint runs one against
llama.cpp.

Shapes: %s; or --config, any config.json corl reads (with the
generation_config.json beside it, if there is one).

Examples:
  corl model random --shape qwen2.5-0.5b --out /tmp/qwen-random
  corl model random --shape llama-3.2-1b --dtype BF16 --shards 2 --seed 3 --out /tmp/llama-random
  corl model random --config mine/config.json --dtype F32 --out /tmp/mine-random
  corl model random --shape qwen2.5-0.5b --tokenizer bytes --out /tmp/member   # a member corl run can train`

func newModelRandomCmd(stdio IO) *cobra.Command {
	var shape, config, dtype, out, tok string
	var shards int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "random",
		Short: "Write a checkpoint of a published shape with random weights",
		Long:  fmt.Sprintf(modelRandomLong, strings.Join(model.ShapeNames(), ", ")),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if tok != "" && tok != "bytes" {
				return fmt.Errorf("--tokenizer: %q; the one tokenizer corl can write here is bytes", tok)
			}
			if err := modelRandom(stdio, shape, config, safetensors.DType(strings.ToUpper(dtype)), out, shards, seed); err != nil || tok == "" {
				return err
			}
			return tokenizer.NewBytes().Save(out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&shape, "shape", "", "a published shape (see above)")
	fl.StringVar(&config, "config", "", "a config.json instead of --shape")
	fl.StringVar(&dtype, "dtype", "BF16", "element type of the weights: BF16, F16 or F32")
	fl.IntVar(&shards, "shards", 1, "weight files (more than one: with model.safetensors.index.json)")
	fl.Uint64Var(&seed, "seed", 1, "seed of the random weights")
	fl.StringVar(&out, "out", "", "checkpoint directory to write (required)")
	fl.StringVar(&tok, "tokenizer", "", "also write a tokenizer: bytes (corl's 257-token byte tokenizer, so that corl run can train the checkpoint as a member)")
	return cmd
}

func modelRandom(stdio IO, shape, config string, dtype safetensors.DType, out string, shards int, seed uint64) error {
	switch {
	case (shape == "") == (config == ""):
		return fmt.Errorf("--shape or --config: give one (shapes: %s)", strings.Join(model.ShapeNames(), ", "))
	case out == "":
		return fmt.Errorf("--out: required, the checkpoint directory to write")
	case dtype != safetensors.BF16 && dtype != safetensors.F16 && dtype != safetensors.F32:
		return fmt.Errorf("--dtype: %q; want BF16, F16 or F32", dtype)
	case shards < 1:
		return fmt.Errorf("--shards: %d; want at least 1", shards)
	}
	cfg, files, err := shapeOrConfig(shape, config)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := model.New(cpu.New(1), cfg, seed)
	if err == nil {
		err = m.PerturbVectors(seed)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Err, "drew %.3fB parameters in %.1f s; writing %s\n", float64(m.NumParams())/1e9, time.Since(start).Seconds(), out)
	if err := m.SaveHFAs(out, dtype, shards, files); err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "%s: %s, %d layers, hidden %d, %d heads (%d kv), vocab %d, %.3fB parameters, %s in %d file(s); %.1f s\n",
		out, cfg.Family, cfg.Layers, cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.Vocab, float64(m.NumParams())/1e9, dtype, shards, time.Since(start).Seconds())
	return nil
}

const modelPlanLong = `Prints what one member of a model holds in memory, item by item, as corl
allocates it: float32 weights, gradients and AdamW's two moments (16 bytes
a parameter), a KL reference copy with --kl, the training pass's
activations for --micro-batch sequences of --seq tokens (with --tiled=false,
as on the CPU backend, attention's probabilities are kept too, and grow with
the square of --seq; with --recompute, one layer's and the residual stream
entering each; with --logit-rows N, N tokens' logits), and the generation cache of
--slots sequences of --capacity positions with its scratch rows. With
--lora-rank R, LoRA adapters of rank R on --lora-targets train with the
weights frozen: gradients and moments for the adapters alone. With
--memory-gib, a plan past it exits with an error naming what to change.

The model is --shape (%s), --config FILE or --model DIR (a checkpoint).

Examples:
  corl model plan --shape qwen2.5-0.5b --memory-gib 80
  corl model plan --shape qwen2.5-7b --micro-batch 1 --seq 2048 --memory-gib 80
  corl model plan --shape qwen2.5-1.5b --micro-batch 16 --recompute --memory-gib 80
  corl model plan --shape qwen2.5-1.5b --micro-batch 16 --recompute --logit-rows 1024
  corl model plan --shape qwen2.5-7b --micro-batch 4 --recompute --logit-rows 1024 --lora-rank 16 --memory-gib 80
  corl model plan --model examples/bases/llama-small --micro-batch 16 --seq 128`

func newModelPlanCmd(stdio IO) *cobra.Command {
	var shape, config, dir, kv string
	var weights model.WeightType
	var o model.PlanOptions
	var memory float64
	var lora model.LoRA
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print a member's memory plan, item by item, and check it fits",
		Long:  fmt.Sprintf(modelPlanLong, strings.Join(model.ShapeNames(), ", ")),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var cfg model.Config
			var err error
			switch {
			case dir != "" && shape == "" && config == "":
				cfg, err = model.ReadConfig(dir)
			case dir == "" && (shape == "") != (config == ""):
				cfg, _, err = shapeOrConfig(shape, config)
			default:
				return fmt.Errorf("--shape, --config or --model: give one")
			}
			if err != nil {
				return err
			}
			if o.MicroBatch < 1 || o.Seq < 1 || o.Slots < 1 || o.Capacity < 1 || o.Parts < 1 || memory < 0 {
				return fmt.Errorf("--micro-batch, --seq, --slots, --capacity and --parts must be positive, --memory-gib at least 0")
			}
			switch kv {
			case "f32":
			case "f16":
				o.HalfKV = true
			default:
				return fmt.Errorf("--kv-cache: %q; want f32 or f16", kv)
			}
			o.BF16Weights = weights != model.WeightFloat32
			if lora.Rank != 0 {
				lora.Alpha = float64(2 * lora.Rank) // the scale does not change the memory
				if err := lora.Validate(); err != nil {
					return fmt.Errorf("--lora-rank, --lora-targets: %w", err)
				}
				if cfg.Family != model.Llama {
					return fmt.Errorf("--lora-rank: family %s: adapters are for the llama family", cfg.Family)
				}
				o.LoRA = &lora
			}
			fmt.Fprintf(stdio.Out, "%s, %d layers, hidden %d, vocab %d: %.3fB parameters\n", cfg.Family, cfg.Layers, cfg.Dim, cfg.Vocab, float64(cfg.NumParams())/1e9)
			return model.WritePlan(stdio.Out, cfg.Plan(o), int64(memory*(1<<30)))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&shape, "shape", "", "a published shape (see above)")
	fl.StringVar(&config, "config", "", "a config.json")
	fl.StringVar(&dir, "model", "", "a checkpoint directory")
	fl.IntVar(&o.MicroBatch, "micro-batch", 4, "sequences per training pass (the spec's micro_batch_size)")
	fl.IntVar(&o.Seq, "seq", 1024, "tokens per training sequence (prompt and completion)")
	fl.IntVar(&o.Slots, "slots", 64, "sequences generated together")
	fl.IntVar(&o.Capacity, "capacity", 1024, "positions per generated sequence (prompt and completion)")
	fl.IntVar(&o.Parts, "parts", 1, "prefills at once (a CPU backend's threads; 1 on a GPU)")
	fl.StringVar(&kv, "kv-cache", "f32", "generation cache: f32 or f16")
	RegisterWeights(fl, &weights)
	fl.BoolVar(&o.Reference, "kl", false, "keep a KL reference copy")
	fl.BoolVar(&o.Recompute, "recompute", false, "recompute each layer's activations in the backward (the spec's recompute: true): one layer's kept")
	fl.BoolVar(&o.BF16Matmuls, "bf16-matmuls", false, "the update's matmuls in bfloat16 (the spec's update_precision: bf16): the weights' bfloat16 copy and one matmul's rounded operands")
	fl.IntVar(&o.LogitRows, "logit-rows", 0, "compute the logits this many tokens at a time (the spec's logit_rows; 0: every token's kept)")
	fl.IntVar(&lora.Rank, "lora-rank", 0, "train LoRA adapters of this rank with the weights frozen (the spec's lora.r; 0: a full fine-tune)")
	fl.StringSliceVar(&lora.Targets, "lora-targets", model.LoRAModules, "the projections adapted (PEFT's target_modules)")
	fl.BoolVar(&o.Tiled, "tiled", true, "attention in tiles, as the CUDA backend trains (false: stored probabilities, as the CPU backend does)")
	fl.Float64Var(&memory, "memory-gib", 0, "device memory in GiB to check the plan against (0: none)")
	return cmd
}

// shapeOrConfig reads the model of --shape (an embedded shape's files) or
// --config (a config.json, with the generation_config.json beside it if
// there is one): its config and its JSON files by name.
func shapeOrConfig(shape, config string) (model.Config, map[string][]byte, error) {
	var files map[string][]byte
	if shape != "" {
		var err error
		if files, err = model.ShapeFiles(shape); err != nil {
			return model.Config{}, nil, fmt.Errorf("--shape: %w", err)
		}
	} else {
		data, err := os.ReadFile(config)
		if err != nil {
			return model.Config{}, nil, fmt.Errorf("--config: %w", err)
		}
		files = map[string][]byte{"config.json": data}
		gen, err := os.ReadFile(filepath.Join(filepath.Dir(config), "generation_config.json"))
		if err == nil {
			files["generation_config.json"] = gen
		} else if !errors.Is(err, fs.ErrNotExist) {
			return model.Config{}, nil, fmt.Errorf("--config: %w", err)
		}
	}
	cfg, err := model.ParseConfig(cmp.Or(config, shape+"/config.json"), files["config.json"])
	return cfg, files, err
}

const modelMergeLoRALong = `Folds a checkpoint's LoRA adapters into its weights, W + (lora_alpha/r) B A,
and writes the merged checkpoint to --out in the weights' own layout (their
dtype and shards), with the tokenizer and the other files beside them: what
vLLM or llama.cpp serve without adapter support (PEFT's merge_and_unload).
The adapters are --adapter's (adapter_config.json and
adapter_model.safetensors, as a member trained with lora saves them in each
checkpoint, or as PEFT saves them), by default --model's own.

Examples:
  corl model merge-lora --model runs/big/checkpoints/round-000020/qwen --out qwen-merged
  corl model merge-lora --model Qwen2.5-1.5B --adapter my-peft-adapter --out merged`

func newModelMergeLoRACmd(stdio IO) *cobra.Command {
	var dir, adapter, out string
	cmd := &cobra.Command{
		Use:   "merge-lora --model DIR --out DIR",
		Short: "Fold LoRA adapters into a checkpoint's weights",
		Long:  modelMergeLoRALong,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" || out == "" {
				return fmt.Errorf("--model and --out: give both")
			}
			if adapter == "" {
				adapter = dir
			}
			if abs, _ := filepath.Abs(out); abs == mustAbs(dir) {
				return fmt.Errorf("--out %s is --model: write the merged checkpoint elsewhere", out)
			}
			start := time.Now()
			m, err := model.LoadHF(cpu.New(0), dir)
			if err != nil {
				return err
			}
			if err := m.LoadLoRA(adapter); err != nil {
				return err
			}
			lc, _ := m.LoRAConfig()
			if err := m.MergeLoRA(); err != nil {
				return err
			}
			if err := m.SaveHF(out); err != nil {
				return err
			}
			if err := copySideFiles(dir, out); err != nil {
				return err
			}
			if err := model.WriteChecksums(out); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s: %s merged with r %d, lora_alpha %v on %s; %.1f s\n", out, dir, lc.Rank, lc.Alpha, strings.Join(lc.Targets, ", "), time.Since(start).Seconds())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "model", "", "the checkpoint directory (its weights, and its adapters unless --adapter)")
	fl.StringVar(&adapter, "adapter", "", "a PEFT adapter directory (default: --model)")
	fl.StringVar(&out, "out", "", "the directory to write the merged checkpoint to")
	return cmd
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// copySideFiles copies from src to dst the files a merged checkpoint keeps
// that SaveHF does not write (the tokenizer's, the chat template), leaving
// out the weights, the adapters, the optimizer state and the checksums.
func copySideFiles(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(n, ".safetensors") || strings.HasPrefix(n, "adapter_") ||
			n == model.ChecksumsFile || n == "model.safetensors.index.json" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dst, n)); err == nil {
			continue // SaveHF wrote it
		}
		data, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
