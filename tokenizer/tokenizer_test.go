package tokenizer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The expected ids below were worked out by hand from the merges in
// testdata/tiny-bpe.json; see the comments.
func TestTinyBPEKnownIDs(t *testing.T) {
	tok, err := Load("testdata/tiny-bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int32
	}{
		// "hello": h e l l o -> he l l o -> he ll o -> hell o -> hello
		// " world": Ġ w o r l d -> Ġw o r l d -> Ġw or l d -> Ġwor l d -> Ġwor ld -> Ġworld
		{"hello world!", []int32{12, 17, 8}},
		// two spaces before a word: the first is its own piece ("\s+(?!\S)")
		{"hello  world", []int32{12, 4, 17}},
		{"he<|endoftext|>", []int32{9, 18}},
		// "held": h e l d -> he l d -> he ld ("l d" is the only merge left)
		{"held", []int32{9, 16}},
	} {
		got, err := tok.Encode(tc.text)
		if err != nil {
			t.Fatalf("Encode(%q): %v", tc.text, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
		if back := tok.Decode(got); back != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, back)
		}
	}
	if tok.EOS() != 18 || tok.VocabSize() != 19 {
		t.Errorf("EOS %d, vocab %d; want 18, 19", tok.EOS(), tok.VocabSize())
	}
	if _, err := tok.Encode("hi"); err == nil || !strings.Contains(err.Error(), "not in the vocabulary") {
		t.Errorf("unknown character: err = %v", err)
	}
}

func TestMetaspaceByteFallback(t *testing.T) {
	tok, err := Load("testdata/tiny-metaspace.json")
	if err != nil {
		t.Fatal(err)
	}
	// "hi €" -> "▁hi▁€": ▁ h i ▁ € -> ▁h i ▁ € -> ▁hi ▁ €; € is bytes E2 82 AC.
	got, err := tok.Encode("hi €")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{4, 0, 5, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Encode = %v, want %v", got, want)
	}
	if back := tok.Decode(got); back != "hi €" {
		t.Fatalf("Decode = %q", back)
	}
	if got, err := tok.Encode("x"); err != nil || !reflect.DeepEqual(got, []int32{0, 8}) { // "▁x": x has no byte token: unk
		t.Fatalf("Encode(x) = %v, want [0 8]", got)
	}
}

// TestLlama3Split checks the hand-implemented lookahead of the Llama-3
// pattern against splits worked out from the pattern's definition.
func TestLlama3Split(t *testing.T) {
	sp, err := newSplitter(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`)
	if err != nil {
		t.Fatal(err)
	}
	got := sp.split("Hello  world 12345\n\n x I'M ok!!\n  ")
	want := []string{"Hello", " ", " world", " ", "123", "45", "\n\n", " x", " I", "'M", " ok", "!!\n", "  "}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("split = %q\nwant    %q", got, want)
	}
}

func TestBytesRoundTripAndSave(t *testing.T) {
	tok := NewBytes()
	for _, s := range []string{"", "abc", "héllo wörld", "日本語 テキスト", "emoji 🙂\n\ttabs", "1+1=2 <|endoftext|> after"} {
		ids, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if back := tok.Decode(ids); back != s {
			t.Errorf("round trip %q -> %q", s, back)
		}
	}
	ids, _ := tok.Encode("a<|endoftext|>")
	if !reflect.DeepEqual(ids, []int32{97, 256}) {
		t.Fatalf("ids = %v", ids)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	re, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := re.Encode("héllo"); !reflect.DeepEqual(got, mustEncode(t, tok, "héllo")) || re.VocabSize() != 257 || re.EOS() != 256 {
		t.Fatalf("reloaded tokenizer differs: %v", got)
	}
}

func mustEncode(t *testing.T, tok Tokenizer, s string) []int32 {
	ids, err := tok.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func FuzzBytesRoundTrip(f *testing.F) {
	tok := NewBytes()
	for _, s := range []string{"", "a", "héllo", "\x00\x01", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if _, err := tok.Encode(s); err == nil {
				t.Fatalf("invalid UTF-8 %q was encoded", s)
			}
			return
		}
		ids, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if back := tok.Decode(ids); back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
	})
}

func TestLoadErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{`{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`, "model.type"},
		{`{"model": {"type": "BPE", "vocab": {}}}`, "model.vocab"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a a"]}}`, "model.merges[0]"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["aa"]}}`, "model.merges[0]"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "unk_token": "<unk>"}}`, "unk_token"},
		{`{"pre_tokenizer": {"type": "Nope"}, "model": {"type": "BPE", "vocab": {"a": 0}}}`, "Nope"},
		{`not json`, "tokenizer.json"},
	} {
		p := filepath.Join(dir, "tokenizer.json")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.body, err, tc.want)
		}
	}
}

// TestToken: Token spells every id as the vocabulary does (the byte
// tokenizer's byte-level characters), marks added tokens, and refuses ids
// outside the vocabulary.
func TestToken(t *testing.T) {
	tok := NewBytes()
	for _, tc := range []struct {
		id    int32
		want  string
		added bool
	}{{'a', "a", false}, {' ', "Ġ", false}, {'\n', "Ċ", false}, {256, EndOfText, true}, {257, "", false}, {-1, "", false}} {
		if got, added := tok.Token(tc.id); got != tc.want || added != tc.added {
			t.Errorf("Token(%d) = %q, %v; want %q, %v", tc.id, got, added, tc.want, tc.added)
		}
	}
	for id := int32(0); id < int32(tok.VocabSize()); id++ {
		s, _ := tok.Token(id)
		if back, ok := tok.TokenID(s); !ok || back != id {
			t.Fatalf("TokenID(Token(%d) = %q) = %d, %v", id, s, back, ok)
		}
	}
}
