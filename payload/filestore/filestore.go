// Package filestore keeps payloads over a threshold in files under a
// directory, leaving a small reference in the store: the embedded store
// keeps them in its data directory this way (embedded.Store.Payloads).
// References, names and errors are those of payload/blobstore, which keeps
// them in Azure Blob Storage instead.
package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/internal/claimcheck"
)

// DefaultThreshold is Options.Threshold's default: payloads of more than
// 256 KiB go to files. See docs/costs.md for how to pick one.
const DefaultThreshold = 256 << 10

// DefaultCacheBytes is Options.CacheBytes's default.
const DefaultCacheBytes = 32 << 20

// Name is the codec's payload.Codec name.
const Name = "filestore"

// Errors are the payload package's: payload.ErrCorrupt, payload.ErrMissing
// (a file that is gone) and payload.ErrInvalidCodec (invalid options).

// Options configure New. The zero value is ready to use.
type Options struct {
	// Threshold: payloads of more bytes than this go to files, smaller
	// ones stay in the store. 0 means DefaultThreshold.
	Threshold int
	// CacheBytes bounds the memory kept of payloads read back, so a
	// replay does not read each file again; 0 means DefaultCacheBytes,
	// negative caches nothing.
	CacheBytes int
}

// Codec is a payload.Codec and payload.PayloadDeleter keeping large
// payloads in files. It is safe for concurrent use, and any number of
// Codecs (a restarted process's among them) may share a directory.
type Codec struct {
	cc  *claimcheck.Codec
	dir string
}

var (
	_ payload.Codec          = (*Codec)(nil)
	_ payload.PayloadDeleter = (*Codec)(nil)
)

// New returns a codec keeping payloads under dir, which is created when
// the first large payload is written.
func New(dir string, opts *Options) (*Codec, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if dir == "" {
		return nil, fmt.Errorf("filestore: empty directory: %w", payload.ErrInvalidCodec)
	}
	if o.Threshold < 0 {
		return nil, fmt.Errorf("filestore: negative Threshold %d: %w", o.Threshold, payload.ErrInvalidCodec)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	switch {
	case o.CacheBytes == 0:
		o.CacheBytes = DefaultCacheBytes
	case o.CacheBytes < 0:
		o.CacheBytes = 0
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: directory %q: %w", dir, err)
	}
	s := files{dir: abs}
	// FoldCase: the directory may be on a case-insensitive file system,
	// where instances "A" and "a" would otherwise share a directory.
	cc := claimcheck.New(s, claimcheck.Options{Name: Name, Threshold: o.Threshold, CacheBytes: o.CacheBytes, FoldCase: true})
	return &Codec{cc: cc, dir: abs}, nil
}

// Dir is the absolute path of the directory holding the payloads.
func (c *Codec) Dir() string { return c.dir }

// Threshold is the size in bytes above which payloads go to files.
func (c *Codec) Threshold() int { return c.cc.Threshold() }

// Name implements payload.Codec: "filestore".
func (c *Codec) Name() string { return Name }

// Encode implements payload.Codec: data of at most Threshold bytes comes
// back inline (tagged), larger data is written to its file, synced, and
// replaced by a reference naming it.
func (c *Codec) Encode(ctx context.Context, scope payload.Scope, data []byte) ([]byte, error) {
	return c.cc.Encode(ctx, scope, data)
}

// Decode implements payload.Codec, reading the file of a reference only
// now, and checking its size and SHA-256.
func (c *Codec) Decode(ctx context.Context, scope payload.Scope, data []byte) ([]byte, error) {
	return c.cc.Decode(ctx, scope, data)
}

// DeletePayloads implements payload.PayloadDeleter: it removes the files
// of instance, or of the given executions only when executions is
// non-nil.
func (c *Codec) DeletePayloads(ctx context.Context, instance string, executions []uint64) error {
	return c.cc.DeletePayloads(ctx, instance, executions)
}

// files is the claimcheck.Store of a directory: one file per payload at
// its name's path.
type files struct{ dir string }

func (f files) path(name string) string {
	return filepath.Join(f.dir, filepath.FromSlash(name))
}

// Put writes a temporary file, syncs it, and renames it into place, so a
// reader never sees half a payload and a crash right after the turn
// commits cannot lose one. A file already there holds the same bytes
// (its name is their SHA-256) and is left alone.
func (f files) Put(_ context.Context, name string, data []byte) error {
	p := f.path(name)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Concurrent writers of the same payload rename identical files over
	// each other: whichever lands, the content is the same.
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	return syncDirs(f.dir, dir)
}

// syncDirs syncs dir and its parents up to root, so the new file's
// directory entries (and any directory MkdirAll made) survive a crash.
func syncDirs(root, dir string) error {
	for {
		if err := syncDir(dir); err != nil {
			return err
		}
		if dir == root || !strings.HasPrefix(dir, root) {
			return nil
		}
		dir = filepath.Dir(dir)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}

// Get reads the payload's file.
func (f files) Get(_ context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(f.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no file %s: %w", f.path(name), payload.ErrMissing)
	}
	return b, err
}

// DeletePrefix removes the directory a prefix names: prefixes are always
// an instance's or an execution's directory.
func (f files) DeletePrefix(_ context.Context, prefix string) error {
	return os.RemoveAll(f.path(strings.TrimSuffix(prefix, "/")))
}
