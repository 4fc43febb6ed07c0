package examples

import (
	"embed"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

//go:embed quickstart.yaml zoo/llama-odd-3k zoo/gpt2-even-3k
var files embed.FS

// QuickstartBases are the zoo bases the quickstart spec names (as
// bases/<name>).
var QuickstartBases = []string{"llama-odd-3k", "gpt2-even-3k"}

// Quickstart is the quickstart run spec.
func Quickstart() []byte {
	b, _ := files.ReadFile("quickstart.yaml")
	return b
}

// WriteBases copies the quickstart's embedded base models into
// dir/bases/<name>.
func WriteBases(dir string) error {
	for _, name := range QuickstartBases {
		root := path.Join("zoo", name)
		err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.FromSlash(root), filepath.FromSlash(p))
			target := filepath.Join(dir, "bases", name, rel)
			if d.IsDir() {
				return os.MkdirAll(target, 0o755)
			}
			b, err := files.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
