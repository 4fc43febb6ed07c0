package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path (mode 0644) with what write produces.
func Write(path string, write func(io.Writer) error) error {
	return WriteVia(filepath.Dir(path), path, write)
}

// WriteVia is Write with the temporary file in tmpDir, which must be on
// path's filesystem: a store keeps its temporary files where a sweep finds
// them, not beside the objects.
func WriteVia(tmpDir, path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) // CreateTemp makes 0600
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteBytes creates path with data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}
