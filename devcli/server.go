package devcli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // DB=postgres12
	"go.temporal.io/server/temporal"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/devserver"
	"github.com/corl-project/corl/workflows"
)

// newServerCmd is `corl server`: the Temporal server corl pins, as the
// separate services of a production cluster (frontend, history, matching,
// worker: one process each, or any set in one), with the server's own SQL
// schema tool, the namespace setup and the Web UI. It is what
// scripts/cluster.sh starts on one machine; docker-compose.yml starts the
// same layout from images with the same environment variables.
func newServerCmd(stdio cli.IO, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run Temporal's services on PostgreSQL, set up its schema and namespace, serve the Web UI",
		Long: `Run the Temporal server corl pins as the separate services of a cluster.

  corl server start --services history     one service (or several, comma-separated)
  corl server sql-tool ARGS...             the server's temporal-sql-tool, its schemas embedded
  corl server setup --address HOST:PORT    the namespace and corl's search attributes
  corl server ui --address HOST:PORT       the Temporal Web UI
  corl server certs DIR                    a test CA and certificates for mutual TLS
  corl server store-setup --grant KEYS     the store's bucket, granted to the workers' accounts only

start reads its configuration from the environment, as the temporalio/server
image does (the server's embedded config template): DB=postgres12,
POSTGRES_SEEDS, DB_PORT, POSTGRES_USER, POSTGRES_PWD, NUM_HISTORY_SHARDS,
BIND_ON_IP, FRONTEND_GRPC_PORT, HISTORY_GRPC_PORT, MATCHING_GRPC_PORT,
WORKER_GRPC_PORT and their *_MEMBERSHIP_PORT, LOG_LEVEL. scripts/cluster.sh
sets them; docker-compose.yml sets the same names, and the TEMPORAL_TLS_*
names of the same template turn on TLS (scripts/cluster.sh with TLS=1).

setup and ui reach the frontend as corl's other commands do: TLS from
CORL_TEMPORAL_TLS_ENABLED, CORL_TEMPORAL_TLS_CA_FILE, CORL_TEMPORAL_TLS_CERT_FILE
and CORL_TEMPORAL_TLS_KEY_FILE.`,
	}
	cmd.AddCommand(newServerStartCmd(stdio), newSQLToolCmd(), newServerSetupCmd(stdio, getenv), newServerUICmd(stdio, getenv),
		newServerCertsCmd(stdio), newServerStoreCmd(stdio))
	return cmd
}

// serviceNames are the services one `corl server start` may run.
var serviceNames = []string{"frontend", "history", "matching", "worker"}

func newServerStartCmd(stdio cli.IO) *cobra.Command {
	var services string
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run Temporal services configured by the environment until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svcs, err := parseServices(services)
			if err != nil {
				return err
			}
			cfg, err := config.Load(config.WithEmbedded())
			if err != nil {
				return fmt.Errorf("server config (from the environment): %w", err)
			}
			logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
			srv, err := temporal.NewServer(temporal.ForServices(svcs), temporal.WithConfig(cfg), temporal.WithLogger(logger))
			if err != nil {
				return fmt.Errorf("server %s: %w", services, err)
			}
			if err := srv.Start(); err != nil {
				return fmt.Errorf("server %s: start: %w", services, err)
			}
			fmt.Fprintf(stdio.Err, "temporal %s running (%d history shards, %s)\n", strings.Join(svcs, ","), cfg.Persistence.NumHistoryShards, cfg.Persistence.DefaultStore)
			<-cmd.Context().Done()
			srv.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&services, "services", strings.Join(serviceNames, ","), "comma-separated: "+strings.Join(serviceNames, ", "))
	return cmd
}

