// Package spec defines a cohort run's specification: plain data that travels
// as JSON (the input of the CohortRun workflow, `temporal workflow start
// --input-file spec.json`). It imports nothing but the standard library so
// that workflow code can hold it; the config package fills it from files,
// environment and flags and validates it.
package spec
