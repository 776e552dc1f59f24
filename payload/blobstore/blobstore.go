package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/internal/claimcheck"
)

// Name is the codec's payload.Codec name.
const Name = "blobstore"

// ErrTooLarge is matched by Encode's error for a payload of more than
// MaxPayloadBytes. The other errors are the payload package's:
// payload.ErrCorrupt, payload.ErrMissing and payload.ErrInvalidCodec.
var ErrTooLarge = errors.New("blobstore: payload larger than one blob upload takes")

// Codec is a payload.Codec and payload.PayloadDeleter keeping large
// payloads in one blob container. It is safe for concurrent use, and any
// number of Codecs (other processes', a restarted one's) may share a
// container.
type Codec struct {
	cc    *claimcheck.Codec
	blobs blobs
}

var (
	_ payload.Codec          = (*Codec)(nil)
	_ payload.PayloadDeleter = (*Codec)(nil)
)

// New returns a codec for the container cfg names. It makes no request:
// CreateContainer creates the container where the deployment does not.
func New(cfg Config) (*Codec, error) {
	if cfg.Threshold < 0 {
		return nil, configError("negative Threshold %d", cfg.Threshold)
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	switch {
	case cfg.CacheBytes == 0:
		cfg.CacheBytes = DefaultCacheBytes
	case cfg.CacheBytes < 0:
		cfg.CacheBytes = 0
	}
	prefix := cfg.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.HasPrefix(prefix, "/") {
		return nil, configError("Prefix %q begins with /", cfg.Prefix)
	}
	client, err := cfg.client()
	if err != nil {
		return nil, err
	}
	b := blobs{client: client, prefix: prefix}
	return &Codec{cc: claimcheck.New(b, claimcheck.Options{Name: Name, Threshold: cfg.Threshold, CacheBytes: cfg.CacheBytes}), blobs: b}, nil
}

// Name implements payload.Codec: "blobstore".
func (c *Codec) Name() string { return Name }

// Threshold is the size in bytes above which payloads go to blobs.
func (c *Codec) Threshold() int { return c.cc.Threshold() }

// URL is the container's URL (for a SAS connection string, with its
// token: do not log it).
func (c *Codec) URL() string { return c.blobs.client.URL() }

// Encode implements payload.Codec: data of at most Threshold bytes comes
// back inline (tagged), larger data is uploaded (one Put Blob request)
// before Encode returns a reference naming the blob.
func (c *Codec) Encode(ctx context.Context, scope payload.Scope, data []byte) ([]byte, error) {
	if int64(len(data)) > MaxPayloadBytes {
		return nil, fmt.Errorf("blobstore: a payload of %d bytes, the most is %d: %w", len(data), MaxPayloadBytes, ErrTooLarge)
	}
	return c.cc.Encode(ctx, scope, data)
}

// Decode implements payload.Codec: a reference's blob is downloaded only
// now (one Get Blob request, none on a cache hit) and checked against the
// reference's size and SHA-256.
func (c *Codec) Decode(ctx context.Context, scope payload.Scope, data []byte) ([]byte, error) {
	return c.cc.Decode(ctx, scope, data)
}

// DeletePayloads implements payload.PayloadDeleter: it lists the blobs of
// instance (of the given executions only when executions is non-nil) and
// deletes each.
func (c *Codec) DeletePayloads(ctx context.Context, instance string, executions []uint64) error {
	return c.cc.DeletePayloads(ctx, instance, executions)
}

// CreateContainer creates the container, if it does not exist yet.
func (c *Codec) CreateContainer(ctx context.Context) error {
	_, err := c.blobs.client.Create(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("blobstore: creating the container: %w", err)
	}
	return nil
}

// blobs is the claimcheck.Store of a container.
type blobs struct {
	client *container.Client
	prefix string
}

// Put uploads data in one request, only if no blob has the name yet: an
// existing one holds the same bytes (the name is their SHA-256), so "already
// exists" is success and a retry or a concurrent writer costs one refused
// request, never a second copy.
func (b blobs) Put(ctx context.Context, name string, data []byte) error {
	_, err := b.client.NewBlockBlobClient(b.prefix+name).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream")},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}},
	})
	switch {
	case err == nil, bloberror.HasCode(err, bloberror.BlobAlreadyExists):
		return nil
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return fmt.Errorf("the container does not exist (create it, or call Codec.CreateContainer): %w", err)
	}
	return err
}

// Get downloads the blob whole.
func (b blobs) Get(ctx context.Context, name string) ([]byte, error) {
	resp, err := b.client.NewBlobClient(b.prefix+name).DownloadStream(ctx, nil)
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return nil, fmt.Errorf("no blob %s: %w", b.prefix+name, payload.ErrMissing)
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return nil, fmt.Errorf("the container does not exist: %w", payload.ErrMissing)
	case err != nil:
		return nil, err
	}
	body := resp.NewRetryReader(ctx, nil)
	defer body.Close()
	var buf bytes.Buffer
	if resp.ContentLength != nil && *resp.ContentLength > 0 {
		buf.Grow(int(*resp.ContentLength))
	}
	if _, err := io.Copy(&buf, body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DeletePrefix lists the blobs under prefix (one request per 5,000) and
// deletes each (one request each); one deleted meanwhile is no error.
func (b blobs) DeletePrefix(ctx context.Context, prefix string) error {
	pager := b.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(b.prefix + prefix)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			_, err := b.client.NewBlobClient(*item.Name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)})
			if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
				return err
			}
		}
	}
	return nil
}
