// Package devserver runs a single-process Temporal server (frontend, history,
// matching and worker services) with its SQLite store in a file, for `corl
// dev` and the integration tests. A killed process restarted on the same file
// finds its workflows where they were. It is the only package that imports
// go.temporal.io/server, so nothing else links the server's weight.
package devserver
