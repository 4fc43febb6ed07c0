package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADocGo: each package's doc comment is its doc.go,
// and only there, so a reader opening a package finds what it holds in
// the same file everywhere.
func TestEveryPackageHasADocGo(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}} {{.Name}} {{join .GoFiles \",\"}}", "github.com/corl-project/corl/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		dir, name, files := f[0], f[1], strings.Split(f[2], ",")
		want := "// Package " + name + " "
		if name == "main" {
			want = "// Command "
		}
		for _, g := range files {
			b, err := os.ReadFile(filepath.Join(dir, g))
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			has := strings.Contains(src, "\n"+want) || strings.HasPrefix(src, want)
			switch {
			case g == "doc.go" && !has:
				t.Errorf("%s: doc.go does not start the package comment with %q", dir, want)
			case g != "doc.go" && has:
				t.Errorf("%s: %s holds the package comment; it belongs in doc.go", dir, g)
			}
		}
		if !strings.Contains(","+f[2]+",", ",doc.go,") {
			t.Errorf("%s: no doc.go", dir)
		}
	}
}
