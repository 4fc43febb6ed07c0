// Package report turns finished runs into one self-contained HTML file (no
// script, no network: inline SVG plots drawn with gonum/plot) and the same
// table as Markdown, CSV and JSON: pass@1 against round and against
// cumulative FLOPs, the collapse diagnostics (answer entropy, distinct
// answers), pseudo-label accuracy, the members' agreement (Cohen's kappa,
// complementarity), and a paper-style table with one row per method,
// mean and 95% interval over seeds.
package report
