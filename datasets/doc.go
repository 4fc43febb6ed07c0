// Package datasets provides corl's problems: built-in reasoning task families
// with verifiable answers and short worked solutions, deterministic from a
// seed and split into disjoint labeled-pretraining, unlabeled-RL and labeled
// evaluation sets; row-aligned rephrased views of any set; loaders for user
// JSONL and Parquet files; and answer extraction, normalisation and grading.
package datasets
