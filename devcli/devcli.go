package devcli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/devserver"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/workers"
	"github.com/corl-project/corl/workflows"
)

// Commands returns dev and quickstart.
func Commands(stdio cli.IO, getenv func(string) string) []*cobra.Command {
	return []*cobra.Command{newDevCmd(stdio, getenv), newQuickstartCmd(stdio, getenv), newServerCmd(stdio, getenv)}
}

// env is a running embedded environment: server, worker, store.
type env struct {
	lock     *flock.Flock
	srv      *devserver.Server
	conn     *connect.Connection
	ui       *devserver.UI
	stopWork context.CancelFunc
	workDone chan error
}

// start runs a Temporal server with its SQLite file in dir, a local blob
// store in dir/blobs and (with a backend) a gpu+cpu worker on it in this
// process. The
// worker's own queue name is stable for dir, so a restarted `corl dev` takes
// its queue back at once.
// devOptions say what to start: the data directory, the Temporal port (0:
// any free one), the worker's backend (nil: no worker) and the metrics
// registry (nil: no metrics).
type devOptions struct {
	dir     string
	ip      string // the address the server listens on ("": 127.0.0.1)
	port    int
	backend gpu.Backend
	metrics *metrics.Registry
	// ui serves the Temporal Web UI on uiPort (0: any free port).
	ui     bool
	uiPort int
}

func start(ctx context.Context, o devOptions, stdio cli.IO, getenv func(string) string) (*env, error) {
	dir := o.dir
	// One corl dev per directory: two would share one SQLite database and
	// one worker queue name. The OS releases the lock if the process dies.
	lock := flock.New(filepath.Join(dir, "corl-dev.lock"))
	if ok, err := lock.TryLock(); err != nil || !ok {
		return nil, fmt.Errorf("%s is in use by another corl dev (lock %s held%s); stop it, or choose another --dir",
			dir, lock.Path(), errSuffix(err))
	}
	e, err := startLocked(ctx, o, stdio, getenv)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	e.lock = lock
	return e, nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func startLocked(ctx context.Context, o devOptions, stdio cli.IO, getenv func(string) string) (*env, error) {
	dir, port, be := o.dir, o.port, o.backend
	srv, err := devserver.Start(devserver.Options{DBFile: filepath.Join(dir, "temporal.db"), IP: o.ip, Port: port,
		Namespace: "default", SearchAttributes: workflows.SearchAttributeTypes, LogFile: filepath.Join(dir, "temporal.log")})
	if err != nil {
		return nil, err
	}
	conn, err := connect.LoadConnection("", getenv, map[string]any{"temporal.address": srv.Addr(), "temporal.namespace": "default",
		"store.kind": "local", "store.local_dir": filepath.Join(dir, "blobs")})
	if err != nil {
		srv.Stop()
		return nil, err
	}
	if o.metrics != nil {
		conn.Metrics = o.metrics.SDK()
	}
	e := &env{srv: srv, conn: conn}
	if o.ui {
		if e.ui, err = devserver.StartUI(devserver.UIOptions{Frontend: srv.Addr(), Port: o.uiPort}); err != nil {
			srv.Stop()
			return nil, err
		}
	}
	if be == nil {
		return e, nil
	}
	cl, err := dialRetry(ctx, conn)
	if err != nil {
		e.stop()
		return nil, err
	}
	store, err := conn.OpenStore(ctx)
	if err != nil {
		cl.Close()
		e.stop()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	e.stopWork, e.workDone = cancel, make(chan error, 1)
	go func() {
		err := workers.Run(wctx, workers.Options{Client: cl, Store: store, Backend: be,
			Pools: []string{workers.PoolGPU, workers.PoolCPU}, Log: stdio.Err, QueueID: "dev", Metrics: corlMetrics(o.metrics)})
		cl.Close()
		e.workDone <- err
	}()
	return e, nil
}

// dialRetry waits (up to a minute) for a just-started server's frontend.
func dialRetry(ctx context.Context, conn *connect.Connection) (client.Client, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		cl, err := conn.Dial()
		if err == nil {
			return cl, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop stops the worker (it checkpoints what it holds) and then the server.
func (e *env) stop() error {
	var err error
	if e.stopWork != nil {
		e.stopWork()
		err = <-e.workDone
	}
	if e.ui != nil {
		e.ui.Stop()
	}
	e.srv.Stop()
	if e.lock != nil {
		e.lock.Unlock()
	}
	return err
}

func newDevCmd(stdio cli.IO, getenv func(string) string) *cobra.Command {
	var (
		dir      string
		port     int
		ip       string
		noWorker bool
		bf       cli.BackendFlags
		mAddr    string
		uiPort   int
		headless bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a Temporal server, a worker and a local blob store in this process",
		Long: `Starts, in one process, a Temporal server (SQLite store in <dir>/temporal.db,
so a killed corl dev resumes its runs when restarted on the same directory),
a worker serving both pools, and a local blob store in <dir>/blobs. Start runs
from another terminal with corl run; stop with Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return err
			}
			var be gpu.Backend
			if !noWorker {
				if be, err = bf.Open(); err != nil {
					return err
				}
			}
			reg, err := metrics.Open(cmd.Context(), mAddr, stdio.Out)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("ui-port") && port != 0 && port+1000 <= 65535 {
				uiPort = port + 1000 // as temporal server start-dev
			}
			e, err := start(cmd.Context(), devOptions{dir: abs, ip: ip, port: port, backend: be, metrics: reg, ui: !headless, uiPort: uiPort}, stdio, getenv)
			if err != nil {
				return err
			}
			if e.ui != nil {
				fmt.Fprintf(stdio.Out, "Temporal Web UI at %s\n", e.ui.URL())
			}
			fmt.Fprintf(stdio.Out, "Temporal at %s (namespace default, data in %s)\nblob store %s\nstart a run: corl run -f run.yaml --address %s --store-dir %s\n",
				e.srv.Addr(), abs, e.conn.Store.Local, e.srv.Addr(), e.conn.Store.Local)
			// corl run, status and watch from any directory find this server.
			info := connect.DevInfo{Address: e.srv.Addr(), StoreDir: e.conn.Store.Local, Dir: abs, PID: os.Getpid()}
			if err := connect.PublishDev(getenv, info); err != nil {
				fmt.Fprintf(stdio.Err, "could not publish the dev address (%v); pass --address and --store-dir to corl run\n", err)
			}
			defer connect.WithdrawDev(getenv)
			<-cmd.Context().Done()
			fmt.Fprintln(stdio.Err, "stopping")
			return e.stop()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "corl-data", "data directory (Temporal database, blobs, logs)")
	fl.IntVar(&port, "port", 7233, "Temporal frontend port (0: any free port)")
	fl.StringVar(&ip, "ip", "127.0.0.1", "address the Temporal server listens on (one of this machine's; workers elsewhere dial it)")
	fl.BoolVar(&noWorker, "no-worker", false, "run the server only")
	fl.IntVar(&uiPort, "ui-port", 0, "Temporal Web UI port (default: --port + 1000, as temporal server start-dev; 0: any free port)")
	fl.BoolVar(&headless, "headless", false, "do not serve the Temporal Web UI")
	fl.StringVar(&mAddr, "metrics", "127.0.0.1:0", "serve Prometheus metrics (SDK and corl's) on this host:port at /metrics (port 0: any free one; empty: off)")
	bf.Register(fl, getenv)
	return cmd
}

// corlMetrics is the registry's corl metrics, or nil without a registry.
func corlMetrics(r *metrics.Registry) *metrics.Corl {
	if r == nil {
		return nil
	}
	return r.Corl
}
