package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/cuda"
	"github.com/corl-project/corl/model"
)

// The flags several commands share, declared once: the run spec and its
// overrides, the backend and its threads, the KV cache's storage, and a held-out split. Enumerated values
// are checked as the flag is parsed, so a bad one is refused naming the
// flag and what it allows, before any work.

// SpecFlags name a run spec and its overrides: -f/--file and repeated
// --set key=value. Precedence rises from the spec's defaults through the
// file and CORL_* variables (CORL_GRPO_BETA for grpo.beta) to --set.
type SpecFlags struct {
	File string
	Sets []string
}

// Register adds -f/--file and --set to fl.
func (f *SpecFlags) Register(fl *pflag.FlagSet) {
	fl.StringVarP(&f.File, "file", "f", "", "run spec (YAML or JSON)")
	fl.StringArrayVar(&f.Sets, "set", nil, "override a spec key: --set optim.learning_rate=1e-4 (repeatable; the keys: docs/specs.md)")
}

// Load reads the spec: its file, the environment, then the --set values.
func (f SpecFlags) Load(getenv func(string) string) (*config.RunSpec, error) {
	over := map[string]any{}
	for _, s := range f.Sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value (e.g. grpo.beta=0.04)", s)
		}
		over[k] = v
	}
	return config.Load(f.File, getenv, over)
}

// BackendFlags choose where a command computes: --backend cpu|cuda (default
// $CORL_BACKEND, else cpu) and --threads for the CPU. Open is called before
// any work, so a missing device fails the command at start with the
// driver's reason, never mid-run.
type BackendFlags struct {
	Name    string
	Threads int
}

// Register adds the flags to fl.
func (b *BackendFlags) Register(fl *pflag.FlagSet, getenv func(string) string) {
	def := "cpu"
	if v := getenv("CORL_BACKEND"); v != "" {
		def = v
	}
	fl.StringVar(&b.Name, "backend", def, "compute backend: cpu or cuda (default from $CORL_BACKEND; cuda opens $CORL_CUDA_DRIVER, else libcuda.so.1)")
	fl.IntVar(&b.Threads, "threads", 0, "CPU threads (0 = all cores)")
}

// Open returns the chosen backend, or an error saying why it cannot run.
func (b *BackendFlags) Open() (gpu.Backend, error) { return newBackend(b.Name, b.Threads) }

func newBackend(name string, threads int) (gpu.Backend, error) {
	switch name {
	case "cpu":
		return cpu.New(threads), nil
	case "cuda":
		be, err := cuda.New()
		if err != nil {
			return nil, fmt.Errorf("--backend cuda: %w (use --backend cpu)", err)
		}
		return be, nil
	default:
		return nil, fmt.Errorf("--backend: %q is not one of cpu, cuda", name)
	}
}

// typeFlag is a flag whose value is a name of one of model's types
// (--kv-cache, --weights), read by that type's parser.
type typeFlag[T ~string] struct {
	v     *T
	def   T                       // what "" stands for
	parse func(string) (T, error) // model.ParseKVType, model.ParseWeightType
	names string                  // the values, for the help: "f32|f16"
}

func (f typeFlag[T]) String() string {
	if f.v == nil || *f.v == "" {
		return string(f.def)
	}
	return string(*f.v)
}

func (f typeFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

func (f typeFlag[T]) Type() string { return f.names }

// RegisterKVCache adds --kv-cache, float32 by default.
func RegisterKVCache(fl *pflag.FlagSet, kv *model.KVType) {
	*kv = model.KVFloat32
	fl.Var(typeFlag[model.KVType]{kv, model.KVFloat32, model.ParseKVType, "f32|f16"}, "kv-cache", "how the KV cache stores keys and values: f32, or f16 (IEEE binary16, each key and value rounded: half the bytes decoding reads)")
}

// RegisterWeights adds --weights, float32 by default.
func RegisterWeights(fl *pflag.FlagSet, w *model.WeightType) {
	*w = model.WeightFloat32
	fl.Var(typeFlag[model.WeightType]{w, model.WeightFloat32, model.ParseWeightType, "f32|bf16|bf16-act"}, "weights", "what decoding's matmuls read the weights as: f32; bf16 (each weight rounded to bfloat16, activations and sums float32: half the bytes decoding a few sequences reads); or bf16-act (the matmuls' inputs rounded to bfloat16 too, sums float32: tensor cores through cuBLAS on a GPU)")
}

// enumFlag is a string flag that takes one of a fixed set of values.
type enumFlag struct {
	v       *string
	allowed []string
}

func (f enumFlag) String() string { return *f.v }

func (f enumFlag) Set(v string) error {
	if !slices.Contains(f.allowed, v) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(f.allowed, ", "))
	}
	*f.v = v
	return nil
}

func (f enumFlag) Type() string { return strings.Join(f.allowed, "|") }

