package datasets

import (
	"math/big"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Verdict is the outcome of grading one response.
type Verdict int

// Grading outcomes. NoAnswer is distinct from Wrong: a response with no
// extractable final answer neither matches nor contradicts the label.
const (
	NoAnswer Verdict = iota
	Wrong
	Correct
)

func (v Verdict) String() string {
	return [...]string{"no answer", "wrong", "correct"}[v]
}

var (
	answerIsRe = regexp.MustCompile(`(?i)the (?:final )?answer is[:\s]*`)
	hashRe     = regexp.MustCompile(`####\s*`)
	numberRe   = regexp.MustCompile(`-?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?|-?\.\d+%?`)
)

// AnswerRule says what counts as a final answer in a response. The zero
// rule accepts any marked answer that has a letter or a digit in it, with no
// fallback.
type AnswerRule struct {
	// Number: a marked answer must be a number (integer, decimal, fraction).
	// corl's own tasks use it: their prompts ask for "The answer is X.", so
	// "The answer is -." is no answer, not an answer "-".
	Number bool `json:"number,omitempty"`
	// LastNumber: with no marked answer, take the last number in the text.
	// Off unless asked for (user data whose responses are not marked): on
	// garbage it finds a number, so a collapsing model would still "parse".
	LastNumber bool `json:"last_number,omitempty"`
	// Type is the answer type (TypeNumber, TypeText, TypeChoice,
	// TypeExpression; "" the legacy rule): how answers are read and
	// compared. Text and choice answers fall back to the response's last
	// line when no marker is present.
	Type string `json:"type,omitempty"`

	options map[string]string // a choice prompt's options (ForPrompt)
}

// TaskAnswers is the rule of corl's built-in tasks.
var TaskAnswers = AnswerRule{Number: true}

// Extract returns the final answer of a model response under the zero rule.
func Extract(text string) (string, bool) { return AnswerRule{}.Extract(text) }

// Extract returns the final answer of a response and whether one was found.
// The first marker present, in this order, decides: the last \boxed{...}
// (nested braces allowed), the last "the answer is X", the last GSM8K-style
// "#### X". A marked answer that is not well formed under the rule is no
// answer. With LastNumber and no marker, the last number.
func (r AnswerRule) Extract(text string) (string, bool) {
	if s, ok := r.marked(text); ok {
		if !r.wellFormed(s) {
			return "", false
		}
		return s, true
	}
	if r.Type == TypeText || r.Type == TypeChoice {
		if s := lastLine(text); s != "" && r.wellFormed(s) {
			return s, true
		}
	}
	if r.LastNumber {
		if m := numberRe.FindAllString(text, -1); m != nil {
			return m[len(m)-1], true
		}
	}
	return "", false
}

// marked finds the marked answer, if a marker is present (s may be empty).
func (r AnswerRule) marked(text string) (string, bool) {
	if s, ok := lastBoxed(text); ok {
		return s, true
	}
	if loc := answerIsRe.FindAllStringIndex(text, -1); loc != nil {
		return answerPhrase(text[loc[len(loc)-1][1]:]), true
	}
	if loc := hashRe.FindAllStringIndex(text, -1); loc != nil {
		rest := text[loc[len(loc)-1][1]:]
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i]
		}
		return strings.TrimSpace(rest), true
	}
	return "", false
}

// wellFormed: a letter or digit somewhere, and a number when the rule says so.
func (r AnswerRule) wellFormed(s string) bool {
	if !strings.ContainsFunc(s, func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }) {
		return false
	}
	if r.Number {
		_, ok := parseRat(Normalize(s))
		return ok
	}
	if r.Type != TypeAny {
		return r.Normalize(s) != ""
	}
	return true
}

// lastLine is the last non-empty line of text, trimmed.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// lastBoxed finds the content of the last \boxed{...} or \fbox{...}.
func lastBoxed(text string) (string, bool) {
	i := max(strings.LastIndex(text, `\boxed{`), strings.LastIndex(text, `\fbox{`))
	if i < 0 {
		return "", false
	}
	start := i + strings.IndexByte(text[i:], '{') + 1
	depth := 1
	for j := start; j < len(text); j++ {
		switch text[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				s := strings.TrimSpace(text[start:j])
				return s, s != ""
			}
		}
	}
	return "", false // unbalanced: no answer rather than a guess
}

// answerPhrase takes the answer after "the answer is": up to the end of the
// line or sentence (a period followed by space or end, not a decimal point).
func answerPhrase(rest string) string {
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] == '.' && (i+1 == len(rest) || rest[i+1] == ' ') {
			rest = rest[:i]
			break
		}
	}
	if s, ok := lastBoxed(rest); ok {
		return s
	}
	return strings.TrimSpace(rest)
}

