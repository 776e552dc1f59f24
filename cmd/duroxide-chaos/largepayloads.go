package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/duroxide-go/cdb/internal/storedpayload"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/blobstore"
	"github.com/duroxide-go/cdb/payload/filestore"
)

// -large-payloads: the soak's store behind a claim-check (payload/filestore
// in the run's directory, or payload/blobstore in the container the
// DUROXIDE_BLOB_* environment names), and the checks that the raw store
// holds references for every payload over the threshold, that every
// reference of an instance still there resolves, and that none of a
// deleted instance's does.

// Environment passed from the driver to its workers for -large-payloads:
// the mode and, for "file", the directory every process shares. For
// "blob" the workers read blobstore.ConfigFromEnv, with the threshold
// and prefix the driver chose.
const (
	envLargePayloads = "DUROXIDE_CHAOS_LARGE_PAYLOADS"
	envPayloadDir    = "DUROXIDE_CHAOS_PAYLOAD_DIR"
)

// largeThreshold is the claim-check's threshold in the soak: low, so
// most of the bigpayload kind's payloads and many others go out.
const largeThreshold = 4 << 10

// Values of -large-payloads.
const (
	largeFile = "file"
	largeBlob = "blob"
)

// largeCodec is what the soak needs of filestore.Codec and
// blobstore.Codec.
type largeCodec interface {
	payload.Codec
	payload.PayloadDeleter
	Threshold() int
}

// newLargeCodec makes the claim-check of mode: dir is the file store's
// directory; cacheBytes is its Options.CacheBytes (negative: none).
func newLargeCodec(mode, dir string, cacheBytes int, blob *blobstore.Config) (largeCodec, error) {
	switch mode {
	case largeFile:
		return filestore.New(dir, &filestore.Options{Threshold: largeThreshold, CacheBytes: cacheBytes})
	case largeBlob:
		cfg := *blob
		cfg.CacheBytes = cacheBytes
		return blobstore.New(cfg)
	}
	return nil, fmt.Errorf("-large-payloads: unknown mode %q (file, blob)", mode)
}

// blobConfig reads the blob store's configuration from the environment,
// with the soak's threshold unless DUROXIDE_BLOB_THRESHOLD sets one.
func blobConfig() (*blobstore.Config, error) {
	cfg, err := blobstore.ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("-large-payloads blob: set %s (or %s with %s), e.g. for Azurite: %w",
			blobstore.EnvConnectionString, blobstore.EnvContainerURL, blobstore.EnvAccountKey, err)
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = largeThreshold
	}
	return &cfg, nil
}

// setUpLargePayloads makes the driver's claim-check (and an uncached one
// for the checks, which must see the store, not a cache), creates the
// blob container, and returns the workers' environment.
func (d *driver) setUpLargePayloads(ctx context.Context) (payload.Codec, []string, error) {
	mode := d.cfg.LargePayloads
	env := []string{envLargePayloads + "=" + mode}
	var blob *blobstore.Config
	switch mode {
	case largeFile:
		d.payloadDir = filepath.Join(d.dir, "payloads")
		env = append(env, envPayloadDir+"="+d.payloadDir)
	case largeBlob:
		var err error
		if blob, err = blobConfig(); err != nil {
			return nil, nil, err
		}
		if blob.Prefix == "" {
			// Runs sharing a container keep apart.
			blob.Prefix = fmt.Sprintf("chaos-%d/", d.cfg.Seed)
		}
		env = append(env, blobstore.EnvPrefix+"="+blob.Prefix, blobstore.EnvThreshold+"="+strconv.Itoa(blob.Threshold))
	}
	large, err := newLargeCodec(mode, d.payloadDir, 0, blob)
	if err != nil {
		return nil, nil, err
	}
	if d.largeCheck, err = newLargeCodec(mode, d.payloadDir, -1, blob); err != nil {
		return nil, nil, err
	}
	if b, ok := large.(*blobstore.Codec); ok {
		if err := b.CreateContainer(ctx); err != nil {
			return nil, nil, fmt.Errorf("-large-payloads blob: %w", err)
		}
	}
	d.large = large
	d.refs = map[string]map[string]bool{}
	return large, env, nil
}

// workerLargeCodec is the claim-check the driver's environment names
// (nil without -large-payloads).
func workerLargeCodec() (payload.Codec, error) {
	mode := os.Getenv(envLargePayloads)
	if mode == "" {
		return nil, nil
	}
	var blob *blobstore.Config
	if mode == largeBlob {
		var err error
		if blob, err = blobConfig(); err != nil {
			return nil, err
		}
	}
	return newLargeCodec(mode, os.Getenv(envPayloadDir), 0, blob)
}

// checkOffloadedKV judges how id's KV values are stored in the raw
// store (see checkOffloaded).
func (d *driver) checkOffloadedKV(ctx context.Context, r *Report, id string) []string {
	kv, err := d.p.KVValues(ctx, id)
	if err != nil {
		return []string{fmt.Sprintf("%s: raw KV values: %v", id, err)}
	}
	stored := make([]string, 0, len(kv))
	for _, k := range sortedStrings(kv) {
		stored = append(stored, kv[k])
	}
	return d.judgeStored(r, id, "KV", stored)
}

