package cpu_test

import (
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/gputest"
)

func TestConformance(t *testing.T)           { gputest.RunAll(t, cpu.New(0)) }
func TestConformanceOneThread(t *testing.T)  { gputest.RunAll(t, cpu.New(1)) }
func TestConformanceOddThreads(t *testing.T) { gputest.RunAll(t, cpu.New(3)) }
