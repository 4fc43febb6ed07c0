package datasets

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Answer types (data.answer_type). Each has its own canonical form, so that
// answers the type counts as equal are equal strings: grading compares
// them, and votes count them.
const (
	TypeAny        = ""           // the legacy rule: numbers canonical, anything else lower-cased
	TypeNumber     = "number"     // integers, decimals, fractions: 0.5 = 1/2 = \frac{1}{2}
	TypeText       = "text"       // case, whitespace, punctuation and articles ignored
	TypeChoice     = "choice"     // an option letter: "B", "(B)", "B) text" or the option's text
	TypeExpression = "expression" // equal when numerically equal at several points
)

// AnswerTypes lists the types data.answer_type accepts.
var AnswerTypes = []string{TypeNumber, TypeText, TypeChoice, TypeExpression}

// ForPrompt returns the rule for one prompt: for choice answers, the options
// the prompt lists ("A) Paris", "(B) London", "C. Rome"), so that a response
// naming an option's text counts as its letter.
func (r AnswerRule) ForPrompt(prompt string) AnswerRule {
	if r.Type == TypeChoice {
		r.options = ParseOptions(prompt)
	}
	return r
}

var optionRe = regexp.MustCompile(`(?m)^\s*\(?([A-Ha-h])[).:]\s+(\S.*?)\s*$`)

// ParseOptions reads a multiple-choice prompt's options, letter -> text.
func ParseOptions(prompt string) map[string]string {
	out := map[string]string{}
	for _, m := range optionRe.FindAllStringSubmatch(prompt, -1) {
		out[strings.ToUpper(m[1])] = m[2]
	}
	return out
}

// Normalize puts an answer in the rule's canonical form ("" when the type
// cannot read it).
func (r AnswerRule) Normalize(s string) string {
	switch r.kind() {
	case TypeText:
		return normText(s)
	case TypeChoice:
		return r.normChoice(s)
	case TypeExpression:
		return normExpression(s)
	case TypeNumber:
		if n := Normalize(s); isNumber(n) {
			return n
		}
		return ""
	default:
		return Normalize(s)
	}
}

func (r AnswerRule) kind() string {
	if r.Type == TypeAny && r.Number {
		return TypeNumber
	}
	return r.Type
}

var (
	articleRe = regexp.MustCompile(`\b(a|an|the)\b`)
)

// normText is SQuAD's answer normalisation: lower case, punctuation
// removed, articles removed, whitespace collapsed.
func normText(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = textRe.ReplaceAllString(s, "$1")
	s = strings.Map(func(c rune) rune {
		if unicode.IsPunct(c) || unicode.IsSymbol(c) {
			return ' '
		}
		return c
	}, s)
	s = articleRe.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
}

var letterRe = regexp.MustCompile(`^\(?([A-Ha-h])\)?(?:[).:]\s*.*)?$`)

// normChoice reads an option letter: "B", "(b)", "B) London", "B. London",
// or an option's text (with the prompt's options, see ForPrompt).
func (r AnswerRule) normChoice(s string) string {
	s = strings.TrimSpace(textRe.ReplaceAllString(strings.TrimSpace(s), "$1"))
	s = strings.TrimSuffix(s, ".")
	if m := letterRe.FindStringSubmatch(s); m != nil {
		return strings.ToUpper(m[1])
	}
	want := normText(s)
	for letter, text := range r.options {
		if want != "" && normText(text) == want {
			return letter
		}
	}
	if l := strings.TrimPrefix(strings.ToLower(s), "option "); len(l) == 1 && l[0] >= 'a' && l[0] <= 'h' {
		return strings.ToUpper(l)
	}
	return ""
}

// expressionPoints are where two expressions are compared. Irregular
// values, so that distinct polynomials of small degree rarely agree.
var expressionPoints = []float64{0.5377, 1.8339, -2.2588, 0.8622, 3.1194}

