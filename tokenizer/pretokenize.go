package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The stages of a Hugging Face tokenizer.json pipeline are each written
// after its definition in the tokenizers library: normalizers rewrite a
// segment of text (normalize.go), pre-tokenizers cut it into pieces (this
// file; split patterns in splitter.go), the BPE model turns each piece into
// ids (bpe.go, merge.go; added tokens in added.go), post-processors add
// special tokens (post.go) and decoders turn ids back into text
// (decode.go). Offsets are not tracked: corl needs ids and text, not
// alignments.

// piece is a pre-token: its text and whether it starts at the start of the
// encoded text (Metaspace's prepend_scheme "first" looks at that).
type piece struct {
	s     string
	first bool
}

// preTokenizer cuts pieces into smaller ones.
type preTokenizer interface {
	pre(p piece, out []piece) []piece
}

// behavior says what a split keeps of its delimiters (the tokenizers
// library's SplitDelimiterBehavior).
type behavior int

const (
	isolated behavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s, at string) (behavior, error) {
	switch s {
	case "Isolated", "":
		return isolated, nil
	case "Removed":
		return removed, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("%s: unknown split behavior %q", at, s)
}

// span is a stretch of text that a pattern matched, or the text between.
type span struct {
	lo, hi int
	match  bool
}

// splitSpans applies a behavior to spans covering p, as NormalizedString
// split does, and appends the resulting pieces (empty ones dropped).
func splitSpans(p piece, spans []span, b behavior, out []piece) []piece {
	type cut struct{ lo, hi int }
	var cuts []cut
	switch b {
	case isolated:
		for _, s := range spans {
			cuts = append(cuts, cut{s.lo, s.hi})
		}
	case removed:
		for _, s := range spans {
			if !s.match {
				cuts = append(cuts, cut{s.lo, s.hi})
			}
		}
	case contiguous:
		prev := false
		for i, s := range spans {
			if i > 0 && s.match == prev {
				cuts[len(cuts)-1].hi = s.hi
			} else {
				cuts = append(cuts, cut{s.lo, s.hi})
			}
			prev = s.match
		}
	case mergedWithPrevious:
		prev := false
		for _, s := range spans {
			if s.match && !prev && len(cuts) > 0 {
				cuts[len(cuts)-1].hi = s.hi
			} else {
				cuts = append(cuts, cut{s.lo, s.hi})
			}
			prev = s.match
		}
	case mergedWithNext:
		prev := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prev && len(cuts) > 0 {
				cuts[len(cuts)-1].lo = s.lo
			} else {
				cuts = append(cuts, cut{s.lo, s.hi})
			}
			prev = s.match
		}
		for i, j := 0, len(cuts)-1; i < j; i, j = i+1, j-1 {
			cuts[i], cuts[j] = cuts[j], cuts[i]
		}
	}
	for _, c := range cuts {
		if c.hi > c.lo {
			out = append(out, piece{s: p.s[c.lo:c.hi], first: p.first && c.lo == 0})
		}
	}
	return out
}

// charSpans are the spans of the characters for which match is true (each
// its own span) and the runs between.
func charSpans(s string, match func(rune) bool) []span {
	var spans []span
	last := 0
	for i, r := range s {
		if match(r) {
			if last < i {
				spans = append(spans, span{last, i, false})
			}
			n := utf8.RuneLen(r)
			spans = append(spans, span{i, i + n, true})
			last = i + n
		}
	}
	if last < len(s) {
		spans = append(spans, span{last, len(s), false})
	}
	return spans
}

type splitPre struct {
	re       *splitter // nil: literal
	literal  string
	behavior behavior
	invert   bool
}

func (sp splitPre) pre(p piece, out []piece) []piece {
	var spans []span
	if sp.re != nil {
		spans = sp.re.matches(p.s)
	} else {
		spans = literalSpans(p.s, sp.literal)
	}
	if sp.invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	return splitSpans(p, spans, sp.behavior, out)
}

func literalSpans(s, lit string) []span {
	if lit == "" {
		return []span{{0, len(s), false}}
	}
	var spans []span
	last := 0
	for {
		i := strings.Index(s[last:], lit)
		if i < 0 {
			break
		}
		if i > 0 {
			spans = append(spans, span{last, last + i, false})
		}
		spans = append(spans, span{last + i, last + i + len(lit), true})
		last += i + len(lit)
	}
	if last < len(s) {
		spans = append(spans, span{last, len(s), false})
	}
	return spans
}

// byteLevelPre maps every byte to GPT-2's printable alphabet, after an
// optional prefix space and the GPT-2 regex split.
type byteLevelPre struct {
	addPrefix bool
	re        *splitter // nil: no split
}

