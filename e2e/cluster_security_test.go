//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cli"
)

// TestClusterSecurity: the layout as a shared cluster has it. Mutual TLS
// between the services and for every client, with a CA this test's
// cluster made (corl server certs); the store's bucket granted by policy to
// the workers' account only, in versitygw's IAM; a namespace per team. A
// cohort runs in team-a to the in-process trainer's weights; team-b sees
// neither the run nor team-a's workers; a client without TLS, or without
// a client certificate, is refused; an anonymous store request gets 403;
// and a worker with a wrong store secret, or without its certificate,
// fails at start with an error that names what is wrong.
func TestClusterSecurity(t *testing.T) {
	a, b := bases(t)
	file := specFile(t, "secure", a, b, 2)
	want := reference(t, file)
	c := startCluster(t, "TLS=1", "NAMESPACES=team-a team-b", "NAMESPACE=team-a")
	conn, cl, store := c.open(t)
	ctx := context.Background()

	// TLS: the cluster answers with the client certificate, and refuses
	// a plain-text client and one that shows no certificate.
	if _, err := cl.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{}); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	plain := *conn
	plain.Temporal.TLS.Enabled, plain.Temporal.TLS.CertFile, plain.Temporal.TLS.KeyFile, plain.Temporal.TLS.CAFile = false, "", "", ""
	if pc, err := plain.Dial(); err == nil {
		pc.Close()
		t.Error("a plain-text client connected to the TLS frontend")
	} else if !strings.Contains(err.Error(), "may require TLS") {
		t.Errorf("a plain-text client's error does not name the TLS settings: %v", err)
	} else {
		t.Logf("plain-text client refused: %v", err)
	}
	nocert := *conn
	nocert.Temporal.TLS.CertFile, nocert.Temporal.TLS.KeyFile = "", ""
	if nc, err := nocert.Dial(); err == nil {
		nc.Close()
		t.Error("a client without a certificate connected: the frontend does not require client certificates")
	} else if !strings.Contains(err.Error(), "temporal.tls.cert_file") {
		t.Errorf("a client without a certificate is not told to set one: %v", err)
	} else {
		t.Logf("client without a certificate refused: %v", err)
	}

	// The store: an anonymous request is refused; the workers' account
	// (this test's credentials) is granted.
	if code, err := blob.AnonymousStatus(ctx, c.s3, "corl"); err != nil || code != http.StatusForbidden {
		t.Errorf("anonymous list of the bucket: HTTP %d (%v); want 403", code, err)
	}

	// A cohort in team-a, over TLS, to the in-process trainer's weights.
	run, err := cli.StartRun(ctx, cl, store, c.ns, cli.RunFlags{SpecFlags: cli.SpecFlags{File: file}, ID: "secure-e2e"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	res := awaitResult(t, cl, run.GetID(), 4*time.Minute)
	sameWeights(t, "weights in team-a over TLS", finalHashes(t, store, res), want)

	// team-b: neither the run nor team-a's workers.
	other := *conn
	other.Temporal.Namespace = "team-b"
	ob := dial(t, &other)
	defer ob.Close()
	var nf *serviceerror.NotFound
	if _, err := ob.DescribeWorkflowExecution(ctx, run.GetID(), ""); !errors.As(err, &nf) {
		t.Errorf("team-b describes team-a's run %s: %v; want NotFound", run.GetID(), err)
	}
	if ws, err := activities.ListPool(ctx, ob, nil); err != nil || len(ws) != 0 {
		t.Errorf("team-b's GPU pool lists %v (%v); want none: the workers serve team-a", ws, err)
	}
	if ws, err := activities.ListPool(ctx, cl, nil); err != nil || len(ws) != 2 {
		t.Errorf("team-a's GPU pool lists %v (%v); want the two GPU workers", ws, err)
	}

	// Workers with wrong credentials fail at start and say why.
	worker := func(env ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, corlBin, "worker", "--pool", "gpu", "--queue-id", "gpu-intruder")
		cmd.Env = append(c.clientEnv(), env...)
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Errorf("a worker with %v still ran after a minute:\n%s", env, out)
		} else if err == nil {
			t.Errorf("a worker with %v exited cleanly:\n%s", env, out)
		}
		return string(out)
	}
	out := worker("AWS_SECRET_ACCESS_KEY=not-the-secret")
	if !strings.Contains(out, "refuses access key ID corl-cluster") || !strings.Contains(out, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("a worker with a wrong store secret says:\n%s\nwant the key ID refused and the variable to check", out)
	}
	t.Logf("worker with a wrong store secret: %s", strings.TrimSpace(out))
	out = worker("CORL_TEMPORAL_TLS_CERT_FILE=", "CORL_TEMPORAL_TLS_KEY_FILE=")
	if !strings.Contains(out, "CORL_TEMPORAL_TLS_CERT_FILE") {
		t.Errorf("a worker without its client certificate says:\n%s\nwant the certificate named", out)
	}
	t.Logf("worker without a client certificate: %s", strings.TrimSpace(out))
	out = worker("CORL_TEMPORAL_TLS_CA_FILE=" + filepath.Join(t.TempDir(), "missing.pem"))
	if !strings.Contains(out, "temporal.tls.ca_file") {
		t.Errorf("a worker with a missing CA file says:\n%s\nwant temporal.tls.ca_file named", out)
	}
}
