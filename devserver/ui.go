package devserver

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/server_options"
)

// UIOptions configure the Temporal Web UI that `corl dev` serves beside the
// server, as `temporal server start-dev` does.
type UIOptions struct {
	// Frontend is the server's gRPC host:port.
	Frontend string
	// IP and Port to serve on (Port 0: a free port).
	IP        string
	Port      int
	Namespace string
	TLS       *UITLS // nil: the frontend speaks plain gRPC
}

// UITLS is how the UI's server reaches a frontend that requires TLS.
type UITLS struct{ CAFile, CertFile, KeyFile, ServerName string }

// UI is a running Web UI.
type UI struct {
	srv *uiserver.Server
	url string
}

// URL is where a browser finds the UI.
func (u *UI) URL() string { return u.url }

// Stop shuts the UI down.
func (u *UI) Stop() { u.srv.Stop() }

// StartUI serves the Web UI (its assets are embedded in the ui-server
// module) and returns once it answers HTTP. The ui-server ends the process
// when its port cannot be bound, so the port is checked first and a taken
// one is an error here.
func StartUI(o UIOptions) (*UI, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	port := o.Port
	if port == 0 {
		ps, err := freePorts(o.IP, 1)
		if err != nil {
			return nil, err
		}
		port = ps[0]
	} else {
		l, err := net.Listen("tcp", net.JoinHostPort(o.IP, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("web UI: port %d on %s is not free (%v): choose another --ui-port (0: any free one) or --headless", port, o.IP, err)
		}
		l.Close()
	}
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: o.Frontend,
		Host:                o.IP,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                uiconfig.CORS{CookieInsecure: true}, // plain HTTP on loopback
	}
	if t := o.TLS; t != nil {
		cfg.TLS = uiconfig.TLS{CaFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName,
			EnableHostVerification: true}
	}
	srv := uiserver.NewServer(server_options.WithConfigProvider(cfg))
	go srv.Start()
	u := &UI{srv: srv, url: fmt.Sprintf("http://%s", net.JoinHostPort(o.IP, strconv.Itoa(port)))}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(u.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u, nil
			}
		}
		if time.Now().After(deadline) {
			srv.Stop()
			return nil, fmt.Errorf("web UI on %s did not answer: %v", u.url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
