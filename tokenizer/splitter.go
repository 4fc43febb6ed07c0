package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// splitter runs an Oniguruma-style pattern, as the tokenizers library's
// Split does (its regex engine), with Go's regexp: \s, \S, \w, \d are
// rewritten to their Unicode meaning (Go's are ASCII), and the one
// lookahead these patterns use, a final "\s+(?!\S)|\s+" (whitespace that
// leaves its last character to the next word), is done by hand.
type splitter struct {
	main   *regexp.Regexp // anchored; nil if the pattern is only the whitespace tail
	wsTail bool
}

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
