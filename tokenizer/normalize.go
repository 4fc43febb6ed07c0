package tokenizer

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

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
