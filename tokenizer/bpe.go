package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BPE is a byte-pair-encoding tokenizer loaded from a Hugging Face
// tokenizer.json.
type BPE struct {
	vocab        map[string]int32
	inv          []string // id -> token
	ranks        map[[2]string]int
	special      []special // longest first
	eos          int32
	unk          int32
	fallback     bool // <0xXX> tokens for unknown bytes
	ignoreMerges bool

	mode      preMode
	addPrefix bool
	split     *splitter // nil: no regex split
	cache     map[string][]int32
	raw       []byte // the tokenizer.json it came from, for Save
}

type special struct {
	text string
	id   int32
}

type preMode int

const (
	byteLevel preMode = iota // bytes mapped to printable runes (GPT-2)
	metaspace                // spaces as U+2581, characters as is (SentencePiece)
)

const metaSpace = "\u2581"

// fileJSON is the subset of tokenizer.json corl reads.
type fileJSON struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer *preJSON `json:"pre_tokenizer"`
	Decoder      *preJSON `json:"decoder"`
	Model        struct {
		Type         string           `json:"type"`
		Vocab        map[string]int32 `json:"vocab"`
		Merges       json.RawMessage  `json:"merges"`
		ByteFallback bool             `json:"byte_fallback"`
		UnkToken     *string          `json:"unk_token"`
		IgnoreMerges bool             `json:"ignore_merges"`
	} `json:"model"`
}

type preJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace *bool  `json:"add_prefix_space,omitempty"`
	PrependScheme  string `json:"prepend_scheme,omitempty"`
	UseRegex       *bool  `json:"use_regex,omitempty"`
	Pattern        *struct {
		Regex  string `json:"Regex,omitempty"`
		String string `json:"String,omitempty"`
	} `json:"pattern,omitempty"`
	Pretokenizers []preJSON `json:"pretokenizers,omitempty"`
	Decoders      []preJSON `json:"decoders,omitempty"`
}

// GPT-2's pre-tokenizer pattern (ByteLevel with use_regex).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// Load reads a tokenizer.json file, or the one in a model directory.
func Load(path string) (*BPE, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a tokenizer from tokenizer.json contents.
func Parse(data []byte) (*BPE, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("model.type: %q is not supported (want BPE)", f.Model.Type)
	}
	if len(f.Model.Vocab) == 0 {
		return nil, fmt.Errorf("model.vocab: empty")
	}
	t := &BPE{vocab: f.Model.Vocab, ranks: map[[2]string]int{}, eos: -1, unk: -1,
		fallback: f.Model.ByteFallback, ignoreMerges: f.Model.IgnoreMerges, cache: map[string][]int32{}, raw: append([]byte(nil), data...)}
	for _, a := range f.AddedTokens {
		t.vocab[a.Content] = a.ID
		t.special = append(t.special, special{a.Content, a.ID})
	}
	sort.Slice(t.special, func(i, j int) bool { return len(t.special[i].text) > len(t.special[j].text) })
	maxID := int32(-1)
	for tok, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab: token %q has negative id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	t.inv = make([]string, maxID+1)
	for tok, id := range t.vocab {
		t.inv[id] = tok
	}
	if err := t.parseMerges(f.Model.Merges); err != nil {
		return nil, err
	}
	if f.Model.UnkToken != nil {
		id, ok := t.vocab[*f.Model.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token: %q is not in the vocabulary", *f.Model.UnkToken)
		}
		t.unk = id
	}
	for _, name := range []string{"<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "</s>", "<|eot_id|>"} {
		if id, ok := t.vocab[name]; ok {
			t.eos = id
			break
		}
	}
	if err := t.configurePre(f.PreTokenizer, f.Decoder); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *BPE) parseMerges(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var asStrings []string
	var asPairs [][2]string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		for i, m := range asStrings {
			a, b, ok := strings.Cut(m, " ")
			if !ok {
				return fmt.Errorf("model.merges[%d]: %q is not two tokens separated by a space", i, m)
			}
			asPairs = append(asPairs, [2]string{a, b})
		}
	} else if err := json.Unmarshal(raw, &asPairs); err != nil {
		return fmt.Errorf("model.merges: want strings \"a b\" or pairs [a, b]: %w", err)
	}
	for i, p := range asPairs {
		if _, ok := t.vocab[p[0]+p[1]]; !ok {
			return fmt.Errorf("model.merges[%d]: merge result %q is not in the vocabulary", i, p[0]+p[1])
		}
		if _, dup := t.ranks[p]; !dup {
			t.ranks[p] = i
		}
	}
	return nil
}

