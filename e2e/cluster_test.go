//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/workflows"
)

// cluster is scripts/cluster.sh's layout started for a test on free
// loopback ports, stopped (and its logs' tails shown on failure) when the
// test ends.
type cluster struct {
	metrics  int // the first of 7 /metrics ports: frontend, history, matching, worker, cpu-worker, gpu-worker-1, -2
	dir      string
	frontend string
	s3       string
	env      []string
	tls      bool   // started with TLS=1: mutual TLS, the test CA in dir/tls
	ns       string // the namespace the workers serve
}

// script runs scripts/cluster.sh ACTION on the cluster's directory.
func (c *cluster) script(action string) (string, error) {
	cmd := exec.Command("bash", "../scripts/cluster.sh", action, c.dir)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startCluster starts the layout, with the script's settings in extra
// (TLS=1, NAMESPACES=..., NAMESPACE=...) on top of the test's.
func startCluster(t *testing.T, extra ...string) *cluster {
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
		ports[k] = freeRun(t, 1, ports)
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
	metricsBase := freeRun(t, 7, ports)
	env = append(env, fmt.Sprintf("METRICS_PORT=%d", metricsBase))
	env = append(env, extra...)
	c := &cluster{metrics: metricsBase, dir: dir, frontend: fmt.Sprintf("127.0.0.1:%d", ports["FRONTEND_GRPC_PORT"]), s3: fmt.Sprintf("http://127.0.0.1:%d", ports["S3_PORT"]), env: env,
		tls: slices.Contains(extra, "TLS=1"), ns: "default"}
	for _, e := range extra {
		if v, ok := strings.CutPrefix(e, "NAMESPACE="); ok {
			c.ns = v
		}
	}
	script := c.script
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

// freeRun is the first of n consecutive free loopback ports below 32768,
// none among taken: the server's PostgreSQL schema keeps membership ports
// in a smallint, and the kernel's ephemeral ports lie above it.
func freeRun(t *testing.T, n int, taken map[string]int) int {
	t.Helper()
	for range 1000 {
		base, ok := 20000+rand.IntN(12000), true
		for p := base; p < base+n && ok; p++ {
			if slices.Contains(slices.Collect(maps.Values(taken)), p) {
				ok = false
			} else if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err != nil {
				ok = false
			} else {
				l.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d free ports in a row below 32768", n)
	return 0
}

// scrape reads each piece's /metrics and returns the metric names each
// exposes, by piece, and the text of all.
func (c *cluster) scrape(t *testing.T) (map[string][]string, string) {
	t.Helper()
	names := map[string][]string{}
	var all strings.Builder
	for i, piece := range []string{"frontend", "history", "matching", "worker", "cpu-worker", "gpu-worker-1", "gpu-worker-2"} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metrics+i))
		if err != nil {
			t.Errorf("%s /metrics: %v", piece, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		all.Write(b)
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name := line[:strings.IndexAny(line+" ", "{ ")]
			if !slices.Contains(names[piece], name) {
				names[piece] = append(names[piece], name)
			}
		}
	}
	return names, all.String()
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

// connection is a client's view of the cluster: its frontend (in the
// workers' namespace, over TLS with the test CA's client certificate when
// the cluster has TLS) and store.
func (c *cluster) connection(t *testing.T) *connect.Connection {
	t.Helper()
	over := map[string]any{"temporal.address": c.frontend, "temporal.namespace": c.ns,
		"store.kind": "s3", "store.s3.endpoint": c.s3, "store.s3.bucket": "corl", "store.s3.path_style": "true"}
	if c.tls {
		over["temporal.tls.enabled"] = true
		over["temporal.tls.ca_file"] = filepath.Join(c.dir, "tls", "ca.pem")
		over["temporal.tls.cert_file"] = filepath.Join(c.dir, "tls", "client.pem")
		over["temporal.tls.key_file"] = filepath.Join(c.dir, "tls", "client-key.pem")
	}
	conn, err := connect.LoadConnection("", noEnv, over)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// open connects to the cluster as a client does (connection): its
// Temporal client, closed when the test ends, and its store.
func (c *cluster) open(t *testing.T) (*connect.Connection, client.Client, blob.Store) {
	t.Helper()
	conn := c.connection(t)
	cl := dial(t, conn)
	t.Cleanup(cl.Close)
	store, err := conn.OpenStore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return conn, cl, store
}

// clientEnv is the environment corl's commands reach the cluster with.
func (c *cluster) clientEnv() []string {
	env := append(os.Environ(), "CORL_TEMPORAL_ADDRESS="+c.frontend, "CORL_TEMPORAL_NAMESPACE="+c.ns, "CORL_STORE_KIND=s3",
		"CORL_STORE_S3_ENDPOINT="+c.s3, "CORL_STORE_S3_BUCKET=corl", "CORL_STORE_S3_PATH_STYLE=true")
	if c.tls {
		env = append(env, "CORL_TEMPORAL_TLS_ENABLED=true", "CORL_TEMPORAL_TLS_CA_FILE="+filepath.Join(c.dir, "tls", "ca.pem"),
			"CORL_TEMPORAL_TLS_CERT_FILE="+filepath.Join(c.dir, "tls", "client.pem"),
			"CORL_TEMPORAL_TLS_KEY_FILE="+filepath.Join(c.dir, "tls", "client-key.pem"))
	}
	return env
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
	_, cl, store := c.open(t)
	ctx := context.Background()
	info, err := cl.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetPersistenceStore() != "postgres12" || info.GetVisibilityStore() != "postgres12" || info.GetHistoryShardCount() != 4 {
		t.Fatalf("cluster on %s (visibility %s) with %d history shards; want postgres12 and 4", info.GetPersistenceStore(), info.GetVisibilityStore(), info.GetHistoryShardCount())
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
	// Two members, two GPU workers with a slot each: one member each.
	if p, err := progress(cl, run.GetID()); err != nil {
		t.Error(err)
	} else if len(p.Queues) != 2 || p.Queues[0] == p.Queues[1] {
		t.Errorf("members placed on %v; want one on each GPU worker", p.Queues)
	}

	// What an operator scrapes: every piece serves /metrics, and every
	// metric the Grafana dashboard queries is served by some piece (corl's
	// own are checked against its registry in package metrics: a counter
	// appears once it counts).
	byPiece, text := c.scrape(t)
	var union []string
	for piece, names := range byPiece {
		if len(names) < 10 {
			t.Errorf("%s serves %d metrics", piece, len(names))
		}
		union = append(union, names...)
	}
	dash, err := metrics.DashboardMetrics(metrics.Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range dash {
		if !metrics.IsCorl(m) && !slices.Contains(union, m) {
			t.Errorf("the dashboard queries %s, which no piece of the cluster serves", m)
		}
	}
	for _, m := range []string{"corl_members_held", "corl_stage_seconds_bucket", "corl_tokens_total"} {
		if !slices.Contains(union, m) {
			t.Errorf("no worker serves %s", m)
		}
	}
	t.Logf("activity schedule-to-start, 95th percentile by activity (the workers' SDK metric): %s", scheduleToStart(text))

	// An idle GPU worker killed without a stop notice leaves the pool's
	// listing within pipeline.AliveFor of its last record that it is alive
	// (it writes one every AliveEvery), though the server lists its poller
	// for PollerMemory.
	if err := syscall.Kill(c.pid(t, "gpu-worker-2"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		ws, err := activities.ListPool(ctx, cl, store)
		if err == nil && len(ws) == 1 {
			break
		}
		if time.Since(killed) > pipeline.PollerMemory {
			t.Fatalf("%v after gpu-worker-2 was killed the pool still lists %v (%v)", pipeline.PollerMemory, ws, err)
		}
		time.Sleep(time.Second)
	}
	gone := time.Since(killed)
	t.Logf("idle gpu-worker-2 killed: out of the pool's listing after %.1f s", gone.Seconds())
	if bound := pipeline.AliveFor + pipeline.AliveEvery + 5*time.Second; gone > bound {
		t.Errorf("the killed worker stayed listed %.1f s, past the bound %s (AliveFor + AliveEvery + 5 s)", gone.Seconds(), bound)
	}
}

// scheduleToStart is the largest 95th-percentile schedule-to-start latency
// per activity type in scraped metrics text.
func scheduleToStart(text string) string {
	worst := map[string]float64{}
	re := regexp.MustCompile(`temporal_activity_schedule_to_start_latency_seconds\{activity_type="([^"]+)"[^}]*quantile="0.95"\} (\S+)`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		var v float64
		fmt.Sscan(m[2], &v)
		worst[m[1]] = max(worst[m[1]], v)
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(worst)) {
		out = append(out, fmt.Sprintf("%s %.0f ms", k, 1000*worst[k]))
	}
	return strings.Join(out, ", ")
}

// corl runs the corl command against the cluster and returns its output.
func (c *cluster) corl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(corlBin, args...)
	cmd.Env = c.clientEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("corl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pid is the process ID of one of the cluster's pieces.
func (c *cluster) pid(t *testing.T, piece string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "pids", piece+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// faultSpec is a 5-round cohort of the zoo's two smallest bases, sized so
// that each stage's activity runs long enough (tenths of a second) to be
// caught pending, checkpointing every round. Each fault strikes in round 2;
// the rounds after it leave the matching fault, which waits for a moment
// with a member activity queued, room to find one (with 3 rounds, a busy
// machine once saw the run end first).
func faultSpec(t *testing.T, name string) string {
	t.Helper()
	zoo, err := filepath.Abs("../examples/zoo")
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`name: %s
seed: 5
rounds: 5
prompts_per_round: 32
data: {tasks: [linear, mod], data_seed: 1, rl_size: 200, max_level: 2}
reward: {mode: peer-ring}
generation: {num_generations: 8, max_completion_length: 48}
optim: {learning_rate: 0.0001}
eval: {size: 50, every: 3}
checkpoint: {every: 1}
output_dir: %q
members:
  - {name: llama-odd, base: %q}
  - {name: gpt2-even, base: %q}
`, name, t.TempDir(), filepath.Join(zoo, "llama-odd-small"), filepath.Join(zoo, "gpt2-even-small"))
	p := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pollPending asks the server for the run's pending activities every
// `every` until done says it has what it waits for (true) or limit has
// passed (false). A describe that fails (a service down) is asked again.
func pollPending(cl client.Client, id string, limit, every time.Duration, done func([]*workflowpb.PendingActivityInfo) bool) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(every) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d, err := cl.DescribeWorkflowExecution(ctx, id, "")
		cancel()
		if err == nil && done(d.GetPendingActivities()) {
			return true
		}
	}
	return false
}

// awaitPending waits until the run has an activity of type activity in
// state (scheduled or started) and returns the identity of the worker
// that last took it.
func awaitPending(t *testing.T, cl client.Client, id, activity string, state enums.PendingActivityState) string {
	t.Helper()
	who := ""
	if !pollPending(cl, id, 2*time.Minute, 10*time.Millisecond, func(ps []*workflowpb.PendingActivityInfo) bool {
		for _, p := range ps {
			if p.GetActivityType().GetName() == activity && p.GetState() == state {
				who = p.GetLastWorkerIdentity()
				return true
			}
		}
		return false
	}) {
		t.Fatalf("run %s: no %s activity %v within 2 minutes", id, activity, state)
	}
	return who
}

// TestClusterFaults is the fault campaign against the production layout:
// one run per fault, each hitting its stage by watching the run's pending
// activities, and each ending with the in-process trainer's weights.
//   - kill -9 of the history service while an update runs, restarted 2 s later;
//   - PostgreSQL restarted (immediate shutdown, as a crash) while a checkpoint runs;
//   - kill -9 of the matching service while activities are queued (both GPU
//     workers stopped with SIGSTOP so the tasks wait), restarted, then the
//     workers continued;
//   - kill -9 of the GPU worker running a generate, restarted on its queue.
//
// Recovery is the time from the fault to the run's round advancing past the
// one it struck, beside a round's time without faults.
func TestClusterFaults(t *testing.T) {
	file := faultSpec(t, "faults")
	t0 := time.Now()
	want := reference(t, file)
	t.Logf("in-process reference: %.1f s for 5 rounds", time.Since(t0).Seconds())
	c := startCluster(t)
	_, cl, store := c.open(t)
	restart := func() {
		if out, err := c.script("start"); err != nil {
			t.Fatalf("cluster.sh start (restart what died): %v\n%s", err, out)
		}
	}
	kill := func(piece string) {
		if err := syscall.Kill(c.pid(t, piece), syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", piece, err)
		}
		for i := 0; i < 100 && syscall.Kill(c.pid(t, piece), 0) == nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	round := func(id string) int {
		p, err := progress(cl, id)
		if err != nil {
			return -1
		}
		return p.Round
	}
	faults := []struct {
		name, stage string
		strike      func(id string)
	}{
		{"history killed during an update", "Update", func(id string) {
			awaitPending(t, cl, id, "Update", enums.PENDING_ACTIVITY_STATE_STARTED)
			kill("history")
			time.Sleep(2 * time.Second)
			restart()
		}},
		{"PostgreSQL restarted during a checkpoint", "Checkpoint", func(id string) {
			awaitPending(t, cl, id, "Checkpoint", enums.PENDING_ACTIVITY_STATE_STARTED)
			if out, err := c.script("restart-db"); err != nil {
				t.Fatalf("cluster.sh restart-db: %v\n%s", err, out)
			}
		}},
		{"matching killed with activities queued", "queued", func(id string) {
			// The GPU workers stop polling, so that the run's next member
			// activities wait in matching's queues (one already started
			// waits with its worker, within the heartbeat timeout). When
			// every one had started before the stop, try again a moment on.
			workers := []int{c.pid(t, "gpu-worker-1"), c.pid(t, "gpu-worker-2")}
			signal := func(sig syscall.Signal) {
				for _, w := range workers {
					syscall.Kill(w, sig)
				}
			}
			for try := range 10 {
				// Between stages: no member activity running, the next
				// about to be scheduled.
				idleWithin(cl, id, 5*time.Second)
				signal(syscall.SIGSTOP)
				if queued := queuedWithin(cl, id, 2*time.Second); queued != "" {
					kill("matching")
					time.Sleep(2 * time.Second)
					restart()
					signal(syscall.SIGCONT)
					t.Logf("matching killed with %s queued (try %d)", queued, try+1)
					return
				}
				signal(syscall.SIGCONT)
				time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
			}
			t.Fatal("no member activity was queued in 10 tries")
		}},
		{"GPU worker killed during a generate", "Generate", func(id string) {
			who := awaitPending(t, cl, id, "Generate", enums.PENDING_ACTIVITY_STATE_STARTED)
			piece := "gpu-worker-1"
			if strings.Contains(who, "gpu-worker-2") {
				piece = "gpu-worker-2"
			}
			kill(piece)
			restart()
		}},
	}
	var table []string
	for i, f := range faults {
		id := fmt.Sprintf("fault-%d", i)
		run, err := cli.StartRun(context.Background(), cl, store, "default",
			cli.RunFlags{SpecFlags: cli.SpecFlags{File: file}, ID: id, Heartbeat: 10, ScheduleToStart: 30}, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		awaitRoundPast(t, cl, id, 0) // strike in round 2: round 1 gives the fault-free time
		normal := time.Since(start)
		struck := round(id)
		if struck != 1 {
			t.Fatalf("%s: the run had done %d rounds when the fault was due in round 2", f.name, struck)
		}
		hit := time.Now()
		f.strike(id)
		status := c.corl(t, "status", id)
		if !regexp.MustCompile(`round \d/5`).MatchString(status) {
			t.Errorf("%s: corl status right after the fault:\n%s", f.name, status)
		}
		t.Logf("%s: corl status right after the fault:\n%s", f.name, status)
		awaitRoundPast(t, cl, id, struck)
		recovery := time.Since(hit)
		res := awaitResult(t, cl, run.GetID(), 4*time.Minute)
		same := sameWeights(t, f.name, finalHashes(t, store, res), want)
		t.Logf("%s: what the run went through: %s", f.name, setbacks(t, cl, id))
		table = append(table, fmt.Sprintf("| %s | %s | %d | %.1f s | %.1f s | %d | %v |", f.name, f.stage, struck+1, recovery.Seconds(), normal.Seconds(), res.Moves, same))
	}
	t.Logf("fault table:\n| fault | stage | round | fault to the round done | start to round 1 done (no fault) | members moved | weights equal |\n|---|---|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// queuedWithin waits up to limit for the run to have a member's activity
// (one that runs on a GPU worker's queue) scheduled and not started, and
// says which ones are ("": none).
func queuedWithin(cl client.Client, id string, limit time.Duration) string {
	var q []string
	pollPending(cl, id, limit, 10*time.Millisecond, func(ps []*workflowpb.PendingActivityInfo) bool {
		q = nil
		for _, p := range ps {
			if p.GetState() == enums.PENDING_ACTIVITY_STATE_SCHEDULED && slices.Contains(memberActivities, p.GetActivityType().GetName()) {
				q = append(q, p.GetActivityType().GetName())
			}
		}
		return len(q) > 0
	})
	return strings.Join(q, ", ")
}

// idleWithin waits up to limit for a moment when none of the run's member
// activities has started (the GPU workers are between stages).
func idleWithin(cl client.Client, id string, limit time.Duration) {
	pollPending(cl, id, limit, 5*time.Millisecond, func(ps []*workflowpb.PendingActivityInfo) bool {
		for _, p := range ps {
			if p.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED && slices.Contains(memberActivities, p.GetActivityType().GetName()) {
				return false
			}
		}
		return true
	})
}

var memberActivities = []string{pipeline.Acquire, pipeline.Generate, pipeline.Judge, pipeline.Update, pipeline.Replay,
	pipeline.Checkpoint, pipeline.Evaluate}

// setbacks lists the run's activities that timed out or failed, in order,
// each with its kind of timeout or its error: what a recovery waited for.
func setbacks(t *testing.T, cl client.Client, id string) string {
	t.Helper()
	it := cl.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	types := map[int64]string{}
	var out []string
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[e.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := e.GetActivityTaskTimedOutEventAttributes(); a != nil {
			out = append(out, fmt.Sprintf("%s timed out (%v)", types[a.GetScheduledEventId()], a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType()))
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil {
			msg := a.GetFailure().GetMessage()
			out = append(out, fmt.Sprintf("%s failed (%s)", types[a.GetScheduledEventId()], msg[:min(len(msg), 400)]))
		}
	}
	if len(out) == 0 {
		return "no activity timed out or failed"
	}
	return strings.Join(out, "; ")
}

// progress is the run's progress query's answer.
func progress(cl client.Client, id string) (*workflows.Progress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := cl.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
	if err != nil {
		return nil, err
	}
	var p workflows.Progress
	if err := v.Get(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// awaitRoundPast waits until the run has completed more than r rounds.
func awaitRoundPast(t *testing.T, cl client.Client, id string, r int) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		if p, err := progress(cl, id); err == nil && p.Round > r {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s did not pass round %d within 4 minutes", id, r)
}
