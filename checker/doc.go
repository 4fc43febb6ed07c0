// Package checker runs a task's own answer checker: a program the run spec
// names, spoken to over line-delimited JSON. corl's label-free rewards need
// two things from a task, what counts as the same answer (a canonical key,
// for votes) and, for the ground-truth baseline and evaluation, whether an
// answer is right; a checker supplies either or both for tasks whose
// answers corl's built-in rules cannot read.
//
// Protocol: corl writes one JSON object per row to the program's stdin,
// {"id": 0, "prompt": "...", "response": "...", "answer": "..."} ("answer":
// the row's label, present when there is one), then closes it; the program
// writes one JSON object per row to stdout, in order, {"id": 0,
// "answer_key": "..."} and/or {"correct": true}; "answer_key": null means
// the response has no answer. Anything the program writes to stderr is
// kept for the error message.
//
// Sandbox: the program runs in an empty working directory (its HOME and
// TMPDIR) that is removed afterwards, with a minimal environment, in a new
// network namespace (no network), as an unprivileged user when corl runs
// as root, under limits on address space and processes, and with Landlock
// letting it write nowhere but that directory. It is killed at its
// timeout. These are set up by corl re-executing itself into a small
// launcher (see init) that applies them and then executes the program, as
// Go cannot run code between fork and exec.
//
// Written here rather than taken from a sandboxing library: the launcher
// is a few dozen lines of system calls, and what it must guarantee (no
// writes outside the directory, no network, bounded memory and time) is
// what the tests check.
package checker
