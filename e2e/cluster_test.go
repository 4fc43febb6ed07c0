//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/connect"
)

// cluster is scripts/cluster.sh's layout started for a test on free
// loopback ports, stopped (and its logs' tails shown on failure) when the
// test ends.
type cluster struct {
	dir      string
	frontend string
	s3       string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if pg, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(pg) == 0 && os.Getuid() != 0 {
		t.Skip("PostgreSQL is not installed (apt-get install postgresql): the cluster layout is not tried")
	}
	// PostgreSQL runs as the postgres user, who must reach the directory.
	dir, err := os.MkdirTemp("", "corl-cluster")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	ports := map[string]int{}
	for _, k := range []string{"PG_PORT", "UI_PORT", "S3_PORT", "FRONTEND_GRPC_PORT", "HISTORY_GRPC_PORT", "MATCHING_GRPC_PORT",
		"WORKER_GRPC_PORT", "FRONTEND_MEMBERSHIP_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_MEMBERSHIP_PORT",
		"WORKER_MEMBERSHIP_PORT", "FRONTEND_HTTP_PORT"} {
		ports[k] = lowFreePort(t, ports)
	}
	// The store's credentials, for the script's versitygw and this
	// process's S3 client alike.
	t.Setenv("AWS_ACCESS_KEY_ID", "corl-cluster")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "corl-cluster-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := append(os.Environ(), "CORL_BIN="+corlBin, "S3_ACCESS_KEY=corl-cluster", "S3_SECRET_KEY=corl-cluster-secret")
	for k, p := range ports {
		env = append(env, fmt.Sprintf("%s=%d", k, p))
	}
	script := func(action string) (string, error) {
		cmd := exec.Command("bash", "../scripts/cluster.sh", action, dir)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	c := &cluster{dir: dir, frontend: fmt.Sprintf("127.0.0.1:%d", ports["FRONTEND_GRPC_PORT"]), s3: fmt.Sprintf("http://127.0.0.1:%d", ports["S3_PORT"])}
	t.Cleanup(func() {
		if t.Failed() {
			c.showLogs(t)
		}
		if out, err := script("stop"); err != nil {
			t.Errorf("cluster.sh stop: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	t0 := time.Now()
	out, err := script("start")
	if err != nil {
		t.Fatalf("cluster.sh start: %v\n%s", err, out)
	}
	t.Logf("cluster started in %.1f s:\n%s", time.Since(t0).Seconds(), out)
	return c
}

// lowFreePort is a free loopback port below 32768, not among taken: the
// server's PostgreSQL schema keeps membership ports in a smallint, and the
// kernel's ephemeral ports lie above it.
func lowFreePort(t *testing.T, taken map[string]int) int {
	t.Helper()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if slices.Contains(slices.Collect(maps.Values(taken)), p) {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port below 32768")
	return 0
}

// showLogs prints the last lines of each piece's log.
func (c *cluster) showLogs(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s (last lines):\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-8):], "\n"))
	}
}

// connection is a client's view of the cluster: its frontend and store.
func (c *cluster) connection(t *testing.T) *connect.Connection {
	t.Helper()
	conn, err := connect.LoadConnection("", noEnv, map[string]any{"temporal.address": c.frontend,
		"store.kind": "s3", "store.s3.endpoint": c.s3, "store.s3.bucket": "corl", "store.s3.path_style": "true"})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestClusterRunsACohortBitwise: the production layout (Temporal's four
// services as separate processes on PostgreSQL with four history shards,
// versitygw, one CPU and two GPU-pool workers, all started by
// scripts/cluster.sh) runs a 3-round cohort to the in-process trainer's
// weights, and its records, read back from the store, are the local run's.
func TestClusterRunsACohortBitwise(t *testing.T) {
	a, b := bases(t)
	file := specFile(t, "cluster", a, b, 3)
	want := reference(t, file)
	c := startCluster(t)
	conn := c.connection(t)
	cl := dial(t, conn)
	defer cl.Close()
	ctx := context.Background()
	info, err := cl.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetPersistenceStore() != "postgres12" || info.GetVisibilityStore() != "postgres12" || info.GetHistoryShardCount() != 4 {
		t.Fatalf("cluster on %s (visibility %s) with %d history shards; want postgres12 and 4", info.GetPersistenceStore(), info.GetVisibilityStore(), info.GetHistoryShardCount())
	}
	store, err := conn.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	run, err := cli.StartRun(ctx, cl, store, "default", cli.RunFlags{SpecFlags: cli.SpecFlags{File: file}, ID: "cluster-e2e"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	res := awaitResult(t, cl, run.GetID(), 4*time.Minute)
	t.Logf("3 rounds through the cluster in %.1f s", time.Since(t0).Seconds())
	sameWeights(t, "cluster weights", finalHashes(t, store, res), want)
	sameReport(t, cl, store, run.GetID(), file, true)
}
