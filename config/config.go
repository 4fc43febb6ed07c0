package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/spec"
)

// RunSpec is spec.RunSpec; the types live there so workflows can hold them.
type RunSpec = spec.RunSpec

// defaults are spec.Default() as dotted viper keys: one table of embedded
// settings for specs from files, the environment, flags and plain JSON.
// Members, listed in full by a spec, default to an empty list of mappings.
var defaults = func() map[string]any {
	d := spec.Flatten(spec.Default())
	d["members"] = []any{}
	return d
}()

// Load reads the spec from file (may be empty: defaults only), the CORL_*
// environment (CORL_GRPO_BETA=0.04 sets grpo.beta) and overrides (dotted
// keys, as flags give them), in increasing precedence.
func Load(file string, getenv func(string) string, overrides map[string]any) (*RunSpec, error) {
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	if file != "" {
		if err := jsonSyntax(file); err != nil {
			return nil, err
		}
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("read config %s: %w", file, err)
		}
		if err := unknownKeys(v.AllSettings(), ""); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := Layer(v, defaults, getenv, overrides); err != nil {
		return nil, err
	}
	where := func(err error) error { // name the user's file
		if file == "" {
			return err
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := integerRanges(v); err != nil {
		return nil, where(err)
	}
	rs, err := decode(v)
	if err != nil {
		return nil, where(err)
	}
	if len(rs.Data.Checker.Command) == 1 {
		rs.Data.Checker.Command = strings.Fields(rs.Data.Checker.Command[0])
	}
	if file != "" {
		ResolveBases(rs.Members, filepath.Dir(file))
		resolveChecker(&rs.Data.Checker, filepath.Dir(file))
	}
	inferAnswerType(&rs)
	if err := Validate(&rs); err != nil {
		return nil, err
	}
	return &rs, nil
}

// decode reads v's settings into a spec by the spec's json tags, the one
// spelling of its keys.
func decode(v *viper.Viper) (RunSpec, error) {
	var rs RunSpec
	dec := func(c *mapstructure.DecoderConfig) {
		c.ErrorUnused = true
		c.WeaklyTypedInput = true
		c.TagName = "json"
	}
	if err := v.Unmarshal(&rs, dec); err != nil {
		return rs, decodeError(err)
	}
	return rs, nil
}

// decodeError rewrites the decoder's "decoding failed due to the following
// error(s): 'key' expected ..." as one "key: expected ..." line per error.
func decodeError(err error) error {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if key, rest, ok := strings.Cut(strings.TrimPrefix(l, "'"), "' "); ok && strings.HasPrefix(l, "'") {
			lines = append(lines, key+": "+rest)
		}
	}
	if len(lines) == 0 {
		return err
	}
	return errors.New(strings.Join(lines, "; "))
}

// memberKeys are the keys of a member, sorted.
var memberKeys = spec.MemberKeys()

// memberShapes checks that members is a list of mappings of known keys.
func memberShapes(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("members: want a list of mappings with name, base, view, frozen; got %s", shown(v))
	}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("members[%d]: want a mapping with name, base, view, frozen; got %s", i, shown(item))
		}
		for mk := range m {
			if !slices.Contains(memberKeys, mk) {
				return fmt.Errorf("unknown key \"members[%d].%s\"; allowed here: %s", i, mk, strings.Join(memberKeys, ", "))
			}
		}
	}
	return nil
}

