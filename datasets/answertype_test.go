package datasets

import "testing"

// TestAnswerTypes: each type's reading of responses and labels, as grading
// sees it (Judge: the response's extracted, normalised answer against the
// label).
func TestAnswerTypes(t *testing.T) {
	choicePrompt := "Which city is the capital of France?\nA) London\nB) Paris\n(C) Rome\nD. Berlin\nAnswer with a letter."
	for _, tc := range []struct {
		typ, prompt, response, label string
		want                         Verdict
	}{
		// text: case, whitespace, punctuation and articles ignored
		{TypeText, "", "The answer is Saturday.", "saturday", Correct},
		{TypeText, "", "The answer is the  Blue Whale!", "blue whale", Correct},
		{TypeText, "", `\boxed{\text{Paris}}`, "Paris", Correct},
		{TypeText, "", "Let me think.\nParis", "paris", Correct}, // the final line
		{TypeText, "", "The answer is London.", "Paris", Wrong},
		{TypeText, "", "The answer is a blue whale", "blue-whale", Correct},
		{TypeText, "", "", "Paris", NoAnswer},
		// choice: letter forms and the option's text
		{TypeChoice, choicePrompt, "The answer is B.", "B", Correct},
		{TypeChoice, choicePrompt, "The answer is (b)", "B", Correct},
		{TypeChoice, choicePrompt, "The answer is B) Paris", "B", Correct},
		{TypeChoice, choicePrompt, "The answer is Paris.", "B", Correct},
		{TypeChoice, choicePrompt, "I pick\nC", "C", Correct},
		{TypeChoice, choicePrompt, `\boxed{D}`, "B", Wrong},
		{TypeChoice, choicePrompt, "The answer is Madrid.", "B", NoAnswer},
		{TypeChoice, choicePrompt, "The answer is rome", "(C)", Correct},
		// expression: numerically equal at several points
		{TypeExpression, "", "The answer is (x-1)(x+1).", "x^2-1", Correct},
		{TypeExpression, "", `\boxed{\frac{x}{2}+1}`, "(x+2)/2", Correct},
		{TypeExpression, "", "The answer is 2x+1", "2*x + 1", Correct},
		{TypeExpression, "", "The answer is y = 3x", "3x", Correct},
		{TypeExpression, "", "The answer is x^2+1.", "x^2-1", Wrong},
		{TypeExpression, "", `The answer is \sqrt{x^2}`, "abs(x)", Correct},
		{TypeExpression, "", "The answer is 0.5", "1/2", Correct},
		{TypeExpression, "", "The answer is x +", "x", NoAnswer},
		// number: as before, and nothing else
		{TypeNumber, "", "The answer is 1,000.", "1000", Correct},
		{TypeNumber, "", `\boxed{\frac{1}{2}}`, "0.5", Correct},
		{TypeNumber, "", "The answer is Paris.", "3", NoAnswer},
	} {
		r := AnswerRule{Type: tc.typ}.ForPrompt(tc.prompt)
		ans, v := r.Judge(tc.response, tc.label)
		if v != tc.want {
			t.Errorf("%s: Judge(%q, %q) = %q, %v; want %v", tc.typ, tc.response, tc.label, ans, v, tc.want)
		}
	}
}

// TestEquivalentAnswersVoteTogether: answers a type counts as equal have one
// canonical form, so a vote counts them as one answer.
func TestEquivalentAnswersVoteTogether(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		same []string
	}{
		{TypeText, []string{"The Eiffel Tower", "eiffel tower", "Eiffel  Tower."}},
		{TypeChoice, []string{"B", "(B)", "b) Paris", "Paris"}},
		{TypeExpression, []string{"x^2-1", "(x+1)(x-1)", "x**2 - 1", `x^{2}-1`}},
		{TypeNumber, []string{"0.5", "1/2", `\frac{1}{2}`, ".50"}},
	} {
		r := AnswerRule{Type: tc.typ}.ForPrompt("A) London\nB) Paris")
		first := r.Normalize(tc.same[0])
		if first == "" {
			t.Fatalf("%s: %q does not parse", tc.typ, tc.same[0])
		}
		for _, s := range tc.same[1:] {
			if got := r.Normalize(s); got != first {
				t.Errorf("%s: %q -> %q, but %q -> %q", tc.typ, s, got, tc.same[0], first)
			}
		}
	}
}

func TestInferAnswerType(t *testing.T) {
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"3", "-1/2", "1,000"}, TypeNumber},
		{[]string{"A", "(C)", "d"}, TypeChoice},
		{[]string{"x^2-1", "2x+3", "5"}, TypeExpression},
		{[]string{"Paris", "blue whale", "3"}, TypeText},
		{nil, TypeText},
	} {
		if got := InferAnswerType(tc.labels); got != tc.want {
			t.Errorf("InferAnswerType(%q) = %s, want %s", tc.labels, got, tc.want)
		}
	}
	p := Parses([]string{"3", "Paris", "x+1", "B"})
	if p[TypeNumber] != 0.25 || p[TypeText] != 1 || p[TypeChoice] != 0.25 {
		t.Errorf("Parses = %v", p)
	}
}