// normExpression canonicalises an expression by its values at
// expressionPoints (every variable bound to the same point), rounded to 9
// significant digits: "x^2-1" and "(x-1)(x+1)" both become "expr:...". A
// constant expression is a number and canonicalises as one. "" when it
// does not parse.
func normExpression(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ".")
	if i := strings.LastIndex(s, "="); i >= 0 { // "y = 2x+1": the right-hand side
		s = s[i+1:]
	}
	e, err := parseExpr(s)
	if err != nil {
		return ""
	}
	if !e.hasVar {
		v := e.eval(0)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		if n := Normalize(s); isNumber(n) {
			return n
		}
		return strconv.FormatFloat(v, 'g', 9, 64)
	}
	parts := make([]string, len(expressionPoints))
	for i, x := range expressionPoints {
		v := e.eval(x)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		parts[i] = strconv.FormatFloat(v, 'g', 9, 64)
	}
	return "expr:" + strings.Join(parts, ",")
}

func isNumber(s string) bool {
	_, ok := parseRat(s)
	return ok
}

// expr is a parsed expression: eval computes it with every variable at x.
type expr struct {
	eval   func(x float64) float64
	hasVar bool
}

// parseExpr parses + - * / ^ (or **), parentheses, numbers, one-letter
// variables (a longer word is an error: write x*y, not xy), implicit
// multiplication (2x, 3(x+1), (x+1)(x-1)), LaTeX
// \frac{a}{b}, \cdot and \sqrt{...}, and the functions sqrt, exp, ln, log,
// sin, cos, tan, abs.
func parseExpr(s string) (expr, error) {
	s = strings.NewReplacer(`\left`, "", `\right`, "", `\cdot`, "*", `\times`, "*", "**", "^", "{", "(", "}", ")", `\`, "", " ", "", "$", "").Replace(s)
	s = fracExprRe.ReplaceAllString(s, "frac")
	p := &exprParser{s: s}
	e, err := p.sum()
	if err != nil {
		return expr{}, err
	}
	if p.i != len(p.s) {
		return expr{}, fmt.Errorf("unexpected %q at %d", p.s[p.i:], p.i)
	}
	return e, nil
}

var fracExprRe = regexp.MustCompile(`[dt]frac`)

type exprParser struct {
	s string
	i int
}

func (p *exprParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) sum() (expr, error) {
	left, err := p.product()
	if err != nil {
		return expr{}, err
	}
	for p.peek() == '+' || p.peek() == '-' {
		op := p.peek()
		p.i++
		right, err := p.product()
		if err != nil {
			return expr{}, err
		}
		l, r := left, right
		if op == '+' {
			left = expr{func(x float64) float64 { return l.eval(x) + r.eval(x) }, l.hasVar || r.hasVar}
		} else {
			left = expr{func(x float64) float64 { return l.eval(x) - r.eval(x) }, l.hasVar || r.hasVar}
		}
	}
	return left, nil
}

func (p *exprParser) product() (expr, error) {
	left, err := p.unary()
	if err != nil {
		return expr{}, err
	}
	for {
		c := p.peek()
		var op byte
		switch {
		case c == '*' || c == '/':
			op = c
			p.i++
		case c == '(' || unicode.IsLetter(rune(c)) || (c >= '0' && c <= '9') || c == '.':
			op = '*' // implicit multiplication
		default:
			return left, nil
		}
		right, err := p.unary()
		if err != nil {
			return expr{}, err
		}
		l, r := left, right
		if op == '*' {
			left = expr{func(x float64) float64 { return l.eval(x) * r.eval(x) }, l.hasVar || r.hasVar}
		} else {
			left = expr{func(x float64) float64 { return l.eval(x) / r.eval(x) }, l.hasVar || r.hasVar}
		}
	}
}

func (p *exprParser) unary() (expr, error) {
	if p.peek() == '-' || p.peek() == '+' {
		neg := p.peek() == '-'
		p.i++
		e, err := p.unary()
		if err != nil || !neg {
			return e, err
		}
		return expr{func(x float64) float64 { return -e.eval(x) }, e.hasVar}, nil
	}
	return p.power()
}

func (p *exprParser) power() (expr, error) {
	base, err := p.atom()
	if err != nil {
		return expr{}, err
	}
	if p.peek() == '^' {
		p.i++
		exp, err := p.unary() // right-associative: 2^3^2 = 2^9
		if err != nil {
			return expr{}, err
		}
		b, e := base, exp
		return expr{func(x float64) float64 { return math.Pow(b.eval(x), e.eval(x)) }, b.hasVar || e.hasVar}, nil
	}
	return base, nil
}

var exprFuncs = map[string]func(float64) float64{
	"sqrt": math.Sqrt, "exp": math.Exp, "ln": math.Log, "log": math.Log, "sin": math.Sin, "cos": math.Cos,
	"tan": math.Tan, "abs": math.Abs,
}

func (p *exprParser) atom() (expr, error) {
	c := p.peek()
	switch {
	case c == '(':
		p.i++
		e, err := p.sum()
		if err != nil {
			return expr{}, err
		}
		if p.peek() != ')' {
			return expr{}, fmt.Errorf("missing )")
		}
		p.i++
		return e, nil
	case (c >= '0' && c <= '9') || c == '.':
		j := p.i
		for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '.') {
			j++
		}
		v, err := strconv.ParseFloat(p.s[p.i:j], 64)
		if err != nil {
			return expr{}, err
		}
		p.i = j
		return expr{func(float64) float64 { return v }, false}, nil
	case unicode.IsLetter(rune(c)):
		j := p.i
		for j < len(p.s) && unicode.IsLetter(rune(p.s[j])) {
			j++
		}
		word := p.s[p.i:j]
		if word == "frac" {
			p.i = j
			num, err := p.atom()
			if err != nil {
				return expr{}, err
			}
			den, err := p.atom()
			if err != nil {
				return expr{}, err
			}
			return expr{func(x float64) float64 { return num.eval(x) / den.eval(x) }, num.hasVar || den.hasVar}, nil
		}
		if word == "pi" {
			p.i = j
			return expr{func(float64) float64 { return math.Pi }, false}, nil
		}
		if f, ok := exprFuncs[word]; ok && j < len(p.s) && p.s[j] == '(' {
			p.i = j
			arg, err := p.atom()
			if err != nil {
				return expr{}, err
			}
			return expr{func(x float64) float64 { return f(arg.eval(x)) }, arg.hasVar}, nil
		}
		if j-p.i > 1 { // a word, not a variable: "Paris" is not P*a*r*i*s
			return expr{}, fmt.Errorf("unknown name %q", word)
		}
		p.i++ // one letter: a variable
		return expr{func(x float64) float64 { return x }, true}, nil
	}
	if c == 0 {
		return expr{}, fmt.Errorf("unexpected end")
	}
	return expr{}, fmt.Errorf("unexpected %q", c)
}

// InferAnswerType is the type that reads every label: number when all are
// numbers, choice when all are option letters, expression when all parse
// as expressions and one has a variable, text otherwise.
func InferAnswerType(labels []string) string {
	if len(labels) == 0 {
		return TypeText
	}
	all := func(ok func(string) bool) bool {
		for _, l := range labels {
			if !ok(l) {
				return false
			}
		}
		return true
	}
	switch {
	case all(func(l string) bool { return isNumber(Normalize(l)) }):
		return TypeNumber
	case all(func(l string) bool {
		return letterRe.MatchString(strings.TrimSpace(l)) && len(strings.TrimSpace(l)) <= 3
	}):
		return TypeChoice
	case all(func(l string) bool { return normExpression(l) != "" }) &&
		!all(func(l string) bool { return !strings.HasPrefix(normExpression(l), "expr:") }):
		return TypeExpression
	}
	return TypeText
}

// Parses reports the share of labels each answer type can read.
func Parses(labels []string) map[string]float64 {
	out := map[string]float64{}
	if len(labels) == 0 {
		return out
	}
	for _, t := range AnswerTypes {
		r := AnswerRule{Type: t}
		n := 0
		for _, l := range labels {
			if r.Normalize(l) != "" {
				n++
			}
		}
		out[t] = float64(n) / float64(len(labels))
	}
	return out
}
