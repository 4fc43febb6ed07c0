// Package cli holds corl's commands. It takes its IO streams, arguments and
// environment as parameters so that tests run every command in-process.
package cli
