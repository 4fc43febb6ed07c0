package workflows

import (
	"os/exec"
	"strings"
	"testing"
)

// The workflow code is deterministic and replayed on every worker, so it
// must not carry the compute engine, configuration reading or the blob
// store's SDK: its packages, and the pipeline types it shares with the
// activities, depend on plain data alone. A type the workflow needs from
// the engine moves to record or spec (as evaluate.Result and
// rl.UpdateStats did), never the other way round.
func TestWorkflowPackagesStayLight(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/corl-project/corl/workflows", "github.com/corl-project/corl/pipeline").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/corl-project/corl/gpu",
		"github.com/corl-project/corl/model",
		"github.com/corl-project/corl/generate",
		"github.com/corl-project/corl/evaluate",
		"github.com/corl-project/corl/rl",
		"github.com/spf13/viper",
		"github.com/aws/",
		"go.temporal.io/server",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("workflows/pipeline depend on %s (forbidden: %s)", dep, f)
			}
		}
	}
}