// configurePre reads the pre-tokenizer: ByteLevel (optionally after a regex
// Split, as Qwen2 and Llama-3 write it) or Metaspace.
func (t *BPE) configurePre(pre, dec *preJSON) error {
	var steps []preJSON
	if pre != nil {
		if pre.Type == "Sequence" {
			steps = pre.Pretokenizers
		} else {
			steps = []preJSON{*pre}
		}
	}
	t.mode = byteLevel
	if dec != nil && dec.Type == "Sequence" {
		for _, d := range dec.Decoders {
			if d.Type == "ByteFallback" || d.Type == "Replace" {
				t.mode = metaspace
			}
		}
	}
	pattern := ""
	for i, s := range steps {
		switch s.Type {
		case "Split":
			if s.Pattern == nil || s.Pattern.Regex == "" {
				return fmt.Errorf("pre_tokenizer.pretokenizers[%d]: Split without a Regex pattern is not supported", i)
			}
			pattern = s.Pattern.Regex
		case "ByteLevel":
			t.mode = byteLevel
			if s.AddPrefixSpace != nil {
				t.addPrefix = *s.AddPrefixSpace
			}
			if (s.UseRegex == nil || *s.UseRegex) && pattern == "" {
				pattern = gpt2Pattern
			}
		case "Metaspace":
			t.mode = metaspace
			t.addPrefix = s.PrependScheme != "never"
		case "Digits", "Punctuation", "Whitespace", "WhitespaceSplit":
			return fmt.Errorf("pre_tokenizer: %s is not supported", s.Type)
		default:
			return fmt.Errorf("pre_tokenizer: unknown type %q", s.Type)
		}
	}
	if pattern != "" {
		sp, err := newSplitter(pattern)
		if err != nil {
			return err
		}
		t.split = sp
	}
	return nil
}

// VocabSize implements Tokenizer.
func (t *BPE) VocabSize() int { return len(t.inv) }

// EOS implements Tokenizer.
func (t *BPE) EOS() int32 { return t.eos }

// TokenID returns the id of a token string (special or not).
func (t *BPE) TokenID(tok string) (int32, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// Encode implements Tokenizer.
func (t *BPE) Encode(text string) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("encode: text is not valid UTF-8")
	}
	var out []int32
	for len(text) > 0 {
		at, sp := t.nextSpecial(text)
		if err := t.encodeOrdinary(text[:at], &out); err != nil {
			return nil, err
		}
		if sp == nil {
			break
		}
		out = append(out, sp.id)
		text = text[at+len(sp.text):]
	}
	return out, nil
}

// nextSpecial finds the earliest special token in text (longest on ties).
func (t *BPE) nextSpecial(text string) (int, *special) {
	best, bestAt := -1, len(text)
	for i := range t.special {
		if j := strings.Index(text, t.special[i].text); j >= 0 && j < bestAt {
			best, bestAt = i, j
		}
	}
	if best < 0 {
		return len(text), nil
	}
	return bestAt, &t.special[best]
}

func (t *BPE) encodeOrdinary(text string, out *[]int32) error {
	if text == "" {
		return nil
	}
	if t.mode == metaspace {
		text = strings.ReplaceAll(text, " ", metaSpace)
		if t.addPrefix && !strings.HasPrefix(text, metaSpace) {
			text = metaSpace + text
		}
	} else if t.addPrefix && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	pieces := []string{text}
	if t.split != nil {
		pieces = t.split.split(text)
	}
	for _, p := range pieces {
		ids, err := t.encodeWord(p)
		if err != nil {
			return err
		}
		*out = append(*out, ids...)
	}
	return nil
}

