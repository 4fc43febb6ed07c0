// Package record is what a run records, in one shape for every driver: a
// round record (Round: each member's losses, FLOPs and times, and the
// round's diagnostics) and an evaluation record (Eval). The local runner
// writes them to metrics.jsonl, a workflow has them written to the store
// in the same layout (WriteJSONL), and the report reads only them. The cohort's numbers (its vote,
// each member pair's kappa, complementarity and predictors) are computed
// here alone, from the members' per-problem answers and the normalised
// labels, so no driver can score them differently; the rules that read a
// round's diagnostics (warnings, collapse) live beside the record they
// read.
package record