var (
	fracRe     = regexp.MustCompile(`\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}`)
	fracBareRe = regexp.MustCompile(`\\[dt]?frac(\d)(\d)`)
	textRe     = regexp.MustCompile(`\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}`)
	thousandRe = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)
)

// Normalize puts an answer in a canonical surface form: spaces, dollar signs,
// \left/\right, \text{} and similar wrappers removed; \frac{a}{b} -> a/b;
// thousands separators removed; a trailing period or percent sign dropped;
// numbers in canonical form (trailing zeros removed, 5.0 -> 5, 0.50 -> 0.5).
func Normalize(s string) string {
	s = strings.TrimSpace(s)
	for _, w := range []string{`\left`, `\right`, `\!`, `\,`, `\;`, `\ `, "$", `\%`} {
		s = strings.ReplaceAll(s, w, "")
	}
	for {
		t := textRe.ReplaceAllString(s, "$1")
		t = fracRe.ReplaceAllString(t, "($1)/($2)")
		t = fracBareRe.ReplaceAllString(t, "$1/$2")
		if t == s {
			break
		}
		s = t
	}
	s = strings.Join(strings.Fields(s), "")
	s = strings.TrimSuffix(s, ".")
	s = strings.TrimSuffix(s, "%")
	s = strings.TrimPrefix(s, "x=")
	if r, ok := parseRat(s); ok {
		return ratString(r)
	}
	return strings.ToLower(s)
}

// parseRat parses integers, decimals, "a/b" and "(a)/(b)" with optional
// thousands separators.
func parseRat(s string) (*big.Rat, bool) {
	if thousandRe.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	if num, den, ok := strings.Cut(s, "/"); ok {
		n, ok1 := parseRat(strings.TrimSuffix(strings.TrimPrefix(num, "("), ")"))
		d, ok2 := parseRat(strings.TrimSuffix(strings.TrimPrefix(den, "("), ")"))
		if !ok1 || !ok2 || d.Sign() == 0 {
			return nil, false
		}
		return n.Quo(n, d), true
	}
	if s == "" || strings.ContainsAny(s, "eE") { // no exponents: "1e5" is not an answer form here
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// ratString writes a rational canonically: integers plainly, finite decimals
// as decimals, other fractions as a/b.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	// A finite decimal iff the reduced denominator has only factors 2 and 5.
	d := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		bp := big.NewInt(p)
		for new(big.Int).Mod(d, bp).Sign() == 0 {
			d.Quo(d, bp)
		}
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		s := r.FloatString(40)
		s = strings.TrimRight(s, "0")
		return strings.TrimSuffix(s, ".")
	}
	return r.String()
}

// Equivalent reports whether two answers agree after normalisation; 1/2, 0.5
// and \frac{1}{2} are all equivalent.
func Equivalent(a, b string) bool { return Normalize(a) == Normalize(b) }

// MostCommon returns the most common non-empty answer, its count, and
// whether another answer has the same count (then best is ""): no answer
// wins a tie by its spelling. Counting runs of a sorted copy, not a map,
// keeps it free of map iteration, so workflow code may call it.
func MostCommon(answers []string) (best string, count int, tie bool) {
	sorted := make([]string, 0, len(answers))
	for _, a := range answers {
		if a != "" {
			sorted = append(sorted, a)
		}
	}
	sort.Strings(sorted)
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		switch n := j - i; {
		case n > count:
			best, count, tie = sorted[i], n, false
		case n == count:
			tie = true
		}
		i = j
	}
	if tie {
		best = ""
	}
	return best, count, tie
}

// Grade extracts the final answer of response under the zero rule and
// compares it with truth.
func Grade(response, truth string) Verdict { return AnswerRule{}.Grade(response, truth) }

// Grade extracts the final answer of response under r and compares it with
// truth.
func (r AnswerRule) Grade(response, truth string) Verdict {
	_, v := r.Judge(response, truth)
	return v
}

// Judge is Grade that also returns the normalised answer ("" for none).
func (r AnswerRule) Judge(response, truth string) (string, Verdict) {
	ans, ok := r.Extract(response)
	if !ok {
		return "", NoAnswer
	}
	if ans = r.Normalize(ans); ans == "" {
		return "", NoAnswer
	}
	if ans == r.Normalize(truth) {
		return ans, Correct
	}
	return ans, Wrong
}