// encodeWord applies the merges to one pre-token, lowest rank first.
func (t *BPE) encodeWord(word string) ([]int32, error) {
	if ids, ok := t.cache[word]; ok {
		return ids, nil
	}
	var syms []string
	if t.mode == byteLevel {
		for i := 0; i < len(word); i++ {
			syms = append(syms, string(byteToRune[word[i]]))
		}
	} else {
		for _, r := range word {
			syms = append(syms, string(r))
		}
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[strings.Join(syms, "")]; ok {
			t.cache[word] = []int32{id}
			return []int32{id}, nil
		}
	}
	for len(syms) > 1 {
		best, bestRank := -1, int(^uint(0)>>1)
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		// Merge every occurrence of the best pair, left to right.
		a, b := syms[best], syms[best+1]
		merged := syms[:0:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				merged = append(merged, a+b)
				i++
			} else {
				merged = append(merged, syms[i])
			}
		}
		syms = merged
	}
	ids := make([]int32, 0, len(syms))
	for _, s := range syms {
		if id, ok := t.vocab[s]; ok {
			ids = append(ids, id)
			continue
		}
		if t.fallback {
			var bytesIDs []int32
			for _, c := range []byte(s) {
				if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", c)]; ok {
					bytesIDs = append(bytesIDs, id)
				}
			}
			if len(bytesIDs) == len(s) {
				ids = append(ids, bytesIDs...)
				continue
			}
		}
		if t.unk < 0 {
			return nil, fmt.Errorf("encode: %q is not in the vocabulary and the tokenizer has no unk token or byte fallback for it", s)
		}
		ids = append(ids, t.unk)
	}
	t.cache[word] = ids
	return ids, nil
}

// Decode implements Tokenizer. Unknown ids are skipped.
func (t *BPE) Decode(ids []int32) string {
	var b strings.Builder
	var pending []byte // byte-level or fallback bytes awaiting UTF-8 assembly
	flush := func() {
		b.Write(pending)
		pending = pending[:0]
	}
	isSpecial := func(id int32) bool {
		for _, s := range t.special {
			if s.id == id {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.inv) || t.inv[id] == "" {
			continue
		}
		tok := t.inv[id]
		switch {
		case isSpecial(id):
			flush()
			b.WriteString(tok)
		case t.mode == byteLevel:
			for _, r := range tok {
				if c, ok := runeToByte[r]; ok {
					pending = append(pending, c)
				} else {
					pending = utf8.AppendRune(pending, r)
				}
			}
		default:
			if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
				if c, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
					pending = append(pending, byte(c))
					continue
				}
			}
			pending = append(pending, strings.ReplaceAll(tok, metaSpace, " ")...)
		}
	}
	flush()
	s := b.String()
	if t.mode == metaspace && t.addPrefix {
		s = strings.TrimPrefix(s, " ")
	}
	return s
}

// byteToRune is GPT-2's bytes_to_unicode: printable bytes map to themselves,
// the rest to code points from 256 up, so every byte is a visible character.
var byteToRune [256]rune
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// splitter implements the pre-tokenizer regexes. Go's regexp has no
// lookahead, so the common tail "\s+(?!\S)|\s+" (whitespace, leaving the last
// space to the next word) is implemented by hand after the other alternatives.
type splitter struct {
	main   *regexp.Regexp // anchored; nil if the pattern is only whitespace rules
	wsTail bool
}

func newSplitter(pattern string) (*splitter, error) {
	const tail = `|\s+(?!\S)|\s+`
	s := &splitter{}
	if strings.HasSuffix(pattern, tail) {
		pattern = strings.TrimSuffix(pattern, tail)
		s.wsTail = true
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)`)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer pattern %q: %w", pattern, err)
	}
	s.main = re
	return s, nil
}

func (s *splitter) split(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		n := 0
		if loc := s.main.FindStringIndex(text[i:]); loc != nil && loc[1] > 0 {
			n = loc[1]
		} else if s.wsTail {
			for j, r := range text[i:] {
				if !unicode.IsSpace(r) {
					break
				}
				n = j + utf8.RuneLen(r)
			}
			if n > 0 && i+n < len(text) { // followed by a non-space: leave it the last space
				_, last := utf8.DecodeLastRuneInString(text[i : i+n])
				if n > last {
					n -= last
				}
			}
		}
		if n == 0 { // nothing matched: a character on its own
			_, n = utf8.DecodeRuneInString(text[i:])
		}
		out = append(out, text[i:i+n])
		i += n
	}
	return out
}