// sectionKeys lists the keys directly under a section prefix ("optim."),
// none when prefix is not a section.
func sectionKeys(prefix string) []string {
	seen := map[string]bool{}
	for k := range defaults {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			seen[strings.SplitN(rest, ".", 2)[0]] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shown is a value as a spec would write it, for error messages.
func shown(v any) string {
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// jsonSyntax reports a JSON spec's syntax error with its line and column
// (the parser behind viper gives only a byte offset, or nothing).
func jsonSyntax(file string) error {
	if !strings.EqualFold(filepath.Ext(file), ".json") {
		return nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(b, &v); errors.As(err, &se) {
		line, col := 1, 1
		for _, c := range b[:min(int(se.Offset), len(b))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Errorf("%s: line %d, column %d: %v", file, line, col-1, se)
	}
	return nil
}

// Integer keys of the spec: signed ones and seeds (unsigned), by their
// fields' types. mapstructure would wrap -1 into a huge seed and an
// overflowing number into a negative one, so the raw values are checked
// first.
var intKeys, uintKeys = func() (signed, unsigned []string) {
	for k, v := range defaults {
		switch v.(type) {
		case int:
			signed = append(signed, k)
		case uint64:
			unsigned = append(unsigned, k)
		}
	}
	slices.Sort(signed)
	slices.Sort(unsigned)
	return signed, unsigned
}()

func integerRanges(v *viper.Viper) error {
	for _, set := range []struct {
		keys     []string
		unsigned bool
	}{{intKeys, false}, {uintKeys, true}} {
		unsigned := set.unsigned
		for _, k := range set.keys {
			raw := v.Get(k)
			if raw == nil {
				continue
			}
			s := strings.TrimSpace(fmt.Sprint(raw))
			if f, ok := raw.(float64); ok && f == math.Trunc(f) { // YAML reads big whole numbers as floats
				if math.Abs(f) >= 1<<63 {
					return fmt.Errorf("%s: %s is out of range", k, s)
				}
				s = strconv.FormatInt(int64(f), 10)
			}
			var err error
			if unsigned {
				_, err = strconv.ParseUint(s, 10, 64)
			} else {
				_, err = strconv.ParseInt(s, 10, 64)
			}
			var ne *strconv.NumError
			switch {
			case err == nil:
			case errors.As(err, &ne) && ne.Err == strconv.ErrRange:
				return fmt.Errorf("%s: %s is out of range", k, s)
			case unsigned:
				return fmt.Errorf("%s: %s is not a non-negative integer", k, s)
			default:
				return fmt.Errorf("%s: %s is not an integer", k, s)
			}
		}
	}
	return nil
}

// ResolveBases makes a relative member base that does not exist from the
// working directory but does next to the spec file (in specDir) point
// there, so a spec and its models can travel together.
func ResolveBases(members []spec.Member, specDir string) {
	for i, m := range members {
		if m.Base == "" || filepath.IsAbs(m.Base) || strings.Contains(m.Base, ":") {
			continue
		}
		if _, err := os.Stat(m.Base); err == nil {
			continue
		}
		if p := filepath.Join(specDir, m.Base); dirExists(p) {
			members[i].Base = p
		}
	}
}

// resolveChecker makes the checker's program and arguments that name
// files next to the spec file (and not in the working directory) absolute:
// the checker runs in an empty directory of its own.
func resolveChecker(c *spec.Checker, specDir string) {
	for i, a := range c.Command {
		if a == "" || filepath.IsAbs(a) || strings.HasPrefix(a, "-") {
			continue
		}
		for _, p := range []string{a, filepath.Join(specDir, a)} {
			if st, err := os.Stat(p); err == nil && !st.IsDir() && (i > 0 || strings.Contains(a, "/")) {
				if abs, err := filepath.Abs(p); err == nil {
					c.Command[i] = abs
				}
				break
			}
		}
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Layer applies the CORL_* environment (CORL_GRPO_BETA for grpo.beta) and
// then the overrides on top of what v read, for the keys in known.
func Layer(v *viper.Viper, known map[string]any, getenv func(string) string, overrides map[string]any) error {
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if val := getenv("CORL_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_"))); val != "" {
			v.Set(k, val)
		}
	}
	for k, val := range overrides {
		if _, ok := known[k]; !ok {
			return fmt.Errorf("unknown setting %q", k)
		}
		v.Set(k, val)
	}
	return nil
}

// unknownKeys rejects keys outside the schema, naming the key and listing the
// allowed ones at that level.
func unknownKeys(settings map[string]any, prefix string) error {
	allowed := map[string]bool{}
	for k := range defaults {
		if strings.HasPrefix(k, prefix) {
			rest := strings.TrimPrefix(k, prefix)
			allowed[strings.SplitN(rest, ".", 2)[0]] = true
		}
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !allowed[k] {
			list := make([]string, 0, len(allowed))
			for a := range allowed {
				list = append(list, a)
			}
			sort.Strings(list)
			return fmt.Errorf("unknown key %q; allowed here: %s", prefix+k, strings.Join(list, ", "))
		}
		if k == "members" {
			if err := memberShapes(settings[k]); err != nil {
				return err
			}
			continue
		}
		if sub, ok := settings[k].(map[string]any); ok {
			if err := unknownKeys(sub, prefix+k+"."); err != nil {
				return err
			}
		} else if keys := sectionKeys(prefix + k + "."); len(keys) > 0 {
			return fmt.Errorf("%s: want a mapping with keys %s; got %s", prefix+k, strings.Join(keys, ", "), shown(settings[k]))
		}
	}
	return nil
}

// JSON returns the spec as indented JSON (what `temporal workflow start
// --input-file` takes).
func JSON(s *RunSpec) ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// inferAnswerType sets data.answer_type, when a data file's spec leaves it
// out, to the type that reads every label of the file (InferAnswerType).
// A file that cannot be read here is left to the loader to report.
func inferAnswerType(s *RunSpec) {
	if s.Data.File == "" || s.Data.AnswerType != "" {
		return
	}
	ds, err := datasets.Load(s.Data.File, datasets.LoadOptions{PromptField: s.Data.PromptField, AnswerField: s.Data.AnswerField})
	if err != nil {
		return
	}
	if labels := ds.Labels.Present(); len(labels) > 0 {
		s.Data.AnswerType = datasets.InferAnswerType(labels)
	}
}
