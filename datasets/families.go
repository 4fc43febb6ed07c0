package datasets

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

func init() {
	register(Task{Name: "arith", Description: "multi-digit addition and subtraction with carries and borrows", Levels: 3, gen: genArith})
	register(Task{Name: "expr", Description: "integer expressions with operator precedence (parentheses at level 3)", Levels: 3, gen: genExpr})
	register(Task{Name: "mod", Description: "modular arithmetic: (a*b + c) mod m", Levels: 3, gen: genMod})
	register(Task{Name: "linear", Description: "one-variable linear equations with integer solutions", Levels: 3, gen: genLinear})
	register(Task{Name: "word", Description: "word problems built from templates (buy, give away, share)", Levels: 3, gen: genWord})
	register(Task{Name: "seq", Description: "next term of arithmetic, geometric and second-order sequences", Levels: 3, gen: genSeq})
}

// genArith: level L uses numbers of L+1 digits. The solution adds or
// subtracts the second number one place value at a time.
func genArith(r *rand.Rand, level int) Problem {
	a, b := digits(r, level+1), digits(r, 1+r.IntN(level+1))
	sub := r.IntN(2) == 0
	op, word, res := "+", "sum of %d and %d", a+b
	if sub {
		op, word, res = "-", "difference %d minus %d", a-b
	}
	var steps []string
	cur, place := a, 1
	for place*10 <= b {
		place *= 10
	}
	for ; place >= 1; place /= 10 {
		part := b / place % 10 * place
		if part == 0 {
			continue
		}
		next := cur + part
		if sub {
			next = cur - part
		}
		steps = append(steps, fmt.Sprintf("%d%s%d=%d", cur, op, part, next))
		cur = next
	}
	return Problem{
		views:    []string{fmt.Sprintf("Compute %d%s%d.", a, op, b), "What is the " + fmt.Sprintf(word, a, b) + "?"},
		Answer:   itoa(res),
		Solution: strings.Join(steps, ", ") + ".",
	}
}

// genExpr builds sum-of-products expressions; level 3 adds a parenthesised
// difference. The solution shows the expression after each reduction pass.
func genExpr(r *rand.Rand, level int) Problem {
	type factor struct {
		text string
		val  int
		par  bool
	}
	nTerms := 2 + r.IntN(2)
	var terms [][]factor
	var ops []string
	for i := 0; i < nTerms; i++ {
		var fs []factor
		nf := 1
		if level >= 2 || i == 0 {
			nf = 1 + r.IntN(2)
		}
		for j := 0; j < nf; j++ {
			v := 1 + r.IntN(9)
			f := factor{text: itoa(v), val: v}
			if level == 3 && r.IntN(3) == 0 {
				x, y := 1+r.IntN(9), 1+r.IntN(9)
				f = factor{text: fmt.Sprintf("(%d-%d)", x, y), val: x - y, par: true}
			}
			fs = append(fs, f)
		}
		terms = append(terms, fs)
		if i > 0 {
			ops = append(ops, pick(r, "+", "-"))
		}
	}
	render := func(termText func(i int) string) string {
		var b strings.Builder
		for i := range terms {
			if i > 0 {
				b.WriteString(ops[i-1])
			}
			b.WriteString(termText(i))
		}
		return b.String()
	}
	factors := func(i int, reduced bool) string {
		var parts []string
		for _, f := range terms[i] {
			if reduced && f.par {
				parts = append(parts, signed(f.val))
			} else {
				parts = append(parts, f.text)
			}
		}
		return strings.Join(parts, "*")
	}
	product := func(i int) int {
		p := 1
		for _, f := range terms[i] {
			p *= f.val
		}
		return p
	}
	expr := render(func(i int) string { return factors(i, false) })
	steps := []string{expr}
	hasPar, hasMul := false, false
	for i := range terms {
		hasMul = hasMul || len(terms[i]) > 1
		for _, f := range terms[i] {
			hasPar = hasPar || f.par
		}
	}
	if hasPar {
		steps = append(steps, render(func(i int) string { return factors(i, true) }))
	}
	if hasMul {
		steps = append(steps, render(func(i int) string {
			if i == 0 {
				return itoa(product(0))
			}
			return signed(product(i))
		}))
	}
	val := product(0)
	for i := 1; i < len(terms); i++ {
		if ops[i-1] == "+" {
			val += product(i)
		} else {
			val -= product(i)
		}
	}
	steps = append(steps, itoa(val))
	return Problem{
		views:    []string{"Evaluate " + expr + ".", "Calculate the value of " + expr + "."},
		Answer:   itoa(val),
		Solution: strings.Join(steps, "=") + ".",
	}
}

