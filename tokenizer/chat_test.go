package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestModelTemplatesMatchHuggingFace: the Qwen3, Llama-3 and Gemma-3 chat
// templates render every golden conversation (with and without the
// generation prompt) exactly as Hugging Face's Jinja does (goldens and
// template text from scripts/tokref/chat.js).
func TestModelTemplatesMatchHuggingFace(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "chat", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, f := range files {
		var g struct {
			Model        string `json:"model"`
			ChatTemplate string `json:"chat_template"`
			BOS          string `json:"bos_token"`
			EOS          string `json:"eos_token"`
			Cases        []struct {
				Messages            []Message `json:"messages"`
				AddGenerationPrompt bool      `json:"add_generation_prompt"`
				Want                string    `json:"want"`
			} `json:"cases"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		tpl, err := NewModelTemplate(g.ChatTemplate, g.BOS, g.EOS)
		if err != nil {
			t.Fatalf("%s: %v", g.Model, err)
		}
		for i, c := range g.Cases {
			got, err := tpl.Render(c.Messages, c.AddGenerationPrompt)
			if err != nil || got != c.Want {
				t.Errorf("%s case %d: %v\n got %q\nwant %q", g.Model, i, err, got, c.Want)
			}
		}
	}
}

func TestLoadModelTemplate(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"}]}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LookupPrompter("model", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Prompt("hi"); err != nil || got != "<s>[user] hi[assistant]" {
		t.Errorf("Prompt = %q, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "</s>"}`), 0o644)
	if _, err := LookupPrompter("model", dir); err == nil {
		t.Error("a config without chat_template was accepted")
	}
}
