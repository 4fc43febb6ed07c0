package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// BPE is a tokenizer loaded from a Hugging Face tokenizer.json with a BPE
// model. Encoding follows the tokenizers library step by step (added
// tokens, normalizer, pre-tokenizer, model, post-processor), so that ids
// equal the library's; the conformance test checks that on real files.
type BPE struct {
	vocab     map[string]int32 // the model's vocabulary
	inv       []string         // id -> token, added tokens included
	merges    map[uint64]merge // (left id, right id) -> rank and result
	unk       int32
	fallback  bool // byte_fallback: <0xXX> tokens for characters not in the vocabulary
	byteIDs   [256]int32
	fuseUnk   bool
	ignore    bool // ignore_merges: a whole piece in the vocabulary is one token
	contPref  string
	eowSuffix string

	added    []addedToken
	rawTrie  *trie // added tokens matched on the raw text
	normTrie *trie // added tokens matched after normalization

	norm normalizer
	pre  preTokenizer
	post []postItem // the single-sequence template; nil: nothing added
	dec  []decoder

	eos   int32
	cache map[string][]int32
	raw   []byte // the tokenizer.json it came from, for Save
}

type merge struct{ rank, id int32 }

type addedToken struct {
	content                           string
	id                                int32
	normalized, lstrip, rstrip, sword bool
}

const metaSpace = "\u2581"

// fileJSON is the part of tokenizer.json corl reads.
type fileJSON struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		Normalized *bool  `json:"normalized"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
	} `json:"added_tokens"`
	Normalizer    *normJSON `json:"normalizer"`
	PreTokenizer  *preJSON  `json:"pre_tokenizer"`
	PostProcessor *postJSON `json:"post_processor"`
	Decoder       *decJSON  `json:"decoder"`
	Model         struct {
		Type                    string           `json:"type"`
		Vocab                   map[string]int32 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
		ByteFallback            bool             `json:"byte_fallback"`
		FuseUnk                 bool             `json:"fuse_unk"`
		UnkToken                *string          `json:"unk_token"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		Dropout                 *float64         `json:"dropout"`
	} `json:"model"`
}

type patternJSON struct {
	Regex  string `json:"Regex,omitempty"`
	String string `json:"String,omitempty"`
}

type normJSON struct {
	Type               string       `json:"type"`
	Normalizers        []normJSON   `json:"normalizers,omitempty"`
	Pattern            *patternJSON `json:"pattern,omitempty"`
	Content            string       `json:"content,omitempty"`
	Prepend            string       `json:"prepend,omitempty"`
	StripLeft          *bool        `json:"left,omitempty"`
	StripRight         *bool        `json:"right,omitempty"`
	CleanText          *bool        `json:"clean_text,omitempty"`
	HandleChineseChars *bool        `json:"handle_chinese_chars,omitempty"`
	StripAccents       *bool        `json:"strip_accents,omitempty"`
	Lowercase          *bool        `json:"lowercase,omitempty"`
}

