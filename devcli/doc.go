// Package devcli holds the commands that embed a Temporal server: `corl dev`
// and `corl quickstart`. It is separate from package cli so that the other
// commands' tests do not link the server.
package devcli
