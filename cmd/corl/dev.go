//go:build !nodevserver

package main

import "github.com/corl-project/corl/devcli"

// The embedded Temporal server (corl dev, corl quickstart) is in every build
// but `-tags nodevserver`, which makes a small binary for worker machines and
// GPU checks.
func init() { extras = append(extras, devcli.Commands) }
