package claimcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/duroxide-go/cdb/payload"
)

// Store keeps large payloads under the names the Codec gives them.
type Store interface {
	// Put stores data under name. An object already under name counts as
	// success: names are content-addressed, so it holds the same bytes.
	// Put returns only once the object is durable, since the reference
	// is committed with the turn right after.
	Put(ctx context.Context, name string, data []byte) error
	// Get returns the object under name, or an error matching
	// payload.ErrMissing when there is none.
	Get(ctx context.Context, name string) ([]byte, error)
	// DeletePrefix removes every object whose name begins with prefix
	// (which ends with "/"); none is not an error.
	DeletePrefix(ctx context.Context, prefix string) error
}

// The first byte of what Encode returns says which form follows.
const (
	tagInline    = '='
	tagReference = '@'
)

// reference is what a payload over the threshold is replaced by.
type reference struct {
	Version int    `json:"v"`
	Name    string `json:"name"`
	Size    int    `json:"size"`
	SHA256  string `json:"sha256"`
}

// Options configure New.
type Options struct {
	// Name is the codec's payload.Codec name.
	Name string
	// Threshold: payloads of more bytes than this go to the store.
	Threshold int
	// CacheBytes bounds the cache of payloads read from the store; 0
	// caches nothing.
	CacheBytes int
	// FoldCase escapes upper-case letters in instance IDs, for stores on
	// case-insensitive file systems.
	FoldCase bool
}

// Codec is the store-independent payload.Codec and payload.PayloadDeleter.
type Codec struct {
	name      string
	threshold int
	foldCase  bool
	store     Store
	cache     *cache
}

// New returns a codec keeping payloads over opts.Threshold in store.
func New(store Store, opts Options) *Codec {
	return &Codec{
		name:      opts.Name,
		threshold: opts.Threshold,
		foldCase:  opts.FoldCase,
		store:     store,
		cache:     newCache(opts.CacheBytes),
	}
}

// Name implements payload.Codec.
func (c *Codec) Name() string { return c.name }

// Threshold is the size above which payloads go to the store.
func (c *Codec) Threshold() int { return c.threshold }

// Encode implements payload.Codec: data of at most Threshold bytes comes
// back inline, larger data is put in the store first and replaced by a
// reference, so the turn that commits the reference never commits one to
// an object that is not there.
func (c *Codec) Encode(ctx context.Context, scope payload.Scope, data []byte) ([]byte, error) {
	if len(data) <= c.threshold {
		out := make([]byte, 1+len(data))
		out[0] = tagInline
		copy(out[1:], data)
		return out, nil
	}
	if scope.Instance == "" {
		return nil, fmt.Errorf("%s: encode: a payload of %d bytes has no instance to be stored under: %w", c.name, len(data), payload.ErrCorrupt)
	}
	sum := sha256.Sum256(data)
	ref := reference{Version: 1, Size: len(data), SHA256: hex.EncodeToString(sum[:])}
	ref.Name = c.objectName(scope.Instance, scope.ExecutionID, ref.SHA256)
	if err := c.store.Put(ctx, ref.Name, data); err != nil {
		return nil, fmt.Errorf("%s: storing a payload of %d bytes as %s: %w", c.name, len(data), ref.Name, err)
	}
	body, err := json.Marshal(ref)
	if err != nil {
		return nil, err
	}
	return append([]byte{tagReference}, body...), nil
}

// Decode implements payload.Codec. The store is read only here, when a
// payload is decoded, and the bytes read are checked against the
// reference's size and SHA-256.
func (c *Codec) Decode(ctx context.Context, _ payload.Scope, data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: decode: empty payload: %w", c.name, payload.ErrCorrupt)
	}
	switch data[0] {
	case tagInline:
		return bytes.Clone(data[1:]), nil
	case tagReference:
		ref, err := parseReference(data[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: decode: %w", c.name, err)
		}
		return c.read(ctx, ref)
	default:
		return nil, fmt.Errorf("%s: decode: payload starts with %q, neither inline nor a reference: %w", c.name, data[0], payload.ErrCorrupt)
	}
}

// parseReference reads a reference's JSON, refusing any it did not write.
func parseReference(body []byte) (reference, error) {
	var ref reference
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		return reference{}, fmt.Errorf("reference is not valid JSON (%v): %w", err, payload.ErrCorrupt)
	}
	if dec.More() {
		return reference{}, fmt.Errorf("reference has trailing data: %w", payload.ErrCorrupt)
	}
	if ref.Version != 1 {
		return reference{}, fmt.Errorf("reference version %d, this build reads version 1: %w", ref.Version, payload.ErrCorrupt)
	}
	if ref.Size < 0 || len(ref.SHA256) != 64 || !isHex(ref.SHA256) || !validName(ref.Name) {
		return reference{}, fmt.Errorf("reference %q is malformed: %w", ref.Name, payload.ErrCorrupt)
	}
	return ref, nil
}

// read returns the payload ref names, from the cache or the store.
func (c *Codec) read(ctx context.Context, ref reference) ([]byte, error) {
	if b, ok := c.cache.get(ref.Name); ok {
		return b, nil
	}
	b, err := c.store.Get(ctx, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", c.name, ref.Name, err)
	}
	sum := sha256.Sum256(b)
	if len(b) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%s: %s holds %d bytes that are not the %d the reference was written for: %w", c.name, ref.Name, len(b), ref.Size, payload.ErrCorrupt)
	}
	if c.cache.put(ref.Name, b) {
		return bytes.Clone(b), nil
	}
	return b, nil
}

// DeletePayloads implements payload.PayloadDeleter: everything of
// instance when executions is nil, else the named executions' objects.
func (c *Codec) DeletePayloads(ctx context.Context, instance string, executions []uint64) error {
	if instance == "" {
		return fmt.Errorf("%s: delete: empty instance ID: %w", c.name, payload.ErrCorrupt)
	}
	prefixes := []string{c.instancePrefix(instance)}
	if executions != nil {
		prefixes = prefixes[:0]
		for _, e := range executions {
			prefixes = append(prefixes, c.executionPrefix(instance, e))
		}
	}
	for _, p := range prefixes {
		// Evict first: a payload read again after the delete must fail
		// as the store would, not be served from memory.
		c.cache.evictPrefix(p)
		if err := c.store.DeletePrefix(ctx, p); err != nil {
			return fmt.Errorf("%s: deleting %s*: %w", c.name, p, err)
		}
	}
	return nil
}
