package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ModelTemplate is a model's own chat template: the Jinja chat_template of
// its tokenizer_config.json, rendered as Hugging Face's
// apply_chat_template renders it (a maintained Jinja engine for chat
// templates, github.com/ardanlabs/jinja; the tests compare its output with
// Hugging Face's Jinja on the Qwen3, Llama-3 and Gemma-3 templates).
type ModelTemplate struct {
	tpl      *jinja.Template
	bos, eos string
}

// NewModelTemplate compiles a chat_template with the model's BOS and EOS
// token strings.
func NewModelTemplate(source, bos, eos string) (*ModelTemplate, error) {
	tpl, err := jinja.Compile(source)
	if err != nil {
		return nil, fmt.Errorf("chat_template: %w", err)
	}
	return &ModelTemplate{tpl: tpl, bos: bos, eos: eos}, nil
}

// LoadModelTemplate reads the chat_template of tokenizer_config.json in a
// model directory: a string, or a list of named templates (the one named
// "default" is used).
func LoadModelTemplate(dir string) (*ModelTemplate, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var source string
	if err := json.Unmarshal(cfg.ChatTemplate, &source); err != nil {
		var named []struct{ Name, Template string }
		if json.Unmarshal(cfg.ChatTemplate, &named) != nil {
			return nil, fmt.Errorf("%s: chat_template: want a string or a list of {name, template}", path)
		}
		for _, n := range named {
			if n.Name == "default" {
				source = n.Template
			}
		}
	}
	if source == "" {
		return nil, fmt.Errorf("%s: no chat_template (use a built-in template: plain, qa, chatml, llama3)", path)
	}
	t, err := NewModelTemplate(source, specialToken(cfg.BOS), specialToken(cfg.EOS))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// specialToken reads "<s>" or {"content": "<s>", ...}.
func specialToken(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct{ Content string }
	json.Unmarshal(raw, &obj)
	return obj.Content
}

// Render renders a conversation; with addGenerationPrompt the text ends
// where the assistant's reply begins.
func (t *ModelTemplate) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.tpl.Render(map[string]any{"messages": msgs, "add_generation_prompt": addGenerationPrompt,
		"bos_token": t.bos, "eos_token": t.eos})
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// Prompter turns a user prompt into model input: a built-in ChatTemplate
// or a model's own template.
type Prompter interface {
	Prompt(user string) (string, error)
}

// Prompt implements Prompter.
func (c ChatTemplate) Prompt(user string) (string, error) { return c.Apply(user), nil }

// Prompt implements Prompter: one user turn and the generation prompt.
func (t *ModelTemplate) Prompt(user string) (string, error) {
	return t.Render([]Message{{Role: "user", Content: user}}, true)
}

// LookupPrompter is a built-in template by name, or, for "model", the
// model directory's own chat_template.
func LookupPrompter(name, modelDir string) (Prompter, error) {
	if strings.EqualFold(name, "model") {
		return LoadModelTemplate(modelDir)
	}
	return LookupTemplate(name)
}
