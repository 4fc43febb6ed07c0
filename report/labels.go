package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/corl-project/corl/spec"
)

// labels names each method group by one of its runs (reps[i] stands for
// group i): Run.Method, and where two groups share that name, the settings
// in which they differ ("rounds 60", "members nat-llama + nat-gpt2
// (frozen)"), so that a sweep's arms of one reward are told apart by what
// the sweep varied rather than by the name they share.
func labels(reps []*Run) []string {
	out := make([]string, len(reps))
	byName := map[string][]int{}
	for i, r := range reps {
		out[i] = r.Method()
		byName[out[i]] = append(byName[out[i]], i)
	}
	for name, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		flat := make([]map[string]string, len(idx))
		for j, i := range idx {
			flat[j] = settings(reps[i])
		}
		var differ []string
		for _, k := range slices.Sorted(maps.Keys(union(flat))) {
			for _, f := range flat[1:] {
				if f[k] != flat[0][k] {
					differ = append(differ, k)
					break
				}
			}
		}
		for j, i := range idx {
			var parts []string
			for _, k := range differ {
				if v, ok := flat[j][k]; ok {
					parts = append(parts, k+" "+v)
				}
			}
			if len(parts) == 0 {
				parts = []string{reps[i].Spec.Name}
			}
			out[i] = name + " — " + strings.Join(parts, ", ")
		}
	}
	return out
}

// settings is a run's spec as flat "key.path" -> value, without what
// does not make a method (methodSpec) or base locations, the members
// written as their names with their roles.
func settings(r *Run) map[string]string {
	s := methodSpec(r)
	var names []string
	for _, m := range s.Members {
		n := m.Name
		if m.Frozen {
			n += " (frozen)"
		}
		if m.View != 0 {
			n += fmt.Sprintf(" (view %d)", m.View)
		}
		names = append(names, n)
	}
	out := map[string]string{"members": strings.Join(names, " + ")}
	s.Members = nil
	for k, v := range spec.Written(s) {
		b, _ := json.Marshal(v)
		out[k] = strings.Trim(string(b), `"`)
	}
	return out
}

func union(ms []map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// Where keeps the runs whose settings match every condition: conditions
// maps a settings key ("reward.mode", "rounds", "members": the members'
// names joined by " + ", each marked "(frozen)" or "(view N)" where so)
// to a regular expression its value must match. A key no run has is an
// error, naming it, so that a misspelt condition does not silently keep
// nothing.
func Where(runs []*Run, conditions map[string]*regexp.Regexp) ([]*Run, error) {
	known := map[string]bool{}
	var kept []*Run
	for _, r := range runs {
		set := settings(r)
		ok := true
		for k, re := range conditions {
			v, has := set[k]
			if has {
				known[k] = true
			}
			ok = ok && has && re.MatchString(v)
		}
		if ok {
			kept = append(kept, r)
		}
	}
	for k := range conditions {
		if !known[k] && len(runs) > 0 {
			return nil, fmt.Errorf("no run has a setting %q (keys are spec paths such as reward.mode, rounds, optim.learning_rate, or members)", k)
		}
	}
	return kept, nil
}

// scoredMember is the member of r that a table scoring member scores: member
// itself, or with a comma-separated list (runs of different cohorts, each
// scoring its own model), the first of them r has; "" when r has none.
func scoredMember(r *Run, member string) string {
	if len(r.Evals) == 0 {
		return ""
	}
	for _, m := range strings.Split(member, ",") {
		if _, ok := r.Evals[0].Members[strings.TrimSpace(m)]; ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}
