package devcli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/cli"
)

// CertFiles are the files WriteTestCA writes into its directory.
var CertFiles = struct{ CA, CAKey, Server, ServerKey, Client, ClientKey string }{
	"ca.pem", "ca-key.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem"}

// WriteTestCA writes a certificate authority of its own into dir and, signed
// by it, a certificate for the Temporal services (usable as a server and, for
// the services' calls to each other under mutual TLS, as a client) naming
// hosts, and a client certificate for corl's workers and commands. Keys are
// ECDSA P-256, written 0600. It is a test CA, for trying the cluster's TLS
// on one machine; a shared cluster's certificates come from its own CA.
func WriteTestCA(dir string, hosts []string, valid time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "corl test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(valid),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, CertFiles.CA), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, CertFiles.CAKey), caKey); err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	leaf := func(name, certFile, keyFile string, usage []x509.ExtKeyUsage, hosts []string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(valid),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, certFile), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writeKey(filepath.Join(dir, keyFile), key)
	}
	if err := leaf("temporal", CertFiles.Server, CertFiles.ServerKey,
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, hosts); err != nil {
		return err
	}
	return leaf("corl", CertFiles.Client, CertFiles.ClientKey, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
}

// commaList is a comma-separated flag's entries, trimmed, empty ones left
// out.
func commaList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func newServerCertsCmd(stdio cli.IO) *cobra.Command {
	var hosts string
	var valid time.Duration
	cmd := &cobra.Command{
		Use:   "certs DIR",
		Short: "Write a test CA and, signed by it, certificates for the services and for corl (mutual TLS on one machine)",
		Long: `Write a test certificate authority into DIR and certificates signed by it:
server.pem (the Temporal services', for --hosts, usable as a client between
services) and client.pem (corl's workers and commands), each with its key.
scripts/cluster.sh runs it when started with TLS=1. A shared cluster's
certificates come from its own CA, not from this command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			hs := commaList(hosts)
			if len(hs) == 0 {
				return fmt.Errorf("--hosts: empty")
			}
			if err := WriteTestCA(args[0], hs, valid); err != nil {
				return fmt.Errorf("certs in %s: %w", args[0], err)
			}
			fmt.Fprintf(stdio.Err, "test CA and certificates for %s in %s\n", strings.Join(hs, ", "), args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&hosts, "hosts", "127.0.0.1,localhost", "comma-separated names and addresses the services' certificate is for")
	cmd.Flags().DurationVar(&valid, "valid", 30*24*time.Hour, "how long the certificates are valid")
	return cmd
}
