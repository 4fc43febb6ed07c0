package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// EndOfText is the end-of-sequence token of the byte tokenizer (id 256).
const EndOfText = "<|endoftext|>"

// NewBytes returns the byte-level tokenizer of corl's own small models: ids
// 0-255 are the bytes (written with GPT-2's byte-to-character map, so the file
// is an ordinary Hugging Face tokenizer.json), 256 is <|endoftext|>. Any UTF-8
// text round-trips.
func NewBytes() *BPE {
	vocab := make(map[string]int32, 256)
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = int32(b)
	}
	f := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{{"id": 256, "content": EndOfText, "special": true,
			"single_word": false, "lstrip": false, "rstrip": false, "normalized": false}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}, "byte_fallback": false, "unk_token": nil},
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(err)
	}
	t, err := Parse(data)
	if err != nil {
		panic(fmt.Sprintf("tokenizer: built-in byte tokenizer: %v", err))
	}
	return t
}

// JSON is the tokenizer.json the tokenizer was parsed from.
func (t *BPE) JSON() []byte { return t.raw }

// Save writes the tokenizer as tokenizer.json in dir.
func (t *BPE) Save(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), t.raw, 0o644); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	return nil
}