// registerEnum adds a flag taking one of allowed, defaulting to the first.
func registerEnum(fl *pflag.FlagSet, v *string, name, usage string, allowed ...string) {
	*v = allowed[0]
	fl.Var(enumFlag{v, allowed}, name, usage)
}

// connFlags are the connection flags every pipeline command takes.
type connFlags struct {
	file, address, namespace, storeDir string
	metrics                            client.MetricsHandler // set by commands that serve metrics
}

func (f *connFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "config", "", "connection config file (temporal.*, store.*); CORL_* environment variables override it")
	fl.StringVar(&f.address, "address", "", "Temporal frontend host:port (default: a running corl dev's, else 127.0.0.1:7233)")
	fl.StringVar(&f.namespace, "namespace", "", "Temporal namespace (default \"default\")")
	fl.StringVar(&f.storeDir, "store-dir", "", "local blob store directory (default: a running corl dev's, else corl-data/blobs; see store.* for S3)")
}

// dial loads the connection settings and connects to Temporal.
func (f *connFlags) dial(getenv func(string) string) (client.Client, *connect.Connection, error) {
	conn, err := f.load(getenv)
	if err != nil {
		return nil, nil, err
	}
	cl, err := conn.Dial()
	if err != nil {
		return nil, nil, err
	}
	return cl, conn, nil
}

// connect is dial plus the blob store.
func (f *connFlags) connect(ctx context.Context, getenv func(string) string) (client.Client, *connect.Connection, blob.Store, error) {
	cl, conn, err := f.dial(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := conn.OpenStore(ctx)
	if err != nil {
		cl.Close()
		return nil, nil, nil, err
	}
	return cl, conn, store, nil
}

func (f *connFlags) load(getenv func(string) string) (*connect.Connection, error) {
	over := map[string]any{}
	if f.address != "" {
		over["temporal.address"] = f.address
	}
	if f.namespace != "" {
		over["temporal.namespace"] = f.namespace
	}
	if f.storeDir != "" {
		over["store.kind"], over["store.local_dir"] = "local", f.storeDir
	}
	// Nothing says where to connect: a running `corl dev`'s published
	// server and store, wherever it was started.
	if f.file == "" && len(over) == 0 && getenv("CORL_TEMPORAL_ADDRESS") == "" && getenv("CORL_STORE_KIND") == "" &&
		getenv("CORL_STORE_LOCAL_DIR") == "" {
		if dev, ok := connect.RunningDev(getenv); ok {
			over["temporal.address"], over["store.kind"], over["store.local_dir"] = dev.Address, "local", dev.StoreDir
		}
	}
	conn, err := connect.LoadConnection(f.file, getenv, over)
	if err == nil {
		conn.Metrics = f.metrics
	}
	return conn, err
}

// ModelFlags are the architecture flags shared by commands that build a
// model (corl pretrain, corl bench).
type ModelFlags struct {
	family                              string
	layers, dim, heads, kvHeads, hidden int
	vocab, maxSeq                       int
	tied, qkvBias                       bool
}

// Register declares the flags on cmd.
func (f *ModelFlags) Register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.family, "family", "gpt2", "model family: gpt2 or llama")
	fl.IntVar(&f.layers, "layers", 4, "transformer blocks")
	fl.IntVar(&f.dim, "dim", 128, "model width (hidden_size)")
	fl.IntVar(&f.heads, "heads", 4, "attention heads")
	fl.IntVar(&f.kvHeads, "kv-heads", 0, "key/value heads for grouped-query attention (llama; 0 = heads)")
	fl.IntVar(&f.hidden, "hidden", 0, "MLP width (0 = family default)")
	fl.IntVar(&f.vocab, "vocab", 256, "vocabulary size")
	fl.IntVar(&f.maxSeq, "max-seq", 0, "maximum positions (0 = the sequence length)")
	fl.BoolVar(&f.tied, "tied", false, "tie input and output embeddings (llama; gpt2 always ties)")
	fl.BoolVar(&f.qkvBias, "qkv-bias", false, "q/k/v projection bias, as Qwen2 (llama)")
}

// Config is the model the flags describe, for sequences of seq tokens
// (its positions, unless --max-seq says otherwise).
func (f *ModelFlags) Config(seq int) model.Config {
	maxSeq := f.maxSeq
	if maxSeq == 0 {
		maxSeq = seq
	}
	return model.Config{Family: f.family, Layers: f.layers, Dim: f.dim, Heads: f.heads, KVHeads: f.kvHeads,
		Hidden: f.hidden, Vocab: f.vocab, MaxSeq: maxSeq, TiedEmbed: f.tied, QKVBias: f.qkvBias}
}

// Vocab is the flags' vocabulary size.
func (f *ModelFlags) Vocab() int { return f.vocab }
