package cohort

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/tokenizer"
)

// CheckMembers checks, before any compute, what would otherwise fail at a
// run's first generation: that each member's tokenizer encodes every RL and
// evaluation prompt as that member sees it (its view), and that its longest
// prompt plus generation.max_completion_length fits in its positions. Each
// error names the key, the member and the file. Members whose base is not a
// local directory (a blob-store reference) are checked where they load.
func CheckMembers(s *spec.RunSpec, d *Data) error {
	for i, ms := range s.Members {
		if st, err := os.Stat(ms.Base); err != nil || !st.IsDir() {
			continue
		}
		cfg, err := model.ReadConfig(ms.Base)
		if err != nil {
			return fmt.Errorf("members[%d] %s: %w", i, ms.Name, err)
		}
		tok, err := tokenizer.Load(ms.Base)
		if err != nil {
			return fmt.Errorf("members[%d] %s: %w", i, ms.Name, err)
		}
		longest, longestID := 0, ""
		measure := func(id, text string) error {
			ids, err := tok.Encode(evaluate.PromptText(text))
			if err != nil {
				return fmt.Errorf("members[%d] %s: the tokenizer in %s cannot encode prompt %s: %w", i, ms.Name, ms.Base, id, err)
			}
			if len(ids) > longest {
				longest, longestID = len(ids), id
			}
			return nil
		}
		for _, p := range d.RL {
			if err := measure(p.ID, p.Views[ms.View%len(p.Views)]); err != nil {
				return err
			}
		}
		eval := d.Eval
		if ms.View != 0 {
			eval = append(append([]datasets.Problem(nil), eval...), datasets.Rephrase(eval, ms.View)...)
		}
		for _, p := range eval {
			if err := measure(p.ID, p.Prompt); err != nil {
				return err
			}
		}
		if longest >= cfg.MaxSeq {
			return fmt.Errorf("members[%d] %s: its longest prompt (%s, %d tokens) alone fills the model's %d positions (%s)",
				i, ms.Name, longestID, longest, cfg.MaxSeq, filepath.Join(ms.Base, "config.json"))
		}
		if need := longest + s.Generation.MaxCompletion; need > cfg.MaxSeq {
			return fmt.Errorf("generation.max_completion_length: %d tokens after member %s's longest prompt (%s, %d tokens) need %d positions; "+
				"the model has %d (%s): shorten it to at most %d", s.Generation.MaxCompletion, ms.Name, longestID, longest, need,
				cfg.MaxSeq, filepath.Join(ms.Base, "config.json"), cfg.MaxSeq-longest)
		}
	}
	return nil
}
