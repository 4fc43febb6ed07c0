package spec

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// jsonKeys are the dotted keys of s's JSON that hold a value (not null).
func jsonKeys(t *testing.T, s RunSpec) []string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch x := v.(type) {
			case map[string]any:
				walk(prefix+k+".", x)
			case nil:
			default:
				keys = append(keys, prefix+k)
			}
		}
	}
	walk("", tree)
	slices.Sort(keys)
	return keys
}

// TestWrittenIsWhatJSONWrites: Written names exactly the keys a spec's JSON
// holds, for the defaults and for a spec with a checker, a data file and
// omitted fields set.
func TestWrittenIsWhatJSONWrites(t *testing.T) {
	a := Default()
	b := Default()
	b.Data.File, b.Data.Checker.Command, b.Generation.KVCache, b.MaxFLOPs = "d.jsonl", []string{"x"}, "f16", 1e12
	b.Data.Tasks = nil
	for _, s := range []RunSpec{a, b} {
		got := slices.Sorted(maps.Keys(Written(s)))
		if want := jsonKeys(t, s); !slices.Equal(got, want) {
			t.Errorf("Written %v\nJSON    %v", got, want)
		}
	}
}

// TestSetLaterWins: settings apply in order through the spec's JSON; an
// unknown key is named; keys left alone keep their values.
func TestSetLaterWins(t *testing.T) {
	s := Default()
	s.Rounds = 7
	err := Set(&s, Setting{"optim.learning_rate", 0.003}, Setting{"reward.mode", "self-vote"}, Setting{"optim.learning_rate", 0.01},
		Setting{"members", []any{map[string]any{"name": "a", "base": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Optim.LearningRate != 0.01 || s.Reward.Mode != SelfVote || s.Rounds != 7 || len(s.Members) != 1 || s.Members[0].Base != "b" {
		t.Errorf("after Set: %+v", s)
	}
	if err := Set(&s, Setting{"optim.lr", 1}); err == nil || err.Error() != `"optim.lr" is not a run spec key` {
		t.Errorf("unknown key: %v", err)
	}
}
