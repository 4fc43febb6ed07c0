package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file holds the stages of a Hugging Face tokenizer.json pipeline,
// each written after its definition in the tokenizers library: normalizers
// rewrite a segment of text, pre-tokenizers cut it into pieces, and the BPE
// model (bpe.go) turns each piece into ids. Offsets are not tracked: corl
// needs ids and text, not alignments.

// normalizer rewrites text.
type normalizer interface{ normalize(s string) string }

type normFunc func(string) string

func (f normFunc) normalize(s string) string { return f(s) }

type normSequence []normalizer

func (q normSequence) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// replaceNorm replaces every match of a literal or a regex with content.
type replaceNorm struct {
	literal string
	re      *splitter // regex patterns go through the same translation as Split's
	content string
}

func (r replaceNorm) normalize(s string) string {
	if r.re == nil {
		if r.literal == "" {
			return s
		}
		return strings.ReplaceAll(s, r.literal, r.content)
	}
	var b strings.Builder
	for _, m := range r.re.matches(s) {
		if m.match {
			b.WriteString(r.content)
		} else {
			b.WriteString(s[m.lo:m.hi])
		}
	}
	return b.String()
}

// isWhitespace is Rust's char::is_whitespace (the White_Space property).
func isWhitespace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// isPunctuation is the Punctuation pre-tokenizer's test: ASCII punctuation
// or a Unicode punctuation category.
func isPunctuation(r rune) bool {
	return unicode.IsPunct(r) || (r < 128 && strings.ContainsRune("$+<=>^`|~", r))
}

func parseNormalizer(j *normJSON, at string) (normalizer, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "NFC":
		return normFunc(norm.NFC.String), nil
	case "NFD":
		return normFunc(norm.NFD.String), nil
	case "NFKC":
		return normFunc(norm.NFKC.String), nil
	case "NFKD":
		return normFunc(norm.NFKD.String), nil
	case "Lowercase":
		return normFunc(strings.ToLower), nil
	case "Strip":
		left, right := j.StripLeft == nil || *j.StripLeft, j.StripRight == nil || *j.StripRight
		return normFunc(func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, isWhitespace)
			}
			if right {
				s = strings.TrimRightFunc(s, isWhitespace)
			}
			return s
		}), nil
	case "StripAccents":
		return normFunc(stripMarks), nil
	case "Prepend":
		return normFunc(func(s string) string {
			if s == "" {
				return s
			}
			return j.Prepend + s
		}), nil
	case "Replace":
		r := replaceNorm{content: j.Content}
		if j.Pattern == nil {
			return nil, fmt.Errorf("%s: Replace without a pattern", at)
		}
		if j.Pattern.Regex != "" {
			sp, err := newSplitter(j.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			r.re = sp
		} else {
			r.literal = j.Pattern.String
		}
		return r, nil
	case "Sequence":
		var q normSequence
		for i := range j.Normalizers {
			n, err := parseNormalizer(&j.Normalizers[i], fmt.Sprintf("%s.normalizers[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				q = append(q, n)
			}
		}
		return q, nil
	case "BertNormalizer":
		return bertNormalizer(j), nil
	case "Precompiled":
		return nil, fmt.Errorf("%s: Precompiled (a SentencePiece character map) is not supported", at)
	}
	return nil, fmt.Errorf("%s: unknown normalizer type %q", at, j.Type)
}

