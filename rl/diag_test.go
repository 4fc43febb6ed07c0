package rl

import (
	"strings"
	"testing"
)

func TestWarningsNameMembersWithoutSignal(t *testing.T) {
	d := Diagnostics{Models: []ModelDiag{{ZeroVarFrac: 0.95, LabeledFrac: 0.1}, {ZeroVarFrac: 0.3}}}
	w := d.Warnings([]string{"a", "b"})
	if len(w) != 1 || !strings.Contains(w[0], "member a: 95% of the round's prompts") || !strings.Contains(w[0], "corl eval --samples") {
		t.Errorf("warnings %q", w)
	}
}
