package evaluate

import (
	"strings"
	"testing"
)

// result builds a sampled evaluation from each problem's answers and the
// right answers.
func result(truth []string, answers ...[]string) Result {
	r := Result{Samples: len(answers[0]), SampleAnswers: answers, Truth: truth, SampleCorrect: make([]int, len(answers))}
	for i, as := range answers {
		for _, a := range as {
			if a == truth[i] {
				r.SampleCorrect[i]++
			}
		}
	}
	return r
}

func TestSignalOf(t *testing.T) {
	truth := []string{"1", "2", "3", "4"}
	self := result(truth,
		[]string{"1", "1", "1", "9"}, // mixed; vote 1, right; agrees in part
		[]string{"2", "2", "2", "2"}, // all right: no signal; vote right, all agree
		[]string{"7", "7", "8", "8"}, // all wrong, tie: unlabelled
		[]string{"5", "5", "4", "6"}, // mixed; vote 5, wrong; agrees in part
	)
	s, err := SignalOf(self, self)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mixed != 0.5 || s.Labeled != 0.75 || s.VoteMixed != 0.5 || s.LabelAcc != 2.0/3 {
		t.Errorf("self-vote signal %+v", s)
	}
	// A peer that votes right where self is wrong.
	peer := result(truth, []string{"1", "1"}, []string{"2", "2"}, []string{"3", "3"}, []string{"4", "4"})
	s, err = SignalOf(self, peer)
	if err != nil {
		t.Fatal(err)
	}
	if s.Labeled != 1 || s.LabelAcc != 1 || s.VoteMixed != 0.5 {
		t.Errorf("peer-vote signal %+v", s)
	}
	if a := s.Advice("peer's vote"); len(a) != 0 {
		t.Errorf("advice on a signal worth learning from: %q", a)
	}
	// A model that is always wrong, and agrees with itself.
	dead := result(truth, []string{"0", "0"}, []string{"0", "0"}, []string{"0", "0"}, []string{"0", "0"})
	s, _ = SignalOf(dead, dead)
	advice := strings.Join(s.Advice("model's own vote"), "\n")
	for _, want := range []string{"only 0% of problems have samples both right and wrong", "right on only 0%", "longer pretraining"} {
		if !strings.Contains(advice, want) {
			t.Errorf("advice %q lacks %q", advice, want)
		}
	}
	if _, err := SignalOf(Result{Samples: 1}, Result{Samples: 1}); err == nil || !strings.Contains(err.Error(), "--samples") {
		t.Errorf("one sample: %v", err)
	}
}
