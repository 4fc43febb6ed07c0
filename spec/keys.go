package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// A run spec's keys are its fields' json tags, joined by dots
// ("optim.learning_rate"): the one spelling that spec files, CORL_*
// variables, --set flags, sweep grids and the report's settings share.
// Keys, Flatten, Written and Set are the only code that walks them.

// Keys lists every dotted key of a run spec ("optim.learning_rate",
// "members", ...), sorted: what a spec file, a flag or a sweep's grid may
// set.
func Keys() []string {
	flat := Flatten(RunSpec{})
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MemberKeys lists the keys of one member ("base", "frozen", ...), sorted.
func MemberKeys() []string {
	var keys []string
	t := reflect.TypeFor[Member]()
	for i := 0; i < t.NumField(); i++ {
		if name, _ := tag(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// Flatten maps s to every dotted key and its value (float32 fields stay
// float32); members, the one list of mappings, is one key holding
// s.Members.
func Flatten(s RunSpec) map[string]any {
	out := map[string]any{}
	walk(reflect.ValueOf(s), "", false, out)
	return out
}

// Written is Flatten less what s's JSON leaves out: omitempty and omitzero
// fields at their zero value, and null lists. It is the settings a spec
// written as JSON states.
func Written(s RunSpec) map[string]any {
	out := map[string]any{}
	walk(reflect.ValueOf(s), "", true, out)
	return out
}

func walk(v reflect.Value, prefix string, written bool, out map[string]any) {
	for i := 0; i < v.NumField(); i++ {
		name, opts := tag(v.Type().Field(i))
		if name == "" {
			continue
		}
		f := v.Field(i)
		if written && omitted(f, opts) {
			continue
		}
		if f.Kind() == reflect.Struct {
			walk(f, prefix+name+".", written, out)
			continue
		}
		out[prefix+name] = f.Interface()
	}
}

// tag is a field's JSON name ("" when it has none) and options.
func tag(f reflect.StructField) (string, []string) {
	parts := strings.Split(f.Tag.Get("json"), ",")
	if parts[0] == "-" {
		return "", nil
	}
	return parts[0], parts[1:]
}

// omitted says whether encoding/json leaves f out (or writes it as null).
func omitted(f reflect.Value, opts []string) bool {
	switch f.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		if f.IsNil() {
			return true
		}
	}
	if slices.Contains(opts, "omitzero") && f.IsZero() {
		return true
	}
	if !slices.Contains(opts, "omitempty") {
		return false
	}
	switch f.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return f.Len() == 0
	case reflect.Struct:
		return false
	}
	return f.IsZero()
}

// Setting is one dotted key and a value for it, as decoded from JSON (or
// YAML).
type Setting struct {
	Key   string
	Value any
}

// Set applies settings to s in order (a later one wins over an earlier one
// of the same key) through s's JSON: what a file holding those values would
// give, with the keys it leaves out at their defaults.
func Set(s *RunSpec, settings ...Setting) error {
	keys := Keys()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	for _, set := range settings {
		if !slices.Contains(keys, set.Key) {
			return fmt.Errorf("%q is not a run spec key", set.Key)
		}
		path := strings.Split(set.Key, ".")
		node := tree
		for _, k := range path[:len(path)-1] {
			sub, ok := node[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				node[k] = sub
			}
			node = sub
		}
		node[path[len(path)-1]] = set.Value
	}
	if b, err = json.Marshal(tree); err != nil { // map keys sorted: deterministic
		return err
	}
	var out RunSpec
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	*s = out
	return nil
}
