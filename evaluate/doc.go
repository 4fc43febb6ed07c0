// Package evaluate measures a model on labeled problems: pass@1 with greedy
// decoding, and maj@k over sampled completions, graded by the datasets
// package. Labels are used here and in diagnostics, never in a label-free
// reward.
package evaluate