func genMod(r *rand.Rand, level int) Problem {
	scale := []int{10, 30, 100}[level-1]
	a, b, c := 2+r.IntN(scale), 2+r.IntN(scale), r.IntN(scale)
	m := 3 + r.IntN([]int{8, 20, 60}[level-1])
	s := a*b + c
	q, rem := s/m, s%m
	return Problem{
		views: []string{fmt.Sprintf("What is (%d*%d+%d) mod %d?", a, b, c, m),
			fmt.Sprintf("Find the remainder when %d*%d+%d is divided by %d.", a, b, c, m)},
		Answer:   itoa(rem),
		Solution: fmt.Sprintf("%d*%d=%d, %d+%d=%d, %d=%d*%d+%d.", a, b, a*b, a*b, c, s, s, q, m, rem),
	}
}

// genLinear: a*x+b=c at levels 1-2 (negative coefficients at 2), and
// a*x+b=d*x+e at level 3, always with an integer solution.
func genLinear(r *rand.Rand, level int) Problem {
	x := r.IntN(21) - 10
	a := 2 + r.IntN(8)
	if level >= 2 && r.IntN(2) == 0 {
		a = -a
	}
	b := r.IntN(41) - 20
	lhs := func(a, b int) string {
		s := itoa(a) + "x"
		if b > 0 {
			s += "+" + itoa(b)
		} else if b < 0 {
			s += itoa(b)
		}
		return s
	}
	if level < 3 {
		c := a*x + b
		eq := lhs(a, b) + "=" + itoa(c)
		return Problem{
			views:    []string{"Solve for x: " + eq + ".", fmt.Sprintf("Find x if %s.", eq)},
			Answer:   itoa(x),
			Solution: fmt.Sprintf("%dx=%d-%s=%d, x=%d/%s=%d.", a, c, signed(b), c-b, c-b, signed(a), x),
		}
	}
	d := a - (1 + r.IntN(5))
	if d == 0 {
		d = a + 1
	}
	e := (a-d)*x + b
	eq := lhs(a, b) + "=" + lhs(d, e)
	return Problem{
		views:    []string{"Solve for x: " + eq + ".", fmt.Sprintf("Find x if %s.", eq)},
		Answer:   itoa(x),
		Solution: fmt.Sprintf("%dx-%sx=%d-%s, %dx=%d, x=%d.", a, signed(d), e, signed(b), a-d, e-b, x),
	}
}

type scenario struct{ name, item, get, give string }

var scenarios = []scenario{
	{"Ana", "apples", "picks", "eats"},
	{"Ben", "marbles", "wins", "loses"},
	{"Caro", "stamps", "buys", "gives away"},
	{"Dev", "coins", "finds", "spends"},
	{"Eli", "books", "borrows", "returns"},
	{"Fay", "cards", "collects", "trades away"},
}