func (bl byteLevelPre) pre(p piece, out []piece) []piece {
	if bl.addPrefix && !strings.HasPrefix(p.s, " ") {
		p.s = " " + p.s
	}
	start := len(out)
	if bl.re != nil {
		out = splitSpans(p, bl.re.matches(p.s), isolated, out)
	} else if p.s != "" {
		out = append(out, p)
	}
	for i := start; i < len(out); i++ {
		out[i].s = toByteAlphabet(out[i].s)
	}
	return out
}

func toByteAlphabet(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// metaspacePre is SentencePiece's: spaces become the replacement
// character, one is prepended (always, or only at the text's start), and
// with split each replacement starts a new piece.
type metaspacePre struct {
	repl    string
	prepend string // always, first, never
	split   bool
}

func (m metaspacePre) pre(p piece, out []piece) []piece {
	s := strings.ReplaceAll(p.s, " ", m.repl)
	if !strings.HasPrefix(s, m.repl) && (m.prepend == "always" || (m.prepend == "first" && p.first)) {
		s = m.repl + s
	}
	p.s = s
	if !m.split {
		if s != "" {
			out = append(out, p)
		}
		return out
	}
	return splitSpans(p, literalSpans(s, m.repl), mergedWithNext, out)
}

type charSplitPre struct {
	match    func(rune) bool
	behavior behavior
}

func (c charSplitPre) pre(p piece, out []piece) []piece {
	return splitSpans(p, charSpans(p.s, c.match), c.behavior, out)
}

type preSequence []preTokenizer

func (q preSequence) pre(p piece, out []piece) []piece {
	cur := []piece{p}
	for _, t := range q {
		var next []piece
		for _, c := range cur {
			next = t.pre(c, next)
		}
		cur = next
	}
	return append(out, cur...)
}

func parsePre(j *preJSON, at string) (preTokenizer, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "Sequence":
		var q preSequence
		for i := range j.Pretokenizers {
			t, err := parsePre(&j.Pretokenizers[i], fmt.Sprintf("%s.pretokenizers[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if t != nil {
				q = append(q, t)
			}
		}
		return q, nil
	case "Split":
		b, err := parseBehavior(j.Behavior, at)
		if err != nil {
			return nil, err
		}
		sp := splitPre{behavior: b, invert: j.Invert}
		switch {
		case j.Pattern == nil:
			return nil, fmt.Errorf("%s: Split without a pattern", at)
		case j.Pattern.Regex != "":
			if sp.re, err = newSplitter(j.Pattern.Regex); err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
		default:
			sp.literal = j.Pattern.String
		}
		return sp, nil
	case "ByteLevel":
		bl := byteLevelPre{addPrefix: j.AddPrefixSpace == nil || *j.AddPrefixSpace}
		if j.UseRegex == nil || *j.UseRegex {
			re, err := newSplitter(gpt2Pattern)
			if err != nil {
				return nil, err
			}
			bl.re = re
		}
		return bl, nil
	case "Metaspace":
		m := metaspacePre{repl: metaSpace, prepend: strings.ToLower(j.PrependScheme), split: j.Split == nil || *j.Split}
		if j.Replacement != "" {
			m.repl = j.Replacement
		}
		if m.prepend == "" { // older files: add_prefix_space
			m.prepend = "always"
			if j.AddPrefixSpace != nil && !*j.AddPrefixSpace {
				m.prepend = "never"
			}
		}
		return m, nil
	case "Digits":
		b := contiguous
		if j.IndividualDigits {
			b = isolated
		}
		return charSplitPre{match: unicode.IsNumber, behavior: b}, nil
	case "Punctuation":
		b, err := parseBehavior(j.Behavior, at)
		if err != nil {
			return nil, err
		}
		return charSplitPre{match: isPunctuation, behavior: b}, nil
	case "WhitespaceSplit":
		return charSplitPre{match: isWhitespace, behavior: removed}, nil
	case "Whitespace":
		re, err := newSplitter(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, err
		}
		return splitPre{re: re, behavior: removed, invert: true}, nil
	case "BertPreTokenizer":
		return preSequence{charSplitPre{match: isWhitespace, behavior: removed}, charSplitPre{match: isPunctuation, behavior: isolated}}, nil
	}
	return nil, fmt.Errorf("%s: unknown pre-tokenizer type %q", at, j.Type)
}

// unicodeSpace is Oniguruma's Unicode \s (the White_Space property).
const unicodeSpace = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// unicodeWord is Unicode \w: letters, marks, decimal digits, connectors.
const unicodeWord = `\p{L}\p{M}\p{Nd}\p{Pc}`
