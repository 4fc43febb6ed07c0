package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest lists a checkpoint's objects with their sizes and sha256. It is
// written last: its presence means every object it names was written.
type Manifest struct {
	Files []ManifestFile    `json:"files"`
	Meta  map[string]string `json:"meta,omitempty"`
}

// ManifestFile is one object of a checkpoint.
type ManifestFile struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

const manifestName = "manifest.json"

// ManifestKey is the manifest's key under prefix.
func ManifestKey(prefix string) string { return prefix + "/" + manifestName }

// WriteCheckpoint puts files under prefix, then the manifest. It returns the
// manifest key, which is what the workflow records.
func WriteCheckpoint(ctx context.Context, s Store, prefix string, files map[string][]byte, meta map[string]string) (string, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	m := Manifest{Meta: meta}
	for _, n := range names {
		if n == manifestName {
			return "", fmt.Errorf("checkpoint %s: a file may not be called %s", prefix, manifestName)
		}
		if err := s.Put(ctx, prefix+"/"+n, files[n]); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", prefix, err)
		}
		sum := sha256.Sum256(files[n])
		m.Files = append(m.Files, ManifestFile{Name: n, Size: len(files[n]), SHA256: hex.EncodeToString(sum[:])})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	key := ManifestKey(prefix)
	if err := s.Put(ctx, key, b); err != nil {
		return "", fmt.Errorf("checkpoint %s: manifest: %w", prefix, err)
	}
	return key, nil
}

// ErrNoCheckpoint wraps reads of a prefix without a manifest (never written,
// or interrupted before the manifest).
var ErrNoCheckpoint = errors.New("no complete checkpoint")

// ErrCorrupt wraps reads of a checkpoint whose manifest does not parse or
// whose objects are missing or do not match it: reading it again cannot help.
var ErrCorrupt = errors.New("corrupt checkpoint")

// ReadCheckpoint loads the checkpoint whose manifest is at manifestKey and
// verifies every object's size and sha256.
func ReadCheckpoint(ctx context.Context, s Store, manifestKey string) (map[string][]byte, *Manifest, error) {
	b, err := s.Get(ctx, manifestKey)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, fmt.Errorf("%s: %w (manifest missing: never written or interrupted)", s.URI(manifestKey), ErrNoCheckpoint)
	}
	if err != nil {
		return nil, nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: manifest: %v", s.URI(manifestKey), ErrCorrupt, err)
	}
	prefix := manifestKey[:len(manifestKey)-len(manifestName)-1]
	files := map[string][]byte{}
	for _, f := range m.Files {
		data, err := s.Get(ctx, prefix+"/"+f.Name)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, fmt.Errorf("checkpoint %s: %w: %s is missing", s.URI(manifestKey), ErrCorrupt, f.Name)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint %s: %w", s.URI(manifestKey), err)
		}
		sum := sha256.Sum256(data)
		if len(data) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, nil, fmt.Errorf("checkpoint %s: %w: %s has %d bytes, sha256 %x; the manifest says %d bytes, %s",
				s.URI(manifestKey), ErrCorrupt, f.Name, len(data), sum[:6], f.Size, f.SHA256[:12])
		}
		files[f.Name] = data
	}
	return files, &m, nil
}

// UploadDir stores the regular files of dir as a checkpoint under
// uploads/<sha256 of the contents> (so uploading the same model twice writes
// nothing new) and returns its manifest key.
func UploadDir(ctx context.Context, s Store, dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	files := map[string][]byte{}
	h := sha256.New()
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		files[n] = b
		h.Write([]byte(n + "\x00"))
		h.Write(b)
	}
	if len(files) == 0 {
		return "", fmt.Errorf("upload %s: no files", dir)
	}
	prefix := "uploads/" + hex.EncodeToString(h.Sum(nil))
	if _, err := s.Get(ctx, ManifestKey(prefix)); err == nil {
		return ManifestKey(prefix), nil
	}
	source := dir
	if abs, err := filepath.Abs(dir); err == nil {
		source = abs
	}
	return WriteCheckpoint(ctx, s, prefix, files, map[string]string{"source": source})
}

// BlobRef is how a run spec names a checkpoint in the blob store instead of
// a directory: "blob:" + its manifest key.
const BlobRef = "blob:"

// Materialize returns a directory holding the model named by base: base
// itself, or, for a BlobRef, a temporary copy (removed by cleanup). source
// is what to call it in messages: base, or the directory the copy was
// uploaded from (UploadDir records it), never the temporary copy's path.
func Materialize(ctx context.Context, s Store, base string) (dir, source string, cleanup func(), err error) {
	if !strings.HasPrefix(base, BlobRef) {
		return base, base, func() {}, nil
	}
	files, m, err := ReadCheckpoint(ctx, s, strings.TrimPrefix(base, BlobRef))
	if err != nil {
		return "", "", nil, err
	}
	source = base
	if src := m.Meta["source"]; filepath.IsAbs(src) {
		source = src
	}
	tmp, err := os.MkdirTemp("", "corl-model-*")
	if err != nil {
		return "", "", nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			os.RemoveAll(tmp)
			return "", "", nil, err
		}
	}
	return tmp, source, func() { os.RemoveAll(tmp) }, nil
}
