package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/pipeline/history"
	"github.com/corl-project/corl/record"
)

// WriteRecords writes the run's records so far to the store, as a local
// run's directory holds them (blob.RecordsKey: spec.json, metrics.jsonl,
// and complete once the run is done). They are built from the run's
// history, across every continue-as-new, by the one builder the report
// used to read histories with (history.ReadRun, pipeline.Records), so the
// store's records are the history's; each write replaces the last, so a
// retried or repeated write is harmless. The store keeps them after the
// namespace's retention has deleted the history. Without a client or a
// store there is nothing to read or write.
func (a *Activities) WriteRecords(ctx context.Context, in pipeline.RecordsInput) error {
	if a.Client == nil || a.Store == nil {
		return nil
	}
	h, err := history.ReadRun(ctx, a.Client, in.Run)
	if err != nil {
		return fmt.Errorf("records of %s: %w", in.Run, err)
	}
	var lines bytes.Buffer
	if err := record.WriteJSONL(&lines, h.Records.Rounds(), h.Records.Evals()); err != nil {
		return err
	}
	sj, err := json.MarshalIndent(h.Spec, "", "  ")
	if err != nil {
		return err
	}
	put := func(name string, body []byte) error {
		if err := a.Store.Put(ctx, blob.RecordsKey(in.Run, name), body); err != nil {
			return fmt.Errorf("records of %s: %w", in.Run, err)
		}
		return nil
	}
	// metrics.jsonl before spec.json: a reader that finds the spec finds
	// records at least as new as it.
	if err := put("metrics.jsonl", lines.Bytes()); err != nil {
		return err
	}
	if err := put("spec.json", sj); err != nil {
		return err
	}
	if in.Done {
		return put("complete", []byte(in.Run+"\n"))
	}
	return nil
}
