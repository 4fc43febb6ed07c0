package tokenizer

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

type symbol struct {
	id         int32
	n          int // bytes; 0: merged away
	prev, next int
}

type mergeItem struct {
	rank int32
	pos  int
	id   int32
}

type mergeHeap []mergeItem

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (t *BPE) mergeAll(syms []symbol) []int32 {
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	h := make(mergeHeap, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = append(h, mergeItem{m.rank, i, m.id})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		top := heap.Pop(&h).(mergeItem)
		cur := &syms[top.pos]
		if cur.n == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		if m, ok := t.merges[pairKey(cur.id, right.id)]; !ok || m.id != top.id {
			continue // a stale entry: one of the pair merged since
		}
		cur.id, cur.n = top.id, cur.n+right.n
		syms[cur.next].n = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				heap.Push(&h, mergeItem{m.rank, cur.prev, m.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := t.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				heap.Push(&h, mergeItem{m.rank, top.pos, m.id})
			}
		}
	}
	ids := make([]int32, 0, len(syms))
	for _, s := range syms {
		if s.n > 0 {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// trie finds added tokens leftmost-longest, as the library's Aho-Corasick
// automaton does.
type trie struct {
	next  map[byte]*trie
	token *addedToken
}

func newTrie(tokens []addedToken) *trie {
	if len(tokens) == 0 {
		return nil
	}
	root := &trie{}
	for i := range tokens {
		n := root
		for k := 0; k < len(tokens[i].content); k++ {
			c := tokens[i].content[k]
			if n.next == nil {
				n.next = map[byte]*trie{}
			}
			nx := n.next[c]
			if nx == nil {
				nx = &trie{}
				n.next[c] = nx
			}
			n = nx
		}
		if tokens[i].content != "" {
			n.token = &tokens[i]
		}
	}
	return root
}

// longestAt is the longest token starting at s[i:] (nil: none).
func (tr *trie) longestAt(s string, i int) (*addedToken, int) {
	var best *addedToken
	end := 0
	n := tr
	for j := i; j < len(s); j++ {
		if n = n.next[s[j]]; n == nil {
			break
		}
		if n.token != nil {
			best, end = n.token, j+1
		}
	}
	return best, end
}

// segments calls fn for the pieces of s (starting at offset in the
// original text) between added tokens (id -1) and for each token found,
// honouring lstrip, rstrip and single_word as the library does.
func (tr *trie) segments(s string, offset int, fn func(s string, offset int, id int32)) {
	if tr == nil {
		fn(s, offset, -1)
		return
	}
	last := 0
	for i := 0; i < len(s); {
		tok, end := tr.longestAt(s, i)
		if tok == nil {
			i++
			continue
		}
		start, stop := i, end
		if tok.sword && !((start == 0 || !endsWithWord(s[:start])) && (stop == len(s) || !startsWithWord(s[stop:]))) {
			i++
			continue
		}
		if tok.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], isWhitespace)), last)
		}
		if tok.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], isWhitespace))
		}
		if last < start {
			fn(s[last:start], offset+last, -1)
		}
		fn(s[start:stop], offset+start, tok.id)
		last, i = stop, stop
	}
	if last < len(s) || len(s) == 0 {
		fn(s[last:], offset+last, -1)
	}
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordChar(r)
}

func isWordChar(r rune) bool {
	return r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 127 && !isWhitespace(r) && !isPunctuation(r)
}

// postJSON is a post-processor: a template (or Bert/Roberta's fixed one),
// ByteLevel (offsets only) or a sequence of them.
type postJSON struct {
	Type   string `json:"type"`
	Single []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken,omitempty"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence,omitempty"`
	} `json:"single,omitempty"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens,omitempty"`
	Sep        []json.RawMessage `json:"sep,omitempty"`
	Cls        []json.RawMessage `json:"cls,omitempty"`
	Processors []postJSON        `json:"processors,omitempty"`
}

type postItem struct {
	sequence bool
	ids      []int32
}

func (t *BPE) parsePost(j *postJSON, at string) ([]postItem, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "ByteLevel":
		return nil, nil
	case "TemplateProcessing":
		var items []postItem
		for i, it := range j.Single {
			switch {
			case it.Sequence != nil:
				items = append(items, postItem{sequence: true})
			case it.SpecialToken != nil:
				st, ok := j.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("%s.single[%d]: special token %q is not in special_tokens", at, i, it.SpecialToken.ID)
				}
				items = append(items, postItem{ids: st.IDs})
			}
		}
		return items, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenIDOf(j.Cls, at+".cls")
		if err != nil {
			return nil, err
		}
		sep, err := tokenIDOf(j.Sep, at+".sep")
		if err != nil {
			return nil, err
		}
		return []postItem{{ids: []int32{cls}}, {sequence: true}, {ids: []int32{sep}}}, nil
	case "Sequence":
		items := []postItem{{sequence: true}}
		for i := range j.Processors {
			inner, err := t.parsePost(&j.Processors[i], fmt.Sprintf("%s.processors[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if inner == nil {
				continue
			}
			var next []postItem
			for _, it := range inner {
				if it.sequence {
					next = append(next, items...)
				} else {
					next = append(next, it)
				}
			}
			items = next
		}
		return items, nil
	}
	return nil, fmt.Errorf("%s: unknown post-processor type %q", at, j.Type)
}

// tokenIDOf reads Bert's ["[SEP]", 102] pair.
func tokenIDOf(pair []json.RawMessage, at string) (int32, error) {
	if len(pair) != 2 {
		return 0, fmt.Errorf("%s: want [token, id]", at)
	}
	var id int32
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, fmt.Errorf("%s: %w", at, err)
	}
	return id, nil
}

