package blob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Object is one stored object, as a listing shows it.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Lister is a Store that can list and delete: what garbage collection
// needs. Local and S3 are both.
type Lister interface {
	Store
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// List implements Lister. Temporary files are not objects.
func (l Local) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := l.walk(func(_, key string, d fs.DirEntry) error {
		if d.IsDir() {
			if key == TempDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(key, prefix) || isLegacyTemp(key) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blob list %s: %w", l.URI(prefix), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// walk calls fn on everything under the store's root, with its path and
// its key (slash-separated, relative to the root); what vanishes during
// the walk is passed over.
func (l Local) walk(fn func(path, key string, d fs.DirEntry) error) error {
	return filepath.WalkDir(l.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(l.Root, p)
		return fn(p, filepath.ToSlash(rel), d)
	})
}

// Delete implements Lister.
func (l Local) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(l.Root, filepath.FromSlash(key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob delete %s: %w", key, err)
	}
	return nil
}

// isLegacyTemp reports whether key is a temporary file that a writer from
// before TempDir left beside its object (.name.tmpNNN).
func isLegacyTemp(key string) bool {
	base := path.Base(key)
	return strings.HasPrefix(base, ".") && strings.Contains(base, ".tmp")
}

// SweepTemp removes the temporary files of a Local store that are older
// than olderThan (a writer that was killed, or lost its disk, left them;
// a live writer's are seconds old), in TempDir and beside objects (left by
// earlier versions). It returns what it removed (or, with dryRun, would).
func (l Local) SweepTemp(olderThan time.Duration, dryRun bool) ([]Object, error) {
	var gone []Object
	cutoff := time.Now().Add(-olderThan)
	err := l.walk(func(p, key string, d fs.DirEntry) error {
		if d.IsDir() || !(strings.HasPrefix(key, TempDir+"/") || isLegacyTemp(key)) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			return nil
		}
		gone = append(gone, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		if dryRun {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return gone, fmt.Errorf("sweep %s: %w", l.URI(TempDir), err)
	}
	return gone, nil
}

// List implements Lister.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.key(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list %s: %w", s.URI(prefix), err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if s.prefix != "" {
				k = strings.TrimPrefix(k, s.prefix+"/")
			}
			out = append(out, Object{Key: k, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

// Delete implements Lister.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if _, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(key))}); err != nil {
		return fmt.Errorf("s3 delete %s: %w", s.URI(key), err)
	}
	return nil
}

// Garbage is what Collect found: objects no checkpoint manifest names
// (written by a checkpoint that was killed before its manifest, or
// replaced since) and, in a local store, temporary files.
type Garbage struct {
	Orphans []Object
	Temp    []Object
}

// Bytes is the garbage's total size.
func (g Garbage) Bytes() int64 {
	var n int64
	for _, o := range append(append([]Object(nil), g.Orphans...), g.Temp...) {
		n += o.Size
	}
	return n
}

// Collect finds, and unless dryRun deletes, the store's garbage older than
// olderThan: under every checkpoint prefix (runs/<run>/checkpoints/
// round-N/<member>/), the objects its manifest does not name, or all of
// them when it has no manifest (interrupted: a checkpoint being written
// now is younger than olderThan, so it is left alone); and a local store's
// temporary files. A manifest that does not parse keeps its prefix whole:
// what is corrupt is for a person to look at.
func Collect(ctx context.Context, s Lister, olderThan time.Duration, dryRun bool) (Garbage, error) {
	var g Garbage
	if l, ok := s.(Local); ok {
		tmp, err := l.SweepTemp(olderThan, dryRun)
		if err != nil {
			return g, err
		}
		g.Temp = tmp
	}
	objs, err := s.List(ctx, "runs/")
	if err != nil {
		return g, err
	}
	byPrefix := map[string][]Object{}
	var prefixes []string
	for _, o := range objs {
		p, ok := checkpointPrefixOf(o.Key)
		if !ok {
			continue
		}
		if _, seen := byPrefix[p]; !seen {
			prefixes = append(prefixes, p)
		}
		byPrefix[p] = append(byPrefix[p], o)
	}
	cutoff := time.Now().Add(-olderThan)
	for _, p := range prefixes {
		named := map[string]bool{ManifestKey(p): true}
		b, err := s.Get(ctx, ManifestKey(p))
		switch {
		case err == nil:
			var m Manifest
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			for _, f := range m.Files {
				named[p+"/"+f.Name] = true
			}
		case !errors.Is(err, ErrNotFound):
			return g, err
		}
		for _, o := range byPrefix[p] {
			if !named[o.Key] && o.Modified.Before(cutoff) {
				g.Orphans = append(g.Orphans, o)
			}
		}
	}
	if dryRun {
		return g, nil
	}
	for _, o := range g.Orphans {
		if err := s.Delete(ctx, o.Key); err != nil {
			return g, err
		}
	}
	return g, nil
}

// checkpointPrefixOf is the checkpoint prefix (runs/<run>/checkpoints/
// round-N/<member>) of an object under one.
func checkpointPrefixOf(key string) (string, bool) {
	parts := strings.Split(key, "/")
	// runs, <run>, checkpoints, round-N, <member>, <file>
	if len(parts) != 6 || parts[0] != "runs" || parts[2] != "checkpoints" || !strings.HasPrefix(parts[3], "round-") {
		return "", false
	}
	return strings.Join(parts[:5], "/"), true
}
