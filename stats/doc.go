// Package stats is the uncertainty reported with corl's numbers: 95%
// percentile-bootstrap intervals of a mean over problems, a paired
// bootstrap of the difference between two methods scored on the same
// problems, McNemar's exact test on paired right/wrong outcomes, the
// difference between methods trained over several seeds with both seed
// and problem variance in it (CrossedDiff), and Holm's correction for a
// table of tests. Every resampling is seeded, so a report is
// reproducible.
package stats
