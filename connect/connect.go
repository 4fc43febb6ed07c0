package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/config"
)

// Connection says how to reach Temporal and the blob store. Secrets (API
// key, AWS credentials) come from the environment or files, never from a
// run spec; they are not logged.
type Connection struct {
	Temporal Temporal `mapstructure:"temporal"`
	Store    Store    `mapstructure:"store"`
	// Metrics, when set, receives the Temporal SDK's client and worker
	// metrics (a Prometheus registry's handler). Not a config key.
	Metrics client.MetricsHandler `mapstructure:"-"`
}

// Temporal is a cluster address and its credentials.
type Temporal struct {
	Address   string `mapstructure:"address"`
	Namespace string `mapstructure:"namespace"`
	APIKey    string `mapstructure:"api_key"`
	TLS       struct {
		Enabled    bool   `mapstructure:"enabled"`
		CertFile   string `mapstructure:"cert_file"` // mTLS client certificate
		KeyFile    string `mapstructure:"key_file"`
		CAFile     string `mapstructure:"ca_file"`
		ServerName string `mapstructure:"server_name"`
	} `mapstructure:"tls"`
}

// Store selects the blob store: a local directory or S3.
type Store struct {
	Kind  string        `mapstructure:"kind"` // local | s3
	Local string        `mapstructure:"local_dir"`
	S3    blob.S3Config `mapstructure:"s3"`
}

var connDefaults = map[string]any{
	"temporal.address": "127.0.0.1:7233", "temporal.namespace": "default", "temporal.api_key": "",
	"temporal.tls.enabled": false, "temporal.tls.cert_file": "", "temporal.tls.key_file": "", "temporal.tls.ca_file": "",
	"temporal.tls.server_name": "",
	"store.kind":               "local", "store.local_dir": "corl-data/blobs",
	"store.s3.endpoint": "", "store.s3.region": "us-east-1", "store.s3.bucket": "", "store.s3.prefix": "",
	"store.s3.path_style": false, "store.s3.max_attempts": 10, "store.s3.attempt_timeout": "60s",
}

// LoadConnection reads the connection settings from file (optional), the
// CORL_* environment (CORL_TEMPORAL_ADDRESS, CORL_STORE_S3_BUCKET, ...) and
// overrides.
func LoadConnection(file string, getenv func(string) string, overrides map[string]any) (*Connection, error) {
	v := viper.New()
	for k, d := range connDefaults {
		v.SetDefault(k, d)
	}
	if file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
	}
	if err := config.Layer(v, connDefaults, getenv, overrides); err != nil {
		return nil, err
	}
	var c Connection
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = true
		dc.DecodeHook = mapstructure.StringToTimeDurationHookFunc()
	})
	if err != nil {
		return nil, fmt.Errorf("connection config: %w", err)
	}
	switch c.Store.Kind {
	case "local":
		if c.Store.Local == "" {
			return nil, fmt.Errorf("store.local_dir: empty")
		}
	case "s3":
		if c.Store.S3.Bucket == "" {
			return nil, fmt.Errorf("store.s3.bucket: required for store.kind s3")
		}
	default:
		return nil, fmt.Errorf("store.kind: %q is not local or s3", c.Store.Kind)
	}
	return &c, nil
}

// Dial connects to Temporal.
func (c *Connection) Dial() (client.Client, error) {
	o := client.Options{HostPort: c.Temporal.Address, Namespace: c.Temporal.Namespace, MetricsHandler: c.Metrics,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))}
	t := c.Temporal
	if t.TLS.Enabled || t.TLS.CertFile != "" || t.APIKey != "" {
		tc := &tls.Config{ServerName: t.TLS.ServerName, MinVersion: tls.VersionTLS12}
		if t.TLS.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.TLS.CertFile, t.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("temporal.tls.cert_file/key_file: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		if t.TLS.CAFile != "" {
			pem, err := os.ReadFile(t.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("temporal.tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("temporal.tls.ca_file: no certificate in %s", t.TLS.CAFile)
			}
			tc.RootCAs = pool
		}
		o.ConnectionOptions.TLS = tc
	}
	if t.APIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
	}
	// gRPC says only "no children to pick from" for a host it cannot resolve.
	if host, _, err := net.SplitHostPort(t.Address); err != nil {
		return nil, fmt.Errorf("temporal.address: %q is not host:port: %w", t.Address, err)
	} else if net.ParseIP(host) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("temporal.address: cannot resolve host %q: %w", host, err)
		}
	}
	cl, err := client.Dial(o)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w%s", t.Address, t.Namespace, err, tlsHint(err, t))
	}
	return cl, nil
}

// tlsHint names the TLS setting a failed dial most likely lacks: gRPC
// says only "server preface: EOF" to a plain-text client of a TLS
// frontend, and "broken pipe" when the frontend wants a client certificate
// that was not shown.
func tlsHint(err error, t Temporal) string {
	msg := err.Error()
	tlsOn := t.TLS.Enabled || t.TLS.CertFile != "" || t.APIKey != ""
	switch {
	case !tlsOn && strings.Contains(msg, "server preface"):
		return " (the frontend may require TLS: set temporal.tls.enabled and temporal.tls.ca_file, CORL_TEMPORAL_TLS_ENABLED=true and CORL_TEMPORAL_TLS_CA_FILE)"
	case tlsOn && t.TLS.CertFile == "" && (strings.Contains(msg, "broken pipe") || strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate")):
		return " (the frontend may require a client certificate: set temporal.tls.cert_file and temporal.tls.key_file, CORL_TEMPORAL_TLS_CERT_FILE and CORL_TEMPORAL_TLS_KEY_FILE)"
	case tlsOn && strings.Contains(msg, "unknown authority"):
		return " (the frontend's certificate is not signed by a CA this client trusts: set temporal.tls.ca_file, CORL_TEMPORAL_TLS_CA_FILE)"
	}
	return ""
}

// OpenStore opens the blob store.
func (c *Connection) OpenStore(ctx context.Context) (blob.Store, error) {
	if c.Store.Kind == "s3" {
		s, err := blob.NewS3(ctx, c.Store.S3)
		if err != nil {
			return nil, err
		}
		return s, s.EnsureBucket(ctx)
	}
	return blob.Local{Root: c.Store.Local}, nil
}
