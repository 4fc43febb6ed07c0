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
