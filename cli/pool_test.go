package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/report"
	"github.com/corl-project/corl/stats"
)

// TestPoolTwoStudies: corl pool reads one contrast from each study's
// --contrasts-json file and pools them with the weights given (equal
// shares by default): stats.Pool of the two, last in its table. A name
// the file lacks is refused listing the names it has; weights given to
// some contrasts only are refused.
func TestPoolTwoStudies(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows []report.PlannedRow) string {
		b, _ := json.Marshal(rows)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := report.PlannedRow{Name: "peers - copy", A: "p", B: "c", Diff: stats.Interval{Mean: 0.01, Lo: -0.002, Hi: 0.022}, SE: 0.006, DF: 40}
	b := report.PlannedRow{Name: "peers - copy", A: "q", B: "d", Diff: stats.Interval{Mean: 0.02, Lo: 0.0, Hi: 0.04}, SE: 0.01, DF: 12}
	fa := write("a.json", []report.PlannedRow{{Name: "other", DF: 3, SE: 1}, a})
	fb := write("b.json", []report.PlannedRow{b})
	md := filepath.Join(dir, "pooled.md")
	code, out, errs := run(t, "pool", "--name", "both", "--md", md, fa+":peers - copy@0.7", fb+":peers - copy@0.3")
	if code != 0 {
		t.Fatalf("pool: exit %d: %s", code, errs)
	}
	want := stats.Pool([]stats.Crossed{{Interval: a.Diff, SE: a.SE, DF: a.DF}, {Interval: b.Diff, SE: b.SE, DF: b.DF}}, []float64{0.7, 0.3})
	if math.Abs(want.Mean-0.013) > 1e-12 {
		t.Fatalf("pooled mean %v, want 0.7 x 0.01 + 0.3 x 0.02", want.Mean)
	}
	line := strings.Split(strings.TrimSpace(out), "\n")
	last := line[len(line)-1]
	if head := fmt.Sprintf("| both | %+.3f [%+.3f, %+.3f] | %.3g | — (pooled) |", want.Mean, want.Lo, want.Hi, want.P); len(line) != 5 || !strings.HasPrefix(last, head) {
		t.Errorf("pool table:\n%s\nwant its last line to start %q", out, head)
	}
	if got, _ := os.ReadFile(md); string(got) != out {
		t.Errorf("--md wrote\n%s\nprinted\n%s", got, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{fa + ":nobody"}, `has no contrast "nobody" (it has: other; peers - copy)`},
		{[]string{fa + ":peers - copy@0.5", fb + ":peers - copy"}, "1 of 2 contrasts have a weight"},
		{[]string{fa + ":peers - copy@-1"}, "want a number above 0"},
		{[]string{dir + "/a.txt"}, "want FILE.json:CONTRAST"},
	} {
		if code, _, errs := run(t, append([]string{"pool"}, c.args...)...); code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("pool %q: exit %d, %s; want an error saying %q", c.args, code, errs, c.want)
		}
	}
}
