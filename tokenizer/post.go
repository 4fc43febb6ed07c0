package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postJSON is a post-processor: a template (or Bert/Roberta's fixed one),
// ByteLevel (offsets only) or a sequence of them.
type postJSON struct {
	Type   string `json:"type"`
	Single []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken,omitempty"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence,omitempty"`
	} `json:"single,omitempty"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens,omitempty"`
	Sep        []json.RawMessage `json:"sep,omitempty"`
	Cls        []json.RawMessage `json:"cls,omitempty"`
	Processors []postJSON        `json:"processors,omitempty"`
}

type postItem struct {
	sequence bool
	ids      []int32
}

func (t *BPE) parsePost(j *postJSON, at string) ([]postItem, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Type {
	case "ByteLevel":
		return nil, nil
	case "TemplateProcessing":
		var items []postItem
		for i, it := range j.Single {
			switch {
			case it.Sequence != nil:
				items = append(items, postItem{sequence: true})
			case it.SpecialToken != nil:
				st, ok := j.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("%s.single[%d]: special token %q is not in special_tokens", at, i, it.SpecialToken.ID)
				}
				items = append(items, postItem{ids: st.IDs})
			}
		}
		return items, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenIDOf(j.Cls, at+".cls")
		if err != nil {
			return nil, err
		}
		sep, err := tokenIDOf(j.Sep, at+".sep")
		if err != nil {
			return nil, err
		}
		return []postItem{{ids: []int32{cls}}, {sequence: true}, {ids: []int32{sep}}}, nil
	case "Sequence":
		items := []postItem{{sequence: true}}
		for i := range j.Processors {
			inner, err := t.parsePost(&j.Processors[i], fmt.Sprintf("%s.processors[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if inner == nil {
				continue
			}
			var next []postItem
			for _, it := range inner {
				if it.sequence {
					next = append(next, items...)
				} else {
					next = append(next, it)
				}
			}
			items = next
		}
		return items, nil
	}
	return nil, fmt.Errorf("%s: unknown post-processor type %q", at, j.Type)
}

// tokenIDOf reads Bert's ["[SEP]", 102] pair.
func tokenIDOf(pair []json.RawMessage, at string) (int32, error) {
	if len(pair) != 2 {
		return 0, fmt.Errorf("%s: want [token, id]", at)
	}
	var id int32
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, fmt.Errorf("%s: %w", at, err)
	}
	return id, nil
}
