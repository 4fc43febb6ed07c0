// Package rl is corl's algorithm, free of Temporal and of I/O: reward
// strategies (peer, self and ground-truth), GRPO advantages and loss, cohort
// diagnostics and compute accounting, and the round (generate -> grade ->
// aggregate -> update) as plain Go over a cohort held in memory.
package rl