type preJSON struct {
	Type             string       `json:"type"`
	AddPrefixSpace   *bool        `json:"add_prefix_space,omitempty"`
	PrependScheme    string       `json:"prepend_scheme,omitempty"`
	Replacement      string       `json:"replacement,omitempty"`
	Split            *bool        `json:"split,omitempty"`
	UseRegex         *bool        `json:"use_regex,omitempty"`
	Pattern          *patternJSON `json:"pattern,omitempty"`
	Behavior         string       `json:"behavior,omitempty"`
	Invert           bool         `json:"invert,omitempty"`
	IndividualDigits bool         `json:"individual_digits,omitempty"`
	Pretokenizers    []preJSON    `json:"pretokenizers,omitempty"`
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
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Vocab != nil) {
		return nil, fmt.Errorf("model.type: %q is not supported (want BPE)", f.Model.Type)
	}
	if len(f.Model.Vocab) == 0 {
		return nil, fmt.Errorf("model.vocab: empty")
	}
	if f.Model.Dropout != nil && *f.Model.Dropout > 0 {
		return nil, fmt.Errorf("model.dropout: %v; BPE dropout is for training and is not supported", *f.Model.Dropout)
	}
	t := &BPE{vocab: f.Model.Vocab, merges: map[uint64]merge{}, unk: -1, eos: -1,
		fallback: f.Model.ByteFallback, fuseUnk: f.Model.FuseUnk, ignore: f.Model.IgnoreMerges,
		cache: map[string][]int32{}, raw: append([]byte(nil), data...)}
	if p := f.Model.ContinuingSubwordPrefix; p != nil {
		t.contPref = *p
	}
	if s := f.Model.EndOfWordSuffix; s != nil {
		t.eowSuffix = *s
	}
	maxID := int32(-1)
	for tok, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab: token %q has negative id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	t.inv = make([]string, maxID+1)
	for tok, id := range t.vocab {
		t.inv[id] = tok
	}
	var raw, normed []addedToken
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("added_tokens: %q has negative id %d", a.Content, a.ID)
		}
		normalized := !a.Special // the library's default: special tokens are not normalized
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		at := addedToken{content: a.Content, id: a.ID, normalized: normalized, lstrip: a.LStrip, rstrip: a.RStrip, sword: a.SingleWord}
		t.added = append(t.added, at)
		t.inv[a.ID] = a.Content
		if at.normalized {
			normed = append(normed, at)
		} else {
			raw = append(raw, at)
		}
	}
	t.rawTrie, t.normTrie = newTrie(raw), newTrie(normed)
	for b := range t.byteIDs {
		t.byteIDs[b] = -1
		if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteIDs[b] = id
		}
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
	for _, name := range []string{"<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "</s>", "<|eot_id|>", "<eos>"} {
		if id, ok := t.TokenID(name); ok {
			t.eos = id
			break
		}
	}
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = parsePre(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.post, err = t.parsePost(f.PostProcessor, "post_processor"); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	return t, nil
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

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
		a, okA := t.vocab[p[0]]
		b, okB := t.vocab[p[1]]
		if !okA || !okB {
			return fmt.Errorf("model.merges[%d]: %q or %q is not in the vocabulary", i, p[0], p[1])
		}
		right := strings.TrimPrefix(p[1], t.contPref)
		id, ok := t.vocab[p[0]+right]
		if !ok {
			return fmt.Errorf("model.merges[%d]: merge result %q is not in the vocabulary", i, p[0]+right)
		}
		// As the library builds its map: a repeated pair keeps its last rank.
		t.merges[pairKey(a, b)] = merge{rank: int32(i), id: id}
	}
	return nil
}

// VocabSize implements Tokenizer.
func (t *BPE) VocabSize() int { return len(t.inv) }

// EOS implements Tokenizer.
func (t *BPE) EOS() int32 { return t.eos }

// Token returns the string of id as the vocabulary (or the added tokens)
// spell it, and whether it is an added token; "" and false for an id out of
// range.
func (t *BPE) Token(id int32) (tok string, added bool) {
	if id < 0 || int(id) >= len(t.inv) {
		return "", false
	}
	for _, a := range t.added {
		if a.id == id {
			return a.content, true
		}
	}
	return t.inv[id], false
}

// TokenID returns the id of a token string (added or in the vocabulary).
func (t *BPE) TokenID(tok string) (int32, bool) {
	for _, a := range t.added {
		if a.content == tok {
			return a.id, true
		}
	}
	id, ok := t.vocab[tok]
	return id, ok
}

