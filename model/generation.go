package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Generation is a checkpoint's generation_config.json: the tokens that end
// a completion and the sampling defaults it was published with. Without
// the file, transformers takes bos_token_id and eos_token_id from
// config.json, and so does ReadGeneration.
type Generation struct {
	// BOS is bos_token_id (-1: none).
	BOS int32
	// EOS is eos_token_id, one id or a list (Llama 3's instruct models end
	// a turn at <|eot_id|> as well as at <|end_of_text|>).
	EOS []int32
	// DoSample, Temperature, TopP and TopK are the published sampling
	// defaults (nil, 0, 0 and 0 where the file is silent).
	DoSample    *bool
	Temperature float64
	TopP        float64
	TopK        int
	// MaxNewTokens is max_new_tokens (0: unset).
	MaxNewTokens int
}

// Ends reports whether id ends a completion under g.
func (g Generation) Ends(id int32) bool {
	for _, e := range g.EOS {
		if e == id {
			return true
		}
	}
	return false
}

// tokenIDs is an id field that may be a number, a list of numbers or null.
type tokenIDs []int32

func (t *tokenIDs) UnmarshalJSON(b []byte) error {
	var one *int32
	if err := json.Unmarshal(b, &one); err == nil {
		if one != nil {
			*t = tokenIDs{*one}
		}
		return nil
	}
	var many []int32
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a token id, a list of token ids or null")
	}
	*t = many
	return nil
}

// ReadGeneration reads dir's generation_config.json, or the token ids of
// its config.json when there is none.
func ReadGeneration(dir string) (Generation, error) {
	var f struct {
		BOS          tokenIDs `json:"bos_token_id"`
		EOS          tokenIDs `json:"eos_token_id"`
		DoSample     *bool    `json:"do_sample"`
		Temperature  float64  `json:"temperature"`
		TopP         float64  `json:"top_p"`
		TopK         int      `json:"top_k"`
		MaxNewTokens int      `json:"max_new_tokens"`
	}
	path := filepath.Join(dir, "generation_config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		path = filepath.Join(dir, "config.json")
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return Generation{}, fmt.Errorf("generation config: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return Generation{}, fmt.Errorf("%s: %w", path, err)
	}
	g := Generation{BOS: -1, EOS: f.EOS, DoSample: f.DoSample, Temperature: f.Temperature, TopP: f.TopP, TopK: f.TopK, MaxNewTokens: f.MaxNewTokens}
	switch {
	case len(f.BOS) > 1:
		return Generation{}, fmt.Errorf("%s: bos_token_id: one id, got %v", path, f.BOS)
	case len(f.BOS) == 1:
		g.BOS = f.BOS[0]
	}
	for _, id := range append(append([]int32(nil), f.BOS...), f.EOS...) {
		if id < 0 {
			return Generation{}, fmt.Errorf("%s: token id %d is negative", path, id)
		}
	}
	if g.Temperature < 0 || g.TopP < 0 || g.TopP > 1 || g.TopK < 0 || g.MaxNewTokens < 0 {
		return Generation{}, fmt.Errorf("%s: temperature %v, top_p %v, top_k %d, max_new_tokens %d: want temperature, top_k, max_new_tokens >= 0 and top_p in [0, 1]",
			path, g.Temperature, g.TopP, g.TopK, g.MaxNewTokens)
	}
	return g, nil
}
