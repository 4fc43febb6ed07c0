package spec

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pageKeys reads the keys docs/specs.md's table names. A row's first cell
// lists keys in backquotes; the first is written in full and the rest
// relative to its section ("data.checker.command", "timeout_seconds"
// means data.checker.timeout_seconds); "adam_beta1/2" is adam_beta1 and
// adam_beta2.
func pageKeys(page string) map[string]int {
	keys := map[string]int{}
	quoted := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(page, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| `") {
			continue
		}
		prefix := ""
		for i, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			k := m[1]
			if i == 0 {
				if dot := strings.LastIndex(k, "."); dot >= 0 {
					prefix = k[:dot+1]
				}
			} else if !strings.Contains(k, ".") {
				k = prefix + k
			}
			if stem, alt, ok := strings.Cut(k, "/"); ok {
				keys[stem]++
				keys[stem[:len(stem)-len(alt)]+alt]++
				continue
			}
			keys[k]++
		}
	}
	return keys
}

// TestSpecPageNamesEveryKey: the run-spec page documents every key of the
// spec once and no key the spec lacks, so a key added, renamed or removed
// in code fails here until the page says so.
func TestSpecPageNamesEveryKey(t *testing.T) {
	b, err := os.ReadFile("../docs/specs.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := pageKeys(string(b))
	keys := Keys()
	for _, k := range keys {
		switch documented[k] {
		case 0:
			t.Errorf("docs/specs.md: key %s is not documented", k)
		case 1:
		default:
			t.Errorf("docs/specs.md: key %s is documented %d times", k, documented[k])
		}
	}
	for k := range documented {
		if !slices.Contains(keys, k) && !strings.HasPrefix(k, "members[].") {
			t.Errorf("docs/specs.md: documents %s, which the spec does not have", k)
		}
	}
}
