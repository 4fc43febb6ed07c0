package devserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Options configure the server.
type Options struct {
	// DBFile is the SQLite database; created with its schema when missing.
	DBFile string
	// IP and Port of the frontend (Port 0: a free port).
	IP   string
	Port int
	// Namespace is created at startup (with SearchAttributes registered).
	Namespace        string
	SearchAttributes map[string]enumspb.IndexedValueType
	// LogFile receives the server's log at warn level ("" discards it).
	LogFile string
}

// Server is a running dev server.
type Server struct {
	srv  temporal.Server
	addr string
}

// Addr is the frontend's host:port.
func (s *Server) Addr() string { return s.addr }

// Stop shuts the server down.
func (s *Server) Stop() { s.srv.Stop() }

const clusterName = "active"

// Start starts the server and returns once its frontend accepts connections.
func Start(o Options) (*Server, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.DBFile == "" {
		return nil, fmt.Errorf("devserver: a database file is required")
	}
	if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o755); err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	ports, err := freePorts(o.IP, 5)
	if err != nil {
		return nil, err
	}
	if o.Port != 0 {
		// The server would only log this to its file and exit: say it here.
		l, err := net.Listen("tcp", net.JoinHostPort(o.IP, fmt.Sprint(o.Port)))
		if err != nil {
			return nil, fmt.Errorf("devserver: port %d on %s is not free (%v): stop what holds it or choose another port (0: any free one)", o.Port, o.IP, err)
		}
		l.Close()
		ports[0] = o.Port
	}
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: o.DBFile,
		ConnectAttributes: map[string]string{"mode": "rwc", "_journal_mode": "WAL", "_synchronous": "2"}}
	if _, err := os.Stat(o.DBFile); os.IsNotExist(err) {
		if err := sqliteschema.SetupSchema(sqlCfg); err != nil {
			return nil, fmt.Errorf("devserver: create schema in %s: %w", o.DBFile, err)
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("devserver: namespace %s: %w", o.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("devserver: namespace %s: %w", o.Namespace, err)
	}
	addr := net.JoinHostPort(o.IP, fmt.Sprint(ports[0]))
	cfg := &config.Config{}
	cfg.Global.Membership.MaxJoinDuration = 30 * time.Second
	cfg.Global.Membership.BroadcastAddress = o.IP
	cfg.Persistence.DefaultStore = "sqlite"
	cfg.Persistence.VisibilityStore = "sqlite"
	cfg.Persistence.NumHistoryShards = 1
	cfg.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sqlCfg}}
	cfg.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10, MasterClusterName: clusterName, CurrentClusterName: clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled: true, InitialFailoverVersion: 1, RPCAddress: addr,
			HTTPAddress: net.JoinHostPort(o.IP, fmt.Sprint(ports[4])), ClusterID: "corl-dev"}},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	service := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.GRPCPort, s.RPC.BindOnIP, s.RPC.HTTPPort = grpcPort, o.IP, httpPort
		return s
	}
	cfg.Services = map[string]config.Service{
		"frontend": service(ports[0], ports[4]),
		"history":  service(ports[1], 0),
		"matching": service(ports[2], 0),
		"worker":   service(ports[3], 0),
	}
	cfg.Archival.History.State, cfg.Archival.Visibility.State = "disabled", "disabled"
	cfg.NamespaceDefaults.Archival.History.State, cfg.NamespaceDefaults.Archival.Visibility.State = "disabled", "disabled"
	cfg.PublicClient.HostPort = addr

	logger := log.Logger(log.NewNoopLogger())
	if o.LogFile != "" {
		logger = log.NewZapLogger(log.BuildZapLogger(log.Config{Level: "warn", Format: "console", OutputFile: o.LogFile}))
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for i, name := range []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		hosts[name] = static.SingleLocalHost(net.JoinHostPort(o.IP, fmt.Sprint(ports[i])))
	}
	dyn := dynamicconfig.StaticClient{
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: start: %w", err)
	}
	return &Server{srv: srv, addr: addr}, nil
}

// freePorts reserves n distinct free TCP ports on ip.
func freePorts(ip string, n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("devserver: no free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
