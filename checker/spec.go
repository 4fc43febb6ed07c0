package checker

import (
	"time"

	"github.com/corl-project/corl/spec"
)

// FromSpec is the run spec's data.checker as a checker to run, nil when it
// names no command.
func FromSpec(c spec.Checker) *Spec {
	if len(c.Command) == 0 {
		return nil
	}
	return &Spec{Command: c.Command, Timeout: time.Duration(c.TimeoutSeconds * float64(time.Second)),
		MemoryMB: c.MemoryMB, Processes: c.Processes}
}