// genWord: start, gain, loss; level 2 shares the result equally among
// friends; level 3 also doubles the start first. The rephrased view tells the
// same numbers in another scenario (name, item, verbs).
func genWord(r *rand.Rand, level int) Problem {
	s1 := r.IntN(len(scenarios))
	s2 := (s1 + 1 + r.IntN(len(scenarios)-1)) % len(scenarios)
	start, gain := 5+r.IntN(20), 2+r.IntN(15)
	base := start
	if level == 3 {
		base = 2 * start
	}
	loss := 1 + r.IntN(base+gain-1)
	total := base + gain - loss
	var divs []int
	if level >= 2 {
		if !hasDivisor(total) { // of two neighbours one is even: move the loss by one
			if loss > 1 {
				loss--
			} else {
				loss++
			}
			total = base + gain - loss
		}
		for d := 2; d <= 6; d++ {
			if total%d == 0 {
				divs = append(divs, d)
			}
		}
	}
	var sol []string
	if level == 3 {
		sol = append(sol, fmt.Sprintf("%d*2=%d", start, base))
	}
	sol = append(sol, fmt.Sprintf("%d+%d=%d", base, gain, base+gain), fmt.Sprintf("%d-%d=%d", base+gain, loss, total))
	ans, k := total, 0
	if len(divs) > 0 {
		k = divs[r.IntN(len(divs))]
		ans = total / k
		sol = append(sol, fmt.Sprintf("%d/%d=%d", total, k, ans))
	}
	render := func(s scenario) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s has %d %s.", s.name, start, s.item)
		if level == 3 {
			fmt.Fprintf(&b, " The number of %s doubles.", s.item)
		}
		fmt.Fprintf(&b, " %s %s %d more and %s %d.", s.name, s.get, gain, s.give, loss)
		if k > 0 {
			fmt.Fprintf(&b, " %s shares them equally among %d friends. How many does each friend get?", s.name, k)
		} else {
			fmt.Fprintf(&b, " How many %s does %s have now?", s.item, s.name)
		}
		return b.String()
	}
	// The scenarios are wording: the key is what the question asks.
	key := fmt.Sprintf("word %t %d %d %d %d", level == 3, start, gain, loss, k)
	return Problem{views: []string{render(scenarios[s1]), render(scenarios[s2])}, key: key, Answer: itoa(ans), Solution: strings.Join(sol, ", ") + "."}
}

func hasDivisor(n int) bool {
	for d := 2; d <= 6; d++ {
		if n%d == 0 {
			return true
		}
	}
	return false
}

// genSeq: arithmetic (level 1), geometric (level 2), growing differences
// (level 3). Four terms are shown.
func genSeq(r *rand.Rand, level int) Problem {
	terms := make([]int, 5)
	var rule string
	switch level {
	case 1:
		a, d := r.IntN(150)-50, 1+r.IntN(15)
		if r.IntN(2) == 0 {
			d = -d
		}
		for i := range terms {
			terms[i] = a + i*d
		}
		rule = fmt.Sprintf("Each term adds %d: %d+%s=%d.", d, terms[3], signed(d), terms[4])
	case 2:
		a, q := 1+r.IntN(20), pick(r, 2, 3, 4, 5, -2, -3)
		for i := range terms {
			terms[i] = a
			a *= q
		}
		rule = fmt.Sprintf("Each term is multiplied by %d: %d*%s=%d.", q, terms[3], signed(q), terms[4])
	default:
		a, d, dd := r.IntN(50), 1+r.IntN(12), 1+r.IntN(5)
		for i := range terms {
			terms[i] = a
			a += d + i*dd
		}
		rule = fmt.Sprintf("The differences grow by %d: %d, %d, %d, next %d, %d+%d=%d.", dd, terms[1]-terms[0], terms[2]-terms[1],
			terms[3]-terms[2], terms[4]-terms[3], terms[3], terms[4]-terms[3], terms[4])
	}
	shown := make([]string, 4)
	for i := range shown {
		shown[i] = itoa(terms[i])
	}
	list := strings.Join(shown, ", ")
	return Problem{
		views:    []string{"What comes next: " + list + ", ?", "Give the next number in the sequence " + list + "."},
		Answer:   itoa(terms[4]),
		Solution: rule,
	}
}
