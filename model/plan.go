package model

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corl-project/corl/gpu"
)

// NumParams is the parameter count of a model of c (tied embeddings counted
// once), without building it.
func (c Config) NumParams() int { return newLayout(c).total }

// PlanOptions are the sizes of one member's work that its memory depends on.
type PlanOptions struct {
	// MicroBatch sequences of Seq tokens per forward and backward pass.
	MicroBatch, Seq int
	// Slots sequences generated together, each up to Capacity positions
	// (prompt and completion), with a binary16 cache when HalfKV.
	Slots, Capacity int
	HalfKV          bool
	// Parts is the threads a CPU backend prefills with at once (1 on a GPU).
	Parts int
	// Reference adds the frozen copy a KL penalty reads.
	Reference bool
	// Tiled is attention through gpu.FlashAttention (the CUDA backend's):
	// a log-sum-exp per query saved, not T probabilities.
	Tiled bool
	// Recompute is Model.Recompute: a training pass keeps one layer's
	// activations and the residual stream entering each layer.
	Recompute bool
	// LogitRows is Model.LogitRows: the rows of logits a pass holds at once
	// (0: one a token).
	LogitRows int
	// LoRA, when set, trains adapters of it with the weights frozen
	// (Model.AttachLoRA): gradients and AdamW moments for the adapters
	// alone.
	LoRA *LoRA
	// BF16Weights adds the bfloat16 copy of the weights that generation
	// reads while it runs with weights bf16 or bf16-act.
	BF16Weights bool
	// BF16Matmuls is Model.BF16Matmuls: the update's matmuls round the
	// weights (the same bfloat16 copy) and their operands.
	BF16Matmuls bool
}

// PlanRow is one item of a memory plan.
type PlanRow struct {
	What  string
	Bytes int64
	How   string
}

// Plan is what one member of c holds in device memory under o, item by
// item, as corl allocates it: float32 weights, gradients and AdamW's two
// moments (16 bytes a parameter), the training pass's activations (its
// arena: ActivationFloats and a quarter more), and the generation cache
// with its scratch rows (CacheFloats), and generation's bfloat16 copy of
// the weights when it reads them so.
func (c Config) Plan(o PlanOptions) []PlanRow {
	P := int64(c.NumParams())
	rows := []PlanRow{
		{"weights", 4 * P, fmt.Sprintf("%d parameters x 4 bytes (float32)", P)},
		{"gradients", 4 * P, "4 bytes a parameter"},
		{"AdamW moments", 8 * P, "2 x 4 bytes a parameter"},
	}
	if o.LoRA != nil {
		A := int64(loraLayout(c, *o.LoRA).total)
		rows = []PlanRow{
			{"weights", 4 * (P + A), fmt.Sprintf("%d parameters and %d adapter values (LoRA r %d on %d modules) x 4 bytes", P, A, o.LoRA.Rank, len(o.LoRA.Targets))},
			{"gradients", 4 * (A + int64(c.Dim)), "the adapters' alone (the weights are frozen)"},
			{"AdamW moments", 8 * A, "2 x 4 bytes an adapter value"},
		}
	}
	if o.Reference {
		rows = append(rows, PlanRow{"KL reference", 4 * P, "a frozen float32 copy"})
	}
	tiled := o.Tiled && c.HeadSize() <= gpu.FlashMaxHead
	act := int64(c.ActivationFloats(o.MicroBatch, o.Seq, tiled, o.Recompute, o.LogitRows))
	how := fmt.Sprintf("micro-batch %d x %d tokens, +25%% arena; ", o.MicroBatch, o.Seq)
	if o.Recompute {
		how += "recompute: one layer's activations; "
	}
	if rows := logitRows(o.MicroBatch*o.Seq, o.LogitRows); rows < o.MicroBatch*o.Seq {
		how += fmt.Sprintf("logits %d rows at a time; ", rows)
	}
	if tiled {
		how += "attention in tiles"
	} else {
		layers := int64(c.Layers)
		if o.Recompute {
			layers = 1
		}
		att := layers * int64(o.MicroBatch) * int64(c.Heads) * int64(o.Seq) * int64(o.Seq)
		how += fmt.Sprintf("attention probabilities %.1f%% of it", 100*float64(att)/float64(act))
	}
	rows = append(rows, PlanRow{"training activations", 4 * (act + act/4), how})
	if o.LoRA != nil {
		N, r := int64(o.MicroBatch)*int64(o.Seq), int64(o.LoRA.Rank)
		widest := int64(max(c.Heads*c.HeadSize(), c.Dim, 2*c.Hidden))
		rows = append(rows, PlanRow{"LoRA scratch", 4 * N * (2*r + widest), "a pass's s x A^T, its gradient and one adapter's output"})
	}
	cache := int64(c.CacheFloats(o.Slots, o.Capacity, max(o.Parts, 1), o.HalfKV))
	kind := "float32"
	if o.HalfKV {
		kind = "binary16"
	}
	rows = append(rows, PlanRow{"generation cache", 4 * cache, fmt.Sprintf("%d slots x %d positions, %s keys and values, with scratch rows", o.Slots, o.Capacity, kind)})
	if o.BF16Weights || o.BF16Matmuls {
		var holders []string
		if o.BF16Weights {
			holders = append(holders, "generation")
		}
		if o.BF16Matmuls {
			holders = append(holders, "the update")
		}
		rows = append(rows, PlanRow{"bfloat16 weights", 2 * P, "2 bytes a parameter, while " + strings.Join(holders, " or ") + " holds them"})
	}
	if o.BF16Matmuls {
		N := int64(o.MicroBatch) * int64(o.Seq)
		head := int64(logitRows(o.MicroBatch*o.Seq, o.LogitRows)) * int64(c.Vocab+c.Dim)
		widest := max(N*int64(c.Dim+2*c.Hidden), N*int64(c.Dim+c.Heads*c.HeadSize()), head)
		rows = append(rows, PlanRow{"bfloat16 operands", 2 * widest, "one matmul's input and output gradient rounded at a time"})
	}
	return rows
}