// parseServices reads --services, refusing a name the server does not have.
func parseServices(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(serviceNames, n) {
			return nil, fmt.Errorf("--services: %q is not one of %s", n, strings.Join(serviceNames, ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

func newSQLToolCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "sql-tool ARGS...",
		Short:              "The Temporal server's temporal-sql-tool, of the version corl pins (its schemas embedded)",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return sqltool.RunTool(append([]string{"temporal-sql-tool"}, args...))
		},
	}
}

// serverConn is how setup and ui reach the frontend at address: corl's
// connection settings from the environment (TLS included).
func serverConn(getenv func(string) string, address, namespace string) (*connect.Connection, error) {
	return connect.LoadConnection("", getenv, map[string]any{"temporal.address": address, "temporal.namespace": namespace})
}

func newServerSetupCmd(stdio cli.IO, getenv func(string) string) *cobra.Command {
	var address, namespace string
	var retention time.Duration
	var wait time.Duration
	var gpuWorkers int
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Wait for the frontend, register the namespace and corl's search attributes (idempotent), wait for history",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn, err := serverConn(getenv, address, namespace)
			if err != nil {
				return err
			}
			cl, err := dialWithin(ctx, conn, wait)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := setupNamespace(ctx, stdio, cl, namespace, retention); err != nil {
				return err
			}
			if err := awaitHistory(ctx, stdio, cl, namespace, wait); err != nil {
				return err
			}
			return awaitPool(ctx, stdio, cl, gpuWorkers, wait)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:7233", "the frontend's host:port")
	cmd.Flags().StringVar(&namespace, "namespace", "default", "namespace to register")
	cmd.Flags().DurationVar(&retention, "retention", 72*time.Hour, "how long closed runs' histories are kept (their records stay in the store)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the frontend, history and the workers")
	cmd.Flags().IntVar(&gpuWorkers, "gpu-workers", 0, "also wait until the GPU pool lists this many workers, as placement sees them (0: do not wait)")
	return cmd
}

// dialWithin connects to the frontend, trying until it answers or wait
// has passed.
func dialWithin(ctx context.Context, conn *connect.Connection, wait time.Duration) (client.Client, error) {
	deadline := time.Now().Add(wait)
	address := conn.Temporal.Address
	for {
		cl, err := conn.Dial()
		if err == nil {
			if _, err = cl.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				return cl, nil
			}
			cl.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("frontend %s did not answer within %s: %w", address, wait, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// setupNamespace registers ns (when missing) and corl's search attributes
// (those missing), waiting for the namespace to reach every frontend.
func setupNamespace(ctx context.Context, stdio cli.IO, cl client.Client, ns string, retention time.Duration) error {
	_, err := cl.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(retention)})
	var exists *serviceerror.NamespaceAlreadyExists
	switch {
	case errors.As(err, &exists):
		fmt.Fprintf(stdio.Err, "namespace %s: already registered\n", ns)
	case err != nil:
		return fmt.Errorf("register namespace %s: %w", ns, err)
	default:
		fmt.Fprintf(stdio.Err, "namespace %s: registered (retention %s)\n", ns, retention)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := cl.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		if err == nil {
			missing := map[string]enumspb.IndexedValueType{}
			for name, t := range workflows.SearchAttributeTypes {
				if _, ok := resp.GetCustomAttributes()[name]; !ok {
					missing[name] = t
				}
			}
			if len(missing) == 0 {
				fmt.Fprintf(stdio.Err, "namespace %s: corl's search attributes registered\n", ns)
				return nil
			}
			_, err = cl.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s: search attributes: %w", ns, err)
		}
		time.Sleep(time.Second) // a new namespace takes a moment to reach the frontends
	}
}

// awaitHistory waits until the history service serves the namespace's
// runs: a frontend up before history joins its membership ring answers a
// run's start with "Not enough hosts to serve the request". Describing
// runs that do not exist answers NotFound once history owns their shards;
// 16 workflow IDs reach every shard of a few with near certainty.
func awaitHistory(ctx context.Context, stdio cli.IO, cl client.Client, ns string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for id := 0; id < 16; {
		_, err := cl.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
			Namespace: ns, Execution: &commonpb.WorkflowExecution{WorkflowId: fmt.Sprintf("corl-setup-probe-%d", id)}})
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			id++
			continue
		case time.Now().After(deadline):
			return fmt.Errorf("history does not serve namespace %s within %s: %v", ns, wait, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Fprintf(stdio.Err, "namespace %s: history serves its runs\n", ns)
	return nil
}

// awaitPool waits until the GPU pool's listing, the one placement reads
// (activities.ListPool), has n workers: a run started before a worker's
// first poll reaches the server places its members without it.
func awaitPool(ctx context.Context, stdio cli.IO, cl client.Client, n int, wait time.Duration) error {
	if n == 0 {
		return nil
	}
	deadline := time.Now().Add(wait)
	for {
		ws, err := activities.ListPool(ctx, cl, nil)
		if err == nil && len(ws) >= n {
			fmt.Fprintf(stdio.Err, "GPU pool: %d workers listed\n", len(ws))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GPU pool lists %d of %d workers after %s (%v)", len(ws), n, wait, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func newServerUICmd(stdio cli.IO, getenv func(string) string) *cobra.Command {
	var o devserver.UIOptions
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the Temporal Web UI for a frontend until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := serverConn(getenv, o.Frontend, o.Namespace)
			if err != nil {
				return err
			}
			if t := conn.Temporal.TLS; t.Enabled || t.CertFile != "" {
				o.TLS = &devserver.UITLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
			}
			ui, err := devserver.StartUI(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "web UI on %s (frontend %s)\n", ui.URL(), o.Frontend)
			<-cmd.Context().Done()
			ui.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Frontend, "address", "127.0.0.1:7233", "the frontend's host:port")
	cmd.Flags().StringVar(&o.IP, "ip", "127.0.0.1", "address to serve on")
	cmd.Flags().IntVar(&o.Port, "port", 8233, "port to serve on")
	cmd.Flags().StringVar(&o.Namespace, "namespace", "default", "namespace shown first")
	return cmd
}
