package blob

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// checkCollect: garbage collection removes the objects of an interrupted
// checkpoint and the objects a manifest no longer names, keeps every
// complete checkpoint and every object younger than the threshold (a
// checkpoint being written now), and a dry run removes nothing.
func checkCollect(t *testing.T, s Lister) {
	t.Helper()
	ctx := context.Background()
	files := map[string][]byte{"model.safetensors": []byte("weights"), "config.json": []byte(`{}`)}
	done, err := WriteCheckpoint(ctx, s, CheckpointPrefix("r", 2, "m"), files, nil)
	if err != nil {
		t.Fatal(err)
	}
	half := CheckpointPrefix("r", 4, "m") + "/model.safetensors" // killed before its manifest
	stray := CheckpointPrefix("r", 2, "m") + "/optimizer.bin"    // not in the manifest
	rollout := RolloutKey("r", 3, "m")                           // not a checkpoint: never collected
	for _, k := range []string{half, stray, rollout} {
		if err := s.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	keys := func() []string {
		objs, err := s.List(ctx, "runs/")
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range objs {
			ks = append(ks, o.Key)
		}
		return ks
	}
	before := keys()
	if g, err := Collect(ctx, s, time.Hour, false); err != nil || len(g.Orphans) != 0 {
		t.Fatalf("young objects collected: %v %v", g.Orphans, err)
	}
	g, err := Collect(ctx, s, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Orphans) != 2 || !slices.Equal(keys(), before) {
		t.Fatalf("dry run: %d orphans %v, and the store changed: %v", len(g.Orphans), g.Orphans, keys())
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := Collect(ctx, s, 0, false); err != nil {
		t.Fatal(err)
	}
	after := keys()
	for _, k := range []string{half, stray} {
		if slices.Contains(after, k) {
			t.Errorf("%s was not collected", k)
		}
	}
	if !slices.Contains(after, rollout) {
		t.Errorf("the rollout %s was collected", rollout)
	}
	if _, _, err := ReadCheckpoint(ctx, s, done); err != nil {
		t.Errorf("the complete checkpoint did not survive collection: %v", err)
	}
}

func TestLocalCollect(t *testing.T) { checkCollect(t, Local{Root: t.TempDir()}) }

func TestS3Collect(t *testing.T) { checkCollect(t, newTestS3(t, s3Endpoint(t), 3, 10*time.Second)) }

// TestLocalTempFilesAreSwept: a local store writes through its temporary
// directory, so objects never have temporary files beside them; a file a
// killed writer left there is swept once old, a fresh one (a live writer's)
// is not, and neither is ever listed as an object. Temporary files beside
// objects, from before, are swept too.
func TestLocalTempFilesAreSwept(t *testing.T) {
	root := t.TempDir()
	l := Local{Root: root}
	ctx := context.Background()
	if err := l.Put(ctx, "runs/r/x.json", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "runs", "r")); len(ents) != 1 {
		t.Fatalf("beside the object: %v", ents)
	}
	old := time.Now().Add(-2 * time.Hour)
	killed := filepath.Join(root, TempDir, ".model.safetensors.tmp123")
	legacy := filepath.Join(root, "runs", "r", ".model.safetensors.tmp456")
	fresh := filepath.Join(root, TempDir, ".config.json.tmp789")
	for _, p := range []string{killed, legacy, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chtimes(killed, old, old)
	os.Chtimes(legacy, old, old)
	objs, err := l.List(ctx, "")
	if err != nil || len(objs) != 1 || objs[0].Key != "runs/r/x.json" {
		t.Fatalf("listing %v %v, want the one object", objs, err)
	}
	gone, err := l.SweepTemp(time.Hour, false)
	if err != nil || len(gone) != 2 {
		t.Fatalf("swept %v %v, want the two old files", gone, err)
	}
	for p, want := range map[string]bool{killed: false, legacy: false, fresh: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	if err := l.Put(ctx, TempDir+"/x", nil); err == nil {
		t.Error("a key under the temporary directory was accepted")
	}
}
