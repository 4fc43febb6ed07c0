package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
)

// decJSON is a decoder.
type decJSON struct {
	Type          string       `json:"type"`
	Decoders      []decJSON    `json:"decoders,omitempty"`
	Pattern       *patternJSON `json:"pattern,omitempty"`
	Content       string       `json:"content,omitempty"`
	Start         int          `json:"start,omitempty"`
	Stop          int          `json:"stop,omitempty"`
	Replacement   string       `json:"replacement,omitempty"`
	PrependScheme string       `json:"prepend_scheme,omitempty"`
	AddPrefix     *bool        `json:"add_prefix_space,omitempty"`
	Prefix        string       `json:"prefix,omitempty"`
	Suffix        string       `json:"suffix,omitempty"`
}

// decoder turns token strings into text pieces (a step of the chain).
type decoder func(tokens []string) []string

func parseDecoder(j *decJSON, at string) ([]decoder, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "Sequence":
		var ds []decoder
		for i := range j.Decoders {
			d, err := parseDecoder(&j.Decoders[i], fmt.Sprintf("%s.decoders[%d]", at, i))
			if err != nil {
				return nil, err
			}
			ds = append(ds, d...)
		}
		return ds, nil
	case "ByteLevel":
		return []decoder{byteLevelDecode}, nil
	case "Replace":
		if j.Pattern == nil || j.Pattern.String == "" {
			return nil, fmt.Errorf("%s: Replace decoders with a regex are not supported", at)
		}
		from, to := j.Pattern.String, j.Content
		return []decoder{func(ts []string) []string {
			for i := range ts {
				ts[i] = strings.ReplaceAll(ts[i], from, to)
			}
			return ts
		}}, nil
	case "ByteFallback":
		return []decoder{byteFallbackDecode}, nil
	case "Fuse":
		return []decoder{func(ts []string) []string { return []string{strings.Join(ts, "")} }}, nil
	case "Strip":
		content, start, stop := j.Content, j.Start, j.Stop
		return []decoder{func(ts []string) []string {
			for i, tok := range ts {
				for k := 0; k < start && strings.HasPrefix(tok, content) && content != ""; k++ {
					tok = tok[len(content):]
				}
				for k := 0; k < stop && strings.HasSuffix(tok, content) && content != ""; k++ {
					tok = tok[:len(tok)-len(content)]
				}
				ts[i] = tok
			}
			return ts
		}}, nil
	case "Metaspace":
		repl := j.Replacement
		if repl == "" {
			repl = metaSpace
		}
		prepend := j.PrependScheme != "never" && !(j.PrependScheme == "" && j.AddPrefix != nil && !*j.AddPrefix)
		return []decoder{func(ts []string) []string {
			for i := range ts {
				ts[i] = strings.ReplaceAll(ts[i], repl, " ")
				if i == 0 && prepend {
					ts[i] = strings.TrimPrefix(ts[i], " ")
				}
			}
			return ts
		}}, nil
	case "WordPiece":
		prefix := j.Prefix
		if prefix == "" {
			prefix = "##"
		}
		return []decoder{func(ts []string) []string {
			for i := range ts {
				if i > 0 {
					if strings.HasPrefix(ts[i], prefix) {
						ts[i] = ts[i][len(prefix):]
					} else {
						ts[i] = " " + ts[i]
					}
				}
			}
			return ts
		}}, nil
	case "BPEDecoder":
		suffix := j.Suffix
		if suffix == "" {
			suffix = "</w>"
		}
		return []decoder{func(ts []string) []string {
			for i := range ts {
				if i < len(ts)-1 {
					ts[i] = strings.ReplaceAll(ts[i], suffix, " ")
				} else {
					ts[i] = strings.ReplaceAll(ts[i], suffix, "")
				}
			}
			return ts
		}}, nil
	}
	return nil, fmt.Errorf("%s: unknown decoder type %q", at, j.Type)
}

// byteLevelDecode maps GPT-2's byte alphabet back to bytes. The bytes of
// an incomplete character are kept as they are (not replaced by U+FFFD),
// so text decoded a token at a time still grows by prefixes.
func byteLevelDecode(ts []string) []string {
	var b []byte
	for _, tok := range ts {
		ok := true
		start := len(b)
		for _, r := range tok {
			c, found := runeToByte[r]
			if !found {
				ok = false
				break
			}
			b = append(b, c)
		}
		if !ok {
			b = append(b[:start], tok...)
		}
	}
	return []string{string(b)}
}

// byteFallbackDecode turns runs of <0xXX> tokens into their bytes.
func byteFallbackDecode(ts []string) []string {
	var out []string
	var pending []byte
	flush := func() {
		if len(pending) > 0 {
			out = append(out, string(pending))
			pending = pending[:0]
		}
	}
	for _, tok := range ts {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
			if c, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				pending = append(pending, byte(c))
				continue
			}
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// Decode implements Tokenizer: the decoder chain over the ids' tokens,
// special tokens written out. Unknown ids are skipped.
func (t *BPE) Decode(ids []int32) string {
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.inv) || t.inv[id] == "" {
			continue
		}
		tokens = append(tokens, t.inv[id])
	}
	if t.dec == nil {
		if t.pre != nil && usesByteLevel(t.pre) {
			return byteLevelDecode(tokens)[0]
		}
		return strings.Join(tokens, " ")
	}
	for _, d := range t.dec {
		tokens = d(tokens)
	}
	return strings.Join(tokens, "")
}