// decJSON is a decoder.
type decJSON struct {
	Type          string       `json:"type"`
	Decoders      []decJSON    `json:"decoders,omitempty"`
	Pattern       *patternJSON `json:"pattern,omitempty"`
	Content       string       `json:"content,omitempty"`
	Start         int          `json:"start,omitempty"`
	Stop          int          `json:"stop,omitempty"`
	Replacement   string       `json:"replacement,omitempty"`
	PrependScheme string       `json:"prepend_scheme,omitempty"`
	AddPrefix     *bool        `json:"add_prefix_space,omitempty"`
	Prefix        string       `json:"prefix,omitempty"`
	Suffix        string       `json:"suffix,omitempty"`
}

// decoder turns token strings into text pieces (a step of the chain).
type decoder func(tokens []string) []string

func parseDecoder(j *decJSON, at string) ([]decoder, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "Sequence":
		var ds []decoder
		for i := range j.Decoders {
			d, err := parseDecoder(&j.Decoders[i], fmt.Sprintf("%s.decoders[%d]", at, i))
			if err != nil {
				return nil, err
			}
			ds = append(ds, d...)
		}
		return ds, nil
	case "ByteLevel":
		return []decoder{byteLevelDecode}, nil
	case "Replace":
		if j.Pattern == nil || j.Pattern.String == "" {
			return nil, fmt.Errorf("%s: Replace decoders with a regex are not supported", at)
		}
		from, to := j.Pattern.String, j.Content
		return []decoder{func(ts []string) []string {
			for i := range ts {
				ts[i] = strings.ReplaceAll(ts[i], from, to)
			}
			return ts
		}}, nil
	case "ByteFallback":
		return []decoder{byteFallbackDecode}, nil
	case "Fuse":
		return []decoder{func(ts []string) []string { return []string{strings.Join(ts, "")} }}, nil
	case "Strip":
		content, start, stop := j.Content, j.Start, j.Stop
		return []decoder{func(ts []string) []string {
			for i, tok := range ts {
				for k := 0; k < start && strings.HasPrefix(tok, content) && content != ""; k++ {
					tok = tok[len(content):]
				}
				for k := 0; k < stop && strings.HasSuffix(tok, content) && content != ""; k++ {
					tok = tok[:len(tok)-len(content)]
				}
				ts[i] = tok
			}
			return ts
		}}, nil
	case "Metaspace":
		repl := j.Replacement
		if repl == "" {
			repl = metaSpace
		}
		prepend := j.PrependScheme != "never" && !(j.PrependScheme == "" && j.AddPrefix != nil && !*j.AddPrefix)
		return []decoder{func(ts []string) []string {
			for i := range ts {
				ts[i] = strings.ReplaceAll(ts[i], repl, " ")
				if i == 0 && prepend {
					ts[i] = strings.TrimPrefix(ts[i], " ")
				}
			}
			return ts
		}}, nil
	case "WordPiece":
		prefix := j.Prefix
		if prefix == "" {
			prefix = "##"
		}
		return []decoder{func(ts []string) []string {
			for i := range ts {
				if i > 0 {
					if strings.HasPrefix(ts[i], prefix) {
						ts[i] = ts[i][len(prefix):]
					} else {
						ts[i] = " " + ts[i]
					}
				}
			}
			return ts
		}}, nil
	case "BPEDecoder":
		suffix := j.Suffix
		if suffix == "" {
			suffix = "</w>"
		}
		return []decoder{func(ts []string) []string {
			for i := range ts {
				if i < len(ts)-1 {
					ts[i] = strings.ReplaceAll(ts[i], suffix, " ")
				} else {
					ts[i] = strings.ReplaceAll(ts[i], suffix, "")
				}
			}
			return ts
		}}, nil
	}
	return nil, fmt.Errorf("%s: unknown decoder type %q", at, j.Type)
}

// byteLevelDecode maps GPT-2's byte alphabet back to bytes. The bytes of
// an incomplete character are kept as they are (not replaced by U+FFFD),
// so text decoded a token at a time still grows by prefixes.
func byteLevelDecode(ts []string) []string {
	var b []byte
	for _, tok := range ts {
		ok := true
		start := len(b)
		for _, r := range tok {
			c, found := runeToByte[r]
			if !found {
				ok = false
				break
			}
			b = append(b, c)
		}
		if !ok {
			b = append(b[:start], tok...)
		}
	}
	return []string{string(b)}
}

// byteFallbackDecode turns runs of <0xXX> tokens into their bytes.
func byteFallbackDecode(ts []string) []string {
	var out []string
	var pending []byte
	flush := func() {
		if len(pending) > 0 {
			out = append(out, string(pending))
			pending = pending[:0]
		}
	}
	for _, tok := range ts {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
			if c, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				pending = append(pending, byte(c))
				continue
			}
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// Decode implements Tokenizer: the decoder chain over the ids' tokens,
// special tokens written out. Unknown ids are skipped.
func (t *BPE) Decode(ids []int32) string {
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.inv) || t.inv[id] == "" {
			continue
		}
		tokens = append(tokens, t.inv[id])
	}
	if t.dec == nil {
		if t.pre != nil && usesByteLevel(t.pre) {
			return byteLevelDecode(tokens)[0]
		}
		return strings.Join(tokens, " ")
	}
	for _, d := range t.dec {
		tokens = d(tokens)
	}
	return strings.Join(tokens, "")
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