// checkOffloaded judges how execution e of id is stored in the raw
// store: every payload over the threshold must be a reference. The
// references are kept for checkPayloadDeletes.
func (d *driver) checkOffloaded(ctx context.Context, r *Report, id string, e uint64) []string {
	raw, err := d.p.ReadHistoryWithExecutionID(ctx, id, e)
	if err != nil {
		return []string{fmt.Sprintf("%s#%d: raw history: %v", id, e, err)}
	}
	var problems []string
	for _, ev := range raw {
		payloads, err := storedpayload.Of(ev)
		if err != nil {
			return append(problems, fmt.Sprintf("%s#%d: event %d: %v", id, e, ev.EventID, err))
		}
		problems = append(problems, d.judgeStored(r, id, fmt.Sprintf("#%d event %d", e, ev.EventID), payloads)...)
	}
	return problems
}

// judgeStored counts the references among stored and reports each
// payload over the threshold stored inline.
func (d *driver) judgeStored(r *Report, id, where string, stored []string) []string {
	var problems []string
	for _, s := range stored {
		if s == "" {
			continue
		}
		ref, size := d.splitStored(s)
		if ref != "" {
			r.OffloadedPayloads++
			if d.refs[id] == nil {
				d.refs[id] = map[string]bool{}
			}
			d.refs[id][ref] = true
			continue
		}
		if size > d.large.Threshold() {
			r.InlineLargePayloads++
			problems = append(problems, fmt.Sprintf("%s %s: a payload of %d bytes is stored inline (threshold %d)", id, where, size, d.large.Threshold()))
		}
	}
	return problems
}

// splitStored returns the claim-check's reference in stored payload s
// (what the large codec's Decode takes), or "" and the size s keeps
// in the store: its encoded bytes if a codec encoded it.
func (d *driver) splitStored(s string) (ref string, size int) {
	if !payload.IsEncoded(s) {
		return "", len(s)
	}
	names, body, _ := strings.Cut(s[len(payload.Prefix):], ":")
	data, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return "", len(body)
	}
	list := strings.Split(names, ",")
	// The claim-check is the chain's last codec: its form is the body.
	if list[len(list)-1] != d.large.Name() || len(data) == 0 {
		return "", len(data)
	}
	if data[0] == '@' {
		return string(data), 0
	}
	return "", len(data) - 1
}

// checkPayloadDeletes deletes every other bigpayload instance (its tree:
// the child too) through the wrapped admin, then reads every reference
// the store held back from the claim-check's own store: a deleted
// instance's must be gone (leftover_payloads), every other one must
// still be there (missing_payloads). With "file" it also looks for any
// file left under a deleted instance's directory, referenced or not (a
// payload written by a turn that never committed).
func (d *driver) checkPayloadDeletes(ctx context.Context, r *Report) ([]string, error) {
	if d.large == nil {
		return nil, nil
	}
	deleted := map[string]bool{}
	for i := range d.cfg.Orchestrations {
		if kindOf(i) != bigPayloadKind || i%2 != 0 {
			continue
		}
		root := instanceName(i)
		if _, err := d.admin.DeleteInstance(ctx, root, true); err != nil {
			return nil, fmt.Errorf("deleting %s: %w", root, err)
		}
		r.PayloadDeletes++
		deleted[root] = true
		for id := range d.refs {
			if strings.HasPrefix(id, root+"::") {
				deleted[id] = true
			}
		}
	}
	var problems []string
	for _, id := range sortedStrings(d.refs) {
		for _, ref := range sortedStrings(d.refs[id]) {
			_, err := d.largeCheck.Decode(ctx, payload.Scope{Instance: id}, []byte(ref))
			switch {
			case deleted[id] && err == nil:
				r.LeftoverPayloads++
				problems = append(problems, fmt.Sprintf("%s was deleted, yet its payload %s is still there", id, ref))
			case deleted[id] && !errors.Is(err, payload.ErrMissing):
				r.LeftoverPayloads++
				problems = append(problems, fmt.Sprintf("%s was deleted; reading its payload %s: %v", id, ref, err))
			case !deleted[id] && err != nil:
				r.MissingPayloads++
				problems = append(problems, fmt.Sprintf("%s: its payload %s does not read back: %v", id, ref, err))
			}
		}
	}
	if d.payloadDir == "" {
		return problems, nil
	}
	found, err := d.leftoverFiles(r, deleted)
	return append(problems, found...), err
}

// leftoverFiles counts the files of the file store, and reports those
// under a deleted instance's directory.
func (d *driver) leftoverFiles(r *Report, deleted map[string]bool) ([]string, error) {
	dirs := map[string]string{}
	for id := range deleted {
		dirs[escapeInstance(id)] = id
	}
	var problems []string
	err := filepath.WalkDir(d.payloadDir, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == d.payloadDir {
			return filepath.SkipDir // nothing was ever offloaded
		}
		if err != nil || e.IsDir() {
			return err
		}
		r.PayloadFiles++
		rel, err := filepath.Rel(d.payloadDir, path)
		if err != nil {
			return err
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if id, ok := dirs[top]; ok {
			r.LeftoverPayloads++
			problems = append(problems, fmt.Sprintf("%s was deleted, yet file %s remains", id, rel))
		}
		return nil
	})
	sort.Strings(problems)
	return problems, err
}

// escapeInstance is the directory name the file store gives instance
// (its FoldCase escaping): bytes outside [a-z0-9_-] as %XX.
func escapeInstance(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
