//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/workers"
	"github.com/corl-project/corl/workflows"
)

// A lab is a small network made of namespaces on this machine: two bridges
// in the test's namespace, one for the Temporal server (10.199.1.0/24, the
// server listens on 10.199.1.1) and one for the store (10.199.2.0/24, the
// test reaches it from 10.199.2.1); the store (versitygw) in its own
// namespace on the store bridge (10.199.2.2); each GPU worker in its own
// namespace with a veth pair to each bridge. Cutting one veth (ip link set
// down) cuts exactly one path: a worker from the server but not the store,
// or everyone from the store.
type lab struct {
	t  *testing.T
	id string
	n  int // namespaces made
}

const (
	labServerIP = "10.199.1.1"
	labStoreIP  = "10.199.2.2"
)

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("partition tests make network namespaces: they need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("partition tests need iproute2's ip")
	}
	clearStaleLabs()
	var b [2]byte
	rand.Read(b[:])
	l := &lab{t: t, id: hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		for i := 1; i <= l.n; i++ {
			exec.Command("ip", "netns", "del", l.ns(i)).Run()
		}
		exec.Command("ip", "link", "del", l.bridge('s')).Run()
		exec.Command("ip", "link", "del", l.bridge('t')).Run()
	})
	for _, br := range []struct {
		kind byte
		cidr string
	}{{'s', labServerIP + "/24"}, {'t', "10.199.2.1/24"}} {
		l.ip("link", "add", l.bridge(br.kind), "type", "bridge")
		l.ip("addr", "add", br.cidr, "dev", l.bridge(br.kind))
		l.ip("link", "set", l.bridge(br.kind), "up")
	}
	return l
}

// clearStaleLabs removes the namespaces and bridges of labs whose test was
// killed before its cleanup: their addresses would clash with a new lab's.
func clearStaleLabs() {
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && staleNS.MatchString(f[0]) {
				exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && staleBridge.MatchString(strings.TrimSuffix(f[1], ":")) {
				exec.Command("ip", "link", "del", strings.TrimSuffix(f[1], ":")).Run()
			}
		}
	}
}

var (
	staleNS     = regexp.MustCompile(`^corl-[0-9a-f]{4}-[0-9]+$`)
	staleBridge = regexp.MustCompile(`^cb[0-9a-f]{4}[st]$`)
)

func (l *lab) bridge(kind byte) string { return fmt.Sprintf("cb%s%c", l.id, kind) }
func (l *lab) ns(i int) string         { return fmt.Sprintf("corl-%s-%d", l.id, i) }
func (l *lab) veth(i int, kind byte) string {
	return fmt.Sprintf("c%s%d%c", l.id, i, kind)
}

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// host makes a namespace joined to the bridges in addrs (kind 's' or 't'
// -> its address there) and returns its number.
func (l *lab) host(addrs map[byte]string) int {
	l.n++
	i, ns := l.n, l.ns(l.n)
	l.ip("netns", "add", ns)
	l.ip("-n", ns, "link", "set", "lo", "up")
	for kind, addr := range addrs {
		in, out := l.veth(i, kind), fmt.Sprintf("x%s%d%c", l.id, i, kind)
		l.ip("link", "add", in, "type", "veth", "peer", "name", out)
		l.ip("link", "set", out, "master", l.bridge(kind), "up")
		l.ip("link", "set", in, "netns", ns)
		l.ip("-n", ns, "addr", "add", addr+"/24", "dev", in)
		l.ip("-n", ns, "link", "set", in, "up")
	}
	return i
}

// cut takes host i's link to a bridge down (up again with heal).
func (l *lab) cut(i int, kind byte)  { l.ip("-n", l.ns(i), "link", "set", l.veth(i, kind), "down") }
func (l *lab) heal(i int, kind byte) { l.ip("-n", l.ns(i), "link", "set", l.veth(i, kind), "up") }

// spawnIn starts a program in host i's namespace (i 0: this one).
func (l *lab) spawnIn(i int, env []string, bin string, args ...string) *proc {
	l.t.Helper()
	if i > 0 {
		args = append([]string{"netns", "exec", l.ns(i), bin}, args...)
		bin = "ip"
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+l.t.TempDir()), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: &out}
	l.t.Cleanup(func() { p.kill() })
	return p
}