// Encode implements Tokenizer: the ids of text without the special tokens
// a post-processor adds (add_special_tokens=False).
func (t *BPE) Encode(text string) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("encode: text is not valid UTF-8")
	}
	var out []int32
	var err error
	t.rawTrie.segments(text, 0, func(s string, offset int, id int32) {
		if err != nil {
			return
		}
		if id >= 0 {
			out = append(out, id)
			return
		}
		if t.norm != nil {
			s = t.norm.normalize(s)
		}
		t.normTrie.segments(s, offset, func(s string, offset int, id int32) {
			if err != nil {
				return
			}
			if id >= 0 {
				out = append(out, id)
				return
			}
			err = t.encodeSegment(piece{s: s, first: offset == 0}, &out)
		})
	})
	return out, err
}

// EncodeSpecial is Encode with the special tokens the post-processor adds
// (a BOS for Llama and Gemma; nothing for GPT-2 and Qwen).
func (t *BPE) EncodeSpecial(text string) ([]int32, error) {
	ids, err := t.Encode(text)
	if err != nil || t.post == nil {
		return ids, err
	}
	var out []int32
	for _, it := range t.post {
		if it.sequence {
			out = append(out, ids...)
		} else {
			out = append(out, it.ids...)
		}
	}
	return out, nil
}

func (t *BPE) encodeSegment(p piece, out *[]int32) error {
	if p.s == "" {
		return nil
	}
	pieces := []piece{p}
	if t.pre != nil {
		pieces = t.pre.pre(p, nil)
	}
	for _, q := range pieces {
		ids, err := t.encodeWord(q.s)
		if err != nil {
			return err
		}
		*out = append(*out, ids...)
	}
	return nil
}

// maxCached is the longest piece whose ids are cached (the library's
// MAX_LENGTH), and maxCacheEntries bounds the cache.
const (
	maxCached       = 256
	maxCacheEntries = 1 << 16
)

// encodeWord is the BPE model on one piece: its characters (with byte
// fallback, or unk, for those not in the vocabulary), then merges lowest
// rank first, leftmost first among equals, with a heap as the library does
// (O(n log n) in the piece's length).
func (t *BPE) encodeWord(w string) ([]int32, error) {
	if w == "" {
		return nil, nil
	}
	if t.ignore {
		if id, ok := t.vocab[w]; ok {
			return []int32{id}, nil
		}
	}
	if ids, ok := t.cache[w]; ok {
		return ids, nil
	}
	syms := make([]symbol, 0, len(w))
	unk, unkLen := int32(-1), 0
	flushUnk := func() {
		if unk >= 0 {
			syms = append(syms, symbol{id: unk, n: unkLen})
			unk = -1
		}
	}
	for i, r := range w {
		n := utf8.RuneLen(r)
		s := w[i : i+n]
		if i > 0 && t.contPref != "" {
			s = t.contPref + s
		}
		if i+n == len(w) && t.eowSuffix != "" {
			s += t.eowSuffix
		}
		if id, ok := t.vocab[s]; ok {
			flushUnk()
			syms = append(syms, symbol{id: id, n: n})
			continue
		}
		if t.fallback && t.allBytes(s) {
			flushUnk()
			for k := 0; k < len(s); k++ {
				syms = append(syms, symbol{id: t.byteIDs[s[k]], n: 1})
			}
			continue
		}
		if t.unk < 0 {
			return nil, fmt.Errorf("encode: %q is not in the vocabulary and the tokenizer has no unk token or byte fallback for it", s)
		}
		if unk >= 0 && t.fuseUnk {
			unkLen += n
			continue
		}
		flushUnk()
		unk, unkLen = t.unk, n
	}
	flushUnk()
	ids := t.mergeAll(syms)
	if len(w) < maxCached {
		if len(t.cache) >= maxCacheEntries {
			clear(t.cache)
		}
		t.cache[w] = ids
	}
	return ids, nil
}

func (t *BPE) allBytes(s string) bool {
	for k := 0; k < len(s); k++ {
		if t.byteIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

func usesByteLevel(p preTokenizer) bool {
	switch p := p.(type) {
	case byteLevelPre:
		return true
	case preSequence:
		for _, q := range p {
			if usesByteLevel(q) {
				return true
			}
		}
	}
	return false
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
