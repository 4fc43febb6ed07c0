package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func checkStore(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope/x.json"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: err = %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, "a/b.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/b.json", []byte("two")); err != nil { // a retry overwrites
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "a/b.json"); err != nil || string(b) != "two" {
		t.Fatalf("get = %q, %v", b, err)
	}
	if err := s.Put(ctx, "../escape", nil); err == nil {
		t.Fatal("a key escaping the store was accepted")
	}
	files := map[string][]byte{"model.safetensors": bytes.Repeat([]byte{1, 2, 3}, 1000), "config.json": []byte(`{}`)}
	key, err := WriteCheckpoint(ctx, s, "runs/r/checkpoints/round-00001/m", files, map[string]string{"round": "1"})
	if err != nil {
		t.Fatal(err)
	}
	got, m, err := ReadCheckpoint(ctx, s, key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got["model.safetensors"], files["model.safetensors"]) || m.Meta["round"] != "1" {
		t.Fatal("checkpoint read back differs")
	}
	// Corrupt one object: the reader refuses, naming it.
	if err := s.Put(ctx, "runs/r/checkpoints/round-00001/m/config.json", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCheckpoint(ctx, s, key); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "config.json has") {
		t.Fatalf("corrupt checkpoint: err = %v", err)
	}
	// Objects without a manifest (a writer that died before the end) are not a checkpoint.
	if err := s.Put(ctx, "runs/r/checkpoints/round-00002/m/model.safetensors", []byte("half")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCheckpoint(ctx, s, ManifestKey("runs/r/checkpoints/round-00002/m")); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("partial checkpoint: err = %v, want ErrNoCheckpoint", err)
	}
}

func TestLocalStore(t *testing.T) { checkStore(t, Local{Root: t.TempDir()}) }

func TestKeysAreDerivedFromCoordinates(t *testing.T) {
	if RolloutKey("r", 3, "m") != RolloutKey("r", 3, "m") || RolloutKey("r", 3, "m") == RolloutKey("r", 4, "m") {
		t.Fatal("rollout keys are not a function of (run, round, member)")
	}
	if !strings.HasPrefix(ManifestKey(CheckpointPrefix("r", 2, "m")), "runs/r/checkpoints/round-00002/m/") {
		t.Fatal(ManifestKey(CheckpointPrefix("r", 2, "m")))
	}
}

// s3Endpoint returns the S3-compatible server for tests (CORL_TEST_S3_ENDPOINT,
// started by .ci/run) or skips visibly.
func s3Endpoint(t *testing.T) string {
	ep := os.Getenv("CORL_TEST_S3_ENDPOINT")
	if ep == "" {
		if os.Getenv("CORL_REQUIRE_S3") == "1" {
			t.Fatal("CORL_REQUIRE_S3=1 but CORL_TEST_S3_ENDPOINT is not set")
		}
		t.Skip("CORL_TEST_S3_ENDPOINT not set: no S3-compatible server here (make test-long starts versitygw)")
	}
	return ep
}

func newTestS3(t *testing.T, endpoint string, attempts int, timeout time.Duration) *S3 {
	t.Helper()
	s, err := NewS3(context.Background(), S3Config{Endpoint: endpoint, Region: "us-east-1", Bucket: "corl-test",
		Prefix: fmt.Sprintf("t-%d", time.Now().UnixNano()), PathStyle: true, Attempts: attempts, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestS3Store(t *testing.T) {
	checkStore(t, newTestS3(t, s3Endpoint(t), 3, 10*time.Second))
}

// faultProxy forwards to the S3 server but answers some requests with 5xx
// and stalls others past the client's attempt timeout.
func faultProxy(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var n, faults atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch i := n.Add(1); {
		case i%5 == 1:
			faults.Add(1)
			http.Error(w, "injected", http.StatusServiceUnavailable)
		case i%5 == 3:
			faults.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`))
		case i%7 == 2:
			faults.Add(1)
			time.Sleep(1500 * time.Millisecond) // past the attempt timeout
			rp.ServeHTTP(w, r)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &faults
}

// TestS3SurvivesFaults: through a proxy that fails or stalls a good share of
// requests, the store still works, and checkpoints stay all-or-nothing.
func TestS3SurvivesFaults(t *testing.T) {
	ep := s3Endpoint(t)
	proxy, faults := faultProxy(t, ep)
	s := newTestS3(t, proxy.URL, 12, time.Second)
	checkStore(t, s)
	if faults.Load() < 5 {
		t.Fatalf("only %d faults injected: the test did not exercise retries", faults.Load())
	}
	// A store that gives up after one attempt leaves some checkpoints
	// unfinished; read straight from the server, each either reads back whole
	// and verified or is refused: never half.
	flaky := newTestS3(t, proxy.URL, 1, time.Second)
	direct := newTestS3Reader(t, ep, flaky)
	ctx := context.Background()
	want := map[string][]byte{"a": []byte("aaaa"), "b": []byte("bbbb"), "c": []byte("cc")}
	failed, refused := 0, 0
	for i := 0; i < 20; i++ {
		prefix := fmt.Sprintf("runs/r/checkpoints/round-%05d/m", i)
		if _, err := WriteCheckpoint(ctx, flaky, prefix, want, nil); err != nil {
			failed++
		}
		got, _, err := ReadCheckpoint(ctx, direct, ManifestKey(prefix))
		if err != nil {
			refused++
			continue
		}
		for name, data := range want {
			if !bytes.Equal(got[name], data) {
				t.Fatalf("round %d: %s read back as %q", i, name, got[name])
			}
		}
	}
	if failed == 0 || refused == 0 {
		t.Fatalf("%d writes failed, %d reads refused: the faults did not interrupt any checkpoint", failed, refused)
	}
}

// newTestS3Reader reads flaky's objects directly from the server.
func newTestS3Reader(t *testing.T, endpoint string, like *S3) *S3 {
	s, err := NewS3(context.Background(), S3Config{Endpoint: endpoint, Region: "us-east-1", Bucket: like.bucket, Prefix: like.prefix, PathStyle: true, Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocalURI(t *testing.T) {
	dir := t.TempDir()
	if u := (Local{Root: dir}).URI("a/b"); u != "file://"+filepath.ToSlash(dir)+"/a/b" {
		t.Fatal(u)
	}
}

func TestUploadDirAndMaterialize(t *testing.T) {
	ctx := context.Background()
	s := Local{Root: t.TempDir()}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "config.json"), []byte(`{"a":1}`), 0o644)
	os.WriteFile(filepath.Join(src, "model.safetensors"), bytes.Repeat([]byte{7}, 100), 0o644)
	key, err := UploadDir(ctx, s, src)
	if err != nil {
		t.Fatal(err)
	}
	again, err := UploadDir(ctx, s, src)
	if err != nil || again != key {
		t.Fatalf("second upload of the same files: %q, %v; want the same key %q", again, err, key)
	}
	dir, source, cleanup, err := Materialize(ctx, s, BlobRef+key)
	if err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs(src); source != abs {
		t.Errorf("the copy's source is %q, want the uploaded directory %q", source, abs)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if !bytes.Equal(b, bytes.Repeat([]byte{7}, 100)) {
		t.Fatal("materialized model differs")
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("cleanup left the directory")
	}
	if d, name, _, err := Materialize(ctx, s, src); err != nil || d != src || name != src {
		t.Fatalf("a plain directory: %q, %v", d, err)
	}
	if _, _, _, err := Materialize(ctx, s, BlobRef+"uploads/none/manifest.json"); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("missing blob model: %v", err)
	}
}
