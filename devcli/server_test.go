package devcli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// clusterEnv reads scripts/cluster.sh's block between "# NAME begin" and
// "# NAME end": its KEY=VALUE settings (export lines, or an array's
// entries), each value with the script's defaults put in (${X:-d} is d,
// $X is X's value set above the block).
func clusterEnv(t *testing.T, script, name string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	deflt := regexp.MustCompile(`\$\{([A-Z0-9_]+):-([^}]*)\}`)
	ref := regexp.MustCompile(`\$([A-Z0-9_]+)`)
	expand := func(v string) string {
		v = deflt.ReplaceAllString(v, "$2")
		return ref.ReplaceAllStringFunc(v, func(m string) string { return vars[m[1:]] })
	}
	assign := regexp.MustCompile(`^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=(\S*)\s*$`)
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(script, "\n") {
		switch strings.TrimSpace(line) {
		case "# " + name + " begin":
			in = true
			continue
		case "# " + name + " end":
			in = false
			continue
		}
		m := assign.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := expand(m[2])
		vars[m[1]] = v
		if in {
			out[m[1]] = v
		}
	}
	if len(out) == 0 {
		t.Fatalf("scripts/cluster.sh has no %q block", name)
	}
	return out
}

// TestClusterAgreesWithCompose: scripts/cluster.sh and docker-compose.yml
// configure the Temporal services and the corl workers with the same
// environment variables, key by key, and the same values but where the
// layouts differ by nature (a host name where the script has loopback, a
// path inside the container, the database's port beside a system one).
func TestClusterAgreesWithCompose(t *testing.T) {
	script, err := os.ReadFile("../scripts/cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose map[string]any
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	// Where the values may differ, and why.
	differ := map[string]string{
		"POSTGRES_SEEDS":             "the database's host: a container name, or loopback",
		"DB_PORT":                    "the script's PostgreSQL avoids a system one on 5432",
		"BIND_ON_IP":                 "containers listen on every interface",
		"TEMPORAL_BROADCAST_ADDRESS": "a container's own address, set by its entrypoint",
		"DYNAMIC_CONFIG_FILE_PATH":   "the same file, mounted in the containers",
		"PROMETHEUS_ENDPOINT":        "one host: each process its own port",
		"CORL_TEMPORAL_ADDRESS":      "the frontend's host",
		"CORL_STORE_S3_ENDPOINT":     "the store's host",
	}
	for _, block := range []struct{ script, compose string }{{"temporal-env", "x-temporal-env"}, {"corl-env", "x-corl-env"}} {
		sh := clusterEnv(t, string(script), block.script)
		dc, ok := compose[block.compose].(map[string]any)
		if !ok {
			t.Fatalf("docker-compose.yml has no %s mapping", block.compose)
		}
		keys := map[string]bool{}
		for k := range sh {
			keys[k] = true
		}
		for k := range dc {
			keys[k] = true
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			sv, inScript := sh[k]
			cv, inCompose := dc[k]
			switch {
			case !inScript:
				t.Errorf("%s: docker-compose.yml's %s sets it, scripts/cluster.sh's %s block does not", k, block.compose, block.script)
			case !inCompose:
				t.Errorf("%s: scripts/cluster.sh's %s block sets it, docker-compose.yml's %s does not", k, block.script, block.compose)
			case differ[k] == "" && sv != cv.(string):
				t.Errorf("%s: %q in scripts/cluster.sh, %q in docker-compose.yml", k, sv, cv)
			}
		}
	}
}

func TestParseServices(t *testing.T) {
	got, err := parseServices("history, matching")
	if err != nil || !slices.Equal(got, []string{"history", "matching"}) {
		t.Errorf("parseServices: %v, %v", got, err)
	}
	if _, err := parseServices("history,histroy"); err == nil || !strings.Contains(err.Error(), `"histroy" is not one of frontend, history, matching, worker`) {
		t.Errorf("a misspelt service: %v", err)
	}
}