// bertNormalizer is BERT's: control characters removed and whitespace made
// spaces (clean_text), spaces around CJK characters, accents stripped and
// lower case.
func bertNormalizer(j *normJSON) normalizer {
	clean := j.CleanText == nil || *j.CleanText
	chinese := j.HandleChineseChars == nil || *j.HandleChineseChars
	lower := j.Lowercase == nil || *j.Lowercase
	strip := lower
	if j.StripAccents != nil {
		strip = *j.StripAccents
	}
	return normFunc(func(s string) string {
		var b strings.Builder
		for _, r := range s {
			switch {
			case clean && (r == 0 || r == 0xFFFD || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r')):
			case clean && isWhitespace(r):
				b.WriteByte(' ')
			case chinese && isCJK(r):
				b.WriteByte(' ')
				b.WriteRune(r)
				b.WriteByte(' ')
			default:
				b.WriteRune(r)
			}
		}
		s = b.String()
		if strip {
			s = stripMarks(norm.NFD.String(s))
		}
		if lower {
			s = strings.ToLower(s)
		}
		return s
	})
}

// stripMarks removes nonspacing marks (accents, after NFD).
func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

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

// splitter runs an Oniguruma-style pattern, as the tokenizers library's
// Split does (its regex engine), with Go's regexp: \s, \S, \w, \d are
// rewritten to their Unicode meaning (Go's are ASCII), and the one
// lookahead these patterns use, a final "\s+(?!\S)|\s+" (whitespace that
// leaves its last character to the next word), is done by hand.
type splitter struct {
	main   *regexp.Regexp // anchored; nil if the pattern is only the whitespace tail
	wsTail bool
}

// unicodeSpace is Oniguruma's Unicode \s (the White_Space property).
const unicodeSpace = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// unicodeWord is Unicode \w: letters, marks, decimal digits, connectors.
const unicodeWord = `\p{L}\p{M}\p{Nd}\p{Pc}`

func newSplitter(pattern string) (*splitter, error) {
	const tail = `|\s+(?!\S)|\s+`
	s := &splitter{}
	p := pattern
	if strings.HasSuffix(p, tail) {
		p = strings.TrimSuffix(p, tail)
		s.wsTail = true
	} else if p == `\s+(?!\S)|\s+` {
		s.wsTail = true
		return s, nil
	}
	goPat, err := translatePattern(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	re, err := regexp.Compile(`^(?:` + goPat + `)`)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	s.main = re
	return s, nil
}

// translatePattern rewrites the escapes whose meaning differs between
// Oniguruma (Unicode) and Go (ASCII), and refuses what Go cannot run.
func translatePattern(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			e := p[i+1]
			i++
			switch e {
			case 's':
				if inClass {
					b.WriteString(unicodeSpace)
				} else {
					b.WriteString("[" + unicodeSpace + "]")
				}
			case 'S':
				if inClass {
					return "", fmt.Errorf(`\S inside a character class is not supported`)
				}
				b.WriteString("[^" + unicodeSpace + "]")
			case 'w':
				if inClass {
					b.WriteString(unicodeWord)
				} else {
					b.WriteString("[" + unicodeWord + "]")
				}
			case 'W':
				if inClass {
					return "", fmt.Errorf(`\W inside a character class is not supported`)
				}
				b.WriteString("[^" + unicodeWord + "]")
			case 'd':
				b.WriteString(`\p{Nd}`)
			case 'D':
				if inClass {
					return "", fmt.Errorf(`\D inside a character class is not supported`)
				}
				b.WriteString(`\P{Nd}`)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // a literal ] first in a class
				b.WriteString(`\]`)
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '(' && !inClass && strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") && !inClass ||
			strings.HasPrefix(p[i:], "(?<=") && !inClass || strings.HasPrefix(p[i:], "(?<!") && !inClass:
			return "", fmt.Errorf("lookaround at %d is not supported (only a final \\s+(?!\\S)|\\s+)", i)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// matches returns spans covering s: what the pattern matches, found left
// to right as find_iter does, and the text between.
func (sp *splitter) matches(s string) []span {
	var spans []span
	gap := -1
	for i := 0; i < len(s); {
		n := sp.matchAt(s, i)
		if n == 0 {
			if gap < 0 {
				gap = i
			}
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			continue
		}
		if gap >= 0 {
			spans = append(spans, span{gap, i, false})
			gap = -1
		}
		spans = append(spans, span{i, i + n, true})
		i += n
	}
	if gap >= 0 {
		spans = append(spans, span{gap, len(s), false})
	}
	return spans
}

// matchAt is the length of the pattern's match at i (0: none).
func (sp *splitter) matchAt(s string, i int) int {
	if sp.main != nil {
		if loc := sp.main.FindStringIndex(s[i:]); loc != nil && loc[1] > 0 {
			return loc[1]
		}
	}
	if !sp.wsTail {
		return 0
	}
	n := 0
	for j, r := range s[i:] {
		if !isWhitespace(r) {
			break
		}
		n = j + utf8.RuneLen(r)
	}
	if n > 0 && i+n < len(s) { // followed by a non-space: leave it the last space
		_, last := utf8.DecodeLastRuneInString(s[i : i+n])
		if n > last {
			n -= last
		}
	}
	return n
}

// split is matches' pieces, matched and not, in order.
func (sp *splitter) split(s string) []string {
	var out []string
	for _, m := range sp.matches(s) {
		out = append(out, s[m.lo:m.hi])
	}
	return out
}
