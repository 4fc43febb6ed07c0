// Package cohort is what a run is made of, for both drivers (corl train
// --local and the Temporal activities): the run's data (RL prompts and
// evaluation problems from built-in tasks or a file), each round's prompts,
// members loaded from and saved to checkpoint directories, the check that a
// spec fits its members, and a cohort's evaluation record.
package cohort