// partitionRun is one run of the pipeline in a lab: corl dev (server only)
// here, versitygw in the store's namespace on storeDir, grading and
// workflows in this process, and two GPU workers each in its own
// namespace.
type partitionRun struct {
	lab        *lab
	store, w1  int // hosts
	w2         int
	dir        string
	port       int
	dev        *proc
	workerEnv  []string
	conn       *connect.Connection
	stopWorker func()
}

func startPartitionRun(t *testing.T, l *lab, storeDir string) *partitionRun {
	t.Helper()
	vgw := os.Getenv("VERSITYGW")
	if vgw == "" {
		t.Skip("VERSITYGW not set (make test-long sets it): the partition tests run the store in its own namespace")
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		t.Fatal("AWS_ACCESS_KEY_ID not set: run under scripts/with-s3.sh")
	}
	r := &partitionRun{lab: l, dir: t.TempDir(), port: freePort(t)}
	r.store = l.host(map[byte]string{'t': labStoreIP})
	r.w1 = l.host(map[byte]string{'s': "10.199.1.11", 't': "10.199.2.11"})
	r.w2 = l.host(map[byte]string{'s': "10.199.1.12", 't': "10.199.2.12"})
	l.spawnIn(r.store, nil, vgw, "--port", labStoreIP+":7070", "--access", os.Getenv("AWS_ACCESS_KEY_ID"),
		"--secret", os.Getenv("AWS_SECRET_ACCESS_KEY"), "posix", storeDir)
	r.startDev()
	prefix := fmt.Sprintf("part-%d", time.Now().UnixNano())
	endpoint := "http://" + labStoreIP + ":7070"
	var err error
	r.conn, err = connect.LoadConnection("", noEnv, map[string]any{"temporal.address": fmt.Sprintf("%s:%d", labServerIP, r.port),
		"store.kind": "s3", "store.s3.endpoint": endpoint, "store.s3.bucket": "corl-part", "store.s3.prefix": prefix,
		"store.s3.path_style": "true", "store.s3.max_attempts": 3, "store.s3.attempt_timeout": "5s"})
	if err != nil {
		t.Fatal(err)
	}
	cl := dial(t, r.conn)
	store, err := openStoreWithin(r.conn, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- workers.Run(ctx, workers.Options{Client: cl, Store: store, Backend: cpu.New(1), Pools: []string{"cpu"}})
	}()
	r.stopWorker = func() { stop(); <-done; cl.Close() }
	t.Cleanup(r.stopWorker)
	r.workerEnv = []string{"CORL_STORE_KIND=s3", "CORL_STORE_S3_ENDPOINT=" + endpoint, "CORL_STORE_S3_BUCKET=corl-part",
		"CORL_STORE_S3_PREFIX=" + prefix, "CORL_STORE_S3_PATH_STYLE=true", "CORL_STORE_S3_MAX_ATTEMPTS=3",
		"CORL_STORE_S3_ATTEMPT_TIMEOUT=5s", "AWS_EC2_METADATA_DISABLED=true"}
	for i, w := range []int{r.w1, r.w2} {
		l.spawnIn(w, r.workerEnv, corlBin, "worker", "--pool", "gpu", "--address", fmt.Sprintf("%s:%d", labServerIP, r.port),
			"--threads", "1", "--queue-id", fmt.Sprintf("w%d", i+1))
	}
	// Both GPU workers poll before the run starts, so it spreads its
	// members over them.
	pool := activities.New(store, nil, "")
	pool.Client = cl
	deadline := time.Now().Add(time.Minute)
	for {
		ws, err := pool.Workers(context.Background())
		if err == nil && len(ws) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the GPU workers never polled the pool: %v %v", ws, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r
}

func (r *partitionRun) startDev() {
	r.dev = r.lab.spawnIn(0, nil, corlBin, "dev", "--no-worker", "--headless", "--metrics", "", "--ip", labServerIP,
		"--port", fmt.Sprint(r.port), "--dir", r.dir)
}

// openStoreWithin opens the store, retrying while it starts.
func openStoreWithin(conn *connect.Connection, limit time.Duration) (blob.Store, error) {
	deadline := time.Now().Add(limit)
	for {
		st, err := conn.OpenStore(context.Background())
		if err == nil || time.Now().After(deadline) {
			return st, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPartitions: faults of the network and the machines under a real
// server, store and workers, each in its own network namespace. Every run
// must end with the uninterrupted in-process run's weights.
//   - zombie: a worker cut off from the server (but not the store) for
//     longer than the heartbeat timeout, then healed. Its member moves; the
//     zombie may still finish and write what it was doing, but every key is
//     a function of (run, round, member) and the computation is
//     deterministic, so a late write carries the same bytes as the
//     replacement's (and checkpoints are only read through their
//     manifests' checksums).
//   - store-outage: the store unreachable from everyone for two minutes
//     mid-round (the activities retry with backoff).
//   - server-restart: corl dev (the server) killed during an update and
//     started again on its database.
//   - disk-full: the store's filesystem (a 48 MiB tmpfs) full for 40 s.
func TestPartitions(t *testing.T) {
	a, b := bases(t)
	file := specFile(t, "partition", a, b, 12)
	want := reference(t, file)
	const hb = 5
	for _, fault := range []string{"zombie", "store-outage", "server-restart", "disk-full"} {
		t.Run(fault, func(t *testing.T) {
			l := newLab(t)
			storeDir := t.TempDir()
			if fault == "disk-full" {
				if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "corl-test", storeDir).CombinedOutput(); err != nil {
					t.Skipf("cannot mount a tmpfs for the store: %v %s", err, out)
				}
				t.Cleanup(func() { exec.Command("umount", "-l", storeDir).Run() })
			}
			r := startPartitionRun(t, l, storeDir)
			cl := dial(t, r.conn)
			defer cl.Close()
			run, err := cli.StartRun(context.Background(), cl, nil, "default", cli.RunFlags{SpecFlags: cli.SpecFlags{File: file}, ID: "part-" + fault, Heartbeat: hb}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			waitRound(t, cl, run.GetID(), 2, 3*time.Minute)
			faultAt := time.Now()
			switch fault {
			case "zombie":
				l.cut(r.w1, 's')
				time.Sleep(4 * hb * time.Second)
				l.heal(r.w1, 's')
			case "store-outage":
				l.cut(r.store, 't')
				time.Sleep(2 * time.Minute)
				l.heal(r.store, 't')
			case "server-restart":
				waitStage(t, cl, run.GetID(), "update", time.Minute)
				r.dev.kill()
				cl.Close()
				r.startDev()
				cl = dial(t, r.conn)
			case "disk-full":
				fill := filepath.Join(storeDir, "fill")
				out, _ := exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=1M").CombinedOutput() // until ENOSPC
				if !strings.Contains(string(out), "No space left on device") {
					t.Fatalf("dd did not fill the store's filesystem: %s", out)
				}
				time.Sleep(40 * time.Second)
				os.Remove(fill)
			}
			healed := time.Now()
			res := awaitResult(t, cl, run.GetID(), 6*time.Minute)
			t.Logf("%s: fault at %.0f s into the run, lasted %.0f s; the run ended %.0f s after it was over (moves %d)",
				fault, faultAt.Sub(began).Seconds(), healed.Sub(faultAt).Seconds(), time.Since(healed).Seconds(), res.Moves)
			if res.Rounds != 12 {
				t.Fatalf("result %+v", res)
			}
			if fault == "zombie" && res.Moves == 0 {
				t.Error("no member moved: the cut did not isolate a worker that held one")
			}
			store, err := r.conn.OpenStore(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fault == "zombie" {
				// Whatever the zombie still had to write has landed by now.
				time.Sleep(2 * hb * time.Second)
			}
			sameWeights(t, fault+": final weights", finalHashes(t, store, res), want)
		})
	}
}

// waitStage polls the run until its stage contains stage.
func waitStage(t *testing.T, cl client.Client, id, stage string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if v, err := cl.QueryWorkflow(context.Background(), id, "", workflows.QueryProgress); err == nil {
			var p workflows.Progress
			if v.Get(&p) == nil && strings.Contains(p.Stage, stage) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s never reached a stage %q in %s", id, stage, limit)
}