// CacheFloats is the float32 values a generation cache of slots x capacity
// positions holds (NewCacheWith's buffers; parts is the backend's prefill
// threads, 1 without gpu.Splitter; half: a binary16 cache).
func (c Config) CacheFloats(slots, capacity, parts int, half bool) int {
	C, KVD, QD := c.Dim, c.KVHeads*c.HeadSize(), c.Heads*c.HeadSize()
	fcW := c.Hidden
	if c.Family == Llama {
		fcW = 2 * c.Hidden
	}
	n := max(slots, capacity*parts)
	perLayer, newRows := slots*capacity*KVD, slots
	if half {
		perLayer, newRows = perLayer/2, n
	}
	return 2*c.Layers*perLayer + 5*n*C + 2*n + 2*n*QD + 2*newRows*KVD +
		c.Heads*max(capacity*capacity*parts, slots*capacity) + n*fcW + n*c.Hidden + max(slots, parts)*c.Vocab
}

// PlanBytes is the plan's total.
func PlanBytes(rows []PlanRow) int64 {
	var t int64
	for _, r := range rows {
		t += r.Bytes
	}
	return t
}

// WritePlan prints the plan as a table, with the total against memory
// bytes (0: no limit), and returns an error naming what to change when the
// plan does not fit.
func WritePlan(w io.Writer, rows []PlanRow, memory int64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.What, gib(r.Bytes), r.How)
	}
	total := PlanBytes(rows)
	fmt.Fprintf(tw, "total\t%s\t", gib(total))
	if memory > 0 {
		fmt.Fprintf(tw, "of %s (%.0f%%)", gib(memory), 100*float64(total)/float64(memory))
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	if memory <= 0 || total <= memory {
		return nil
	}
	big := rows[0]
	for _, r := range rows[3:] {
		if r.Bytes > big.Bytes {
			big = r
		}
	}
	advice := "the model's own state (16 bytes a parameter) does not fit: a smaller member or a larger device"
	if !strings.Contains(rows[0].How, "LoRA") {
		advice = "the model's own state (16 bytes a parameter) does not fit: LoRA adapters (lora: {r: 16}, gradients and moments for the adapters alone), a smaller member or a larger device"
	}
	if PlanBytes(rows[:3]) <= memory {
		advice = fmt.Sprintf("the largest item past the model's state is %s (%s): %s", big.What, gib(big.Bytes),
			map[string]string{"training activations": "recompute: true (one layer's activations kept), logit_rows (say 1024: the logits a block of tokens at a time), a lower micro_batch_size or a shorter sequence",
				"generation cache": "fewer generation slots, shorter completions or kv_cache f16",
				"KL reference":     "turn the KL penalty off"}[big.What])
	}
	return fmt.Errorf("memory plan: %s needed, %s available; %s", gib(total), gib(memory), advice)
}

func gib(b int64) string { return FormatBytes(b) }

// FormatBytes writes b in GiB, or in MiB below one GiB.
func FormatBytes(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}
