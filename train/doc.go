// Package train runs a cohort in one process: `corl train --local`. It loads
// the members' base checkpoints, draws RL prompts from the spec's data, runs
// rl.Round for every round, evaluates, checkpoints, and appends one JSON line
// of metrics per round. The Temporal pipeline runs the same pieces
// (package cohort) as activities; this is the quick-experiment path.
package train
