package datasets

import "testing"

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		ok         bool
	}{
		{`so \boxed{42}`, "42", true},
		{`\boxed{\frac{1}{2}} and later \boxed{\frac{3}{4}}`, `\frac{3}{4}`, true},
		{`nested \boxed{\{1, \{2\}\}} end`, `\{1, \{2\}\}`, true},
		{`\boxed{a{b{c}}d}`, "a{b{c}}d", true},
		{`unbalanced \boxed{12`, "", false}, // no marker: no fallback by default
		{`The answer is 17.`, "17", true},
		{`the answer is 3.5. Done`, "3.5", true},
		{`The final answer is: -4`, "-4", true},
		{"first the answer is 1\nthen The answer is 2\n", "2", true},
		{"work\n#### 1,234\n", "1,234", true},
		{"I think 3 apples and then 7 pears", "", false},
		{"no digits here", "", false},
		{"", "", false},
		{`\fbox{9}`, "9", true},
		{"The answer is Paris.", "Paris", true},
		// Degenerate answers are no answers, whatever the rule.
		{"The answer is -.", "", false},
		{"The answer is .", "", false},
		{`\boxed{ }`, "", false},
		{"#### ?", "", false},
	} {
		got, ok := Extract(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Extract(%q) = %q, %v; want %q, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

// TestAnswerRules: corl's tasks take only numbers and never fall back to the
// last number (a collapsing model's garbage must not parse); user data can
// opt in to the fallback.
func TestAnswerRules(t *testing.T) {
	fallback := AnswerRule{LastNumber: true}
	for _, tc := range []struct {
		rule       AnswerRule
		text, want string
		ok         bool
	}{
		{TaskAnswers, "The answer is 42.", "42", true},
		{TaskAnswers, "The answer is -3/4.", "-3/4", true},
		{TaskAnswers, "The answer is -.", "", false},
		{TaskAnswers, "The aanswer 0.", "", false},
		{TaskAnswers, "The answer is 42 apples.", "", false},
		{TaskAnswers, "The answer is seven.", "", false},
		{TaskAnswers, `\boxed{\frac{1}{2}}`, `\frac{1}{2}`, true},
		{fallback, "I think 3 apples and then 7 pears", "7", true},
		{fallback, "the total is -0.25", "-0.25", true},
		{fallback, `unbalanced \boxed{12`, "12", true},
		{fallback, "The answer is -.", "", false}, // a malformed marked answer is not replaced by a guess
		{AnswerRule{}, "The answer is blue whale.", "blue whale", true},
	} {
		got, ok := tc.rule.Extract(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v.Extract(%q) = %q, %v; want %q, %v", tc.rule, tc.text, got, ok, tc.want, tc.ok)
		}
	}
	if v := TaskAnswers.Grade("The answer is -.", "-1"); v != NoAnswer {
		t.Errorf("degenerate answer graded %v, want no answer", v)
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{" 42 ", "42"},
		{"1,234", "1234"},
		{"1,234,567.50", "1234567.5"},
		{"2.50", "2.5"},
		{"5.0", "5"},
		{"-0.0", "0"},
		{`\frac{1}{2}`, "0.5"},
		{`\dfrac{3}{4}`, "0.75"},
		{`\frac12`, "0.5"},
		{`\frac{1}{3}`, "1/3"},
		{"2/6", "1/3"},
		{"1/2", "0.5"},
		{"50%", "50"},
		{`50\%`, "50"},
		{"$7$", "7"},
		{`\text{7 apples}`, "7apples"},
		{`\left(3\right)`, "(3)"},
		{"x = 5", "5"},
		{"12.", "12"},
		{"Yes", "yes"},
		{"1/0", "1/0"},
		{".5", "0.5"},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEquivalentAndGrade(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{"1/2", "0.5", true}, {`\frac{1}{2}`, "0.5", true}, {`\frac{1}{2}`, "1/2", true},
		{"1,000", "1000", true}, {"3", "3.00", true}, {"3", "4", false}, {"-2", "2", false},
		{"1/3", "0.333", false}, {"abc", "ABC", true},
	} {
		if got := Equivalent(tc.a, tc.b); got != tc.eq {
			t.Errorf("Equivalent(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.eq)
		}
	}
	if v := Grade(`so \boxed{0.5}`, `\frac{1}{2}`); v != Correct {
		t.Errorf("grade = %v, want correct", v)
	}
	if v := Grade("the answer is 3", "4"); v != Wrong {
		t.Errorf("grade = %v, want wrong", v)
	}
	if v := Grade("I don't know", "4"); v != NoAnswer {
		t.Errorf("grade = %v, want no answer", v)
	}
}
