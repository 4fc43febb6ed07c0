package tokenizer

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkEncodeReference encodes a text file (CORL_TOKBENCH, one call per
// line, as scripts/tokref/bench.js times the reference library) with each
// reference tokenizer, reporting tokens/s.
func BenchmarkEncodeReference(b *testing.B) {
	file := os.Getenv("CORL_TOKBENCH")
	if file == "" {
		b.Skip("set CORL_TOKBENCH to a text file")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, name := range []string{"gpt2", "qwen3", "llama3", "llama2", "gemma3"} {
		path := refFiles(refDir())[name]
		if _, err := os.Stat(path); err != nil {
			b.Skipf("reference tokenizers not installed: %v", err)
		}
		b.Run(name, func(b *testing.B) {
			tok, err := Load(path)
			if err != nil {
				b.Fatal(err)
			}
			tokens := 0
			for b.Loop() {
				tok.cache = map[string][]int32{} // every pass from a cold cache, as the reference's first pass
				for _, l := range lines {
					ids, err := tok.Encode(l)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(ids)
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
