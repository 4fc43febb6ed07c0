// Package examples ships the project's example run specs and two small base
// models (byte-level, different families and sizes), embedded so that
// `corl quickstart` works from any directory. Regenerate the bases with
// `make bases` (deterministic: same bytes on any machine with the same
// kernels).
package examples

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed quickstart.yaml local.yaml bases
var files embed.FS

// Quickstart is the quickstart run spec.
func Quickstart() []byte {
	b, _ := files.ReadFile("quickstart.yaml")
	return b
}

// WriteBases copies the embedded base models into dir/<name> and returns dir.
func WriteBases(dir string) error {
	return fs.WalkDir(files, "bases", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
