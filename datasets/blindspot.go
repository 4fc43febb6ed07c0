package datasets

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
)

// A BlindSpot is a systematic error taught to a base in pretraining: on the
// problems that one visible feature selects, a share of the worked
// solutions follow a wrong procedure, always the same one, so that the
// base's most likely answer to such a problem is wrong while the right one
// keeps some probability. Two procedures:
//
//	mod    (a*b+c) mod m: forget to add c, selected by the parity of c
//	linear a*x+b=c: flip the sign of x in the last step, selected by the parity of b
//
// Bases taught complementary blind spots (odd and even) err on disjoint
// problems: a controlled form of Co-RL's premise that different models'
// errors are less correlated than one model's. The other tasks, and
// level-3 linear equations, are never affected.
type BlindSpot struct {
	Parity string  `json:"parity"` // "odd" or "even": the class of c (mod) or b (linear) affected
	Rate   float64 `json:"rate"`   // share of that class's pretraining solutions that are wrong
}

var (
	modPrompt    = regexp.MustCompile(`^What is \((\d+)\*(\d+)\+(\d+)\) mod (\d+)\?$`)
	linearPrompt = regexp.MustCompile(`^Solve for x: (-?\d+)x([+-]\d+)?=(-?\d+)\.$`)
)

// Validate checks the parity and the rate.
func (b BlindSpot) Validate() error {
	if b.Parity != "odd" && b.Parity != "even" {
		return fmt.Errorf("blind spot parity %q: want odd or even", b.Parity)
	}
	if !(b.Rate > 0 && b.Rate <= 1) {
		return fmt.Errorf("blind spot rate %v: want a share in (0, 1]", b.Rate)
	}
	return nil
}

// Selects reports whether p is in the blind spot's class (whatever the
// rate): the problems on which a base taught it errs.
func (b BlindSpot) Selects(p Problem) bool {
	_, ok := b.wrong(p)
	return ok
}

// wrong is p with the blind spot's wrong solution and answer, or false when
// p is not in its class.
func (b BlindSpot) wrong(p Problem) (Problem, bool) {
	if len(p.views) == 0 {
		return p, false
	}
	want := 1
	if b.Parity == "even" {
		want = 0
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch p.Task {
	case "mod":
		g := modPrompt.FindStringSubmatch(p.views[0])
		if g == nil {
			return p, false
		}
		a, bb, c, m := atoi(g[1]), atoi(g[2]), atoi(g[3]), atoi(g[4])
		if c%2 != want {
			return p, false
		}
		prod := a * bb
		p.Answer = itoa(prod % m)
		p.Solution = fmt.Sprintf("%d*%d=%d, %d=%d*%d+%d. The answer is %s.", a, bb, prod, prod, prod/m, m, prod%m, p.Answer)
		return p, true
	case "linear":
		g := linearPrompt.FindStringSubmatch(p.views[0])
		if g == nil {
			return p, false
		}
		a, k, c := atoi(g[1]), atoi(g[2]), atoi(g[3])
		if (k%2+2)%2 != want || a == 0 || (c-k)%a != 0 {
			return p, false
		}
		x := (c - k) / a
		p.Answer = itoa(-x)
		p.Solution = fmt.Sprintf("%dx=%d-%s=%d, x=%d/%s=%d. The answer is %s.", a, c, signed(k), c-k, c-k, signed(a), -x, p.Answer)
		return p, true
	}
	return p, false
}

// Apply returns set with the blind spot taught: each selected problem gets
// the wrong solution with probability Rate, decided by a hash of seed and
// the problem's content (every wording of a problem gets the same).
func (b BlindSpot) Apply(set []Problem, seed uint64) []Problem {
	out := make([]Problem, len(set))
	for i, p := range set {
		out[i] = p
		q, ok := b.wrong(p)
		if !ok {
			continue
		}
		h := fnv.New64a()
		binary.Write(h, binary.LittleEndian, seed)
		h.Write([]byte(p.key))
		if float64(h.Sum64()%1_000_000)/1e6 < b.Rate {
			out[i] = q
		}
	}
	return out
}
