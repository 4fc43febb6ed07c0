// Package history reads workflow histories back from the server, by the
// names package pipeline gives the activities: a run's records (for the
// report), the spec a run was started with (for a sweep cell that finds
// its run already there), the child runs a sweep started. It is the one
// place outside the workflows that knows a history's shape.
package history
