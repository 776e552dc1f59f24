package blobstore_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/duroxide-go/cdb/internal/leaktest"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/blobstore"
	"github.com/duroxide-go/cdb/payload/internal/claimchecktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// EnvAzurite names the variable .ci/run sets to the Azurite blob
// service's account URL, http://127.0.0.1:<port>/devstoreaccount1.
const EnvAzurite = "CDB_AZURITE_BLOB_ENDPOINT"

// Azurite's well-known development account (public, in its docs).
const (
	devAccount = "devstoreaccount1"
	devKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

var containers atomic.Int64

// azurite returns the account URL, skipping the test when Azurite is not
// running.
func azurite(t *testing.T) string {
	t.Helper()
	u := os.Getenv(EnvAzurite)
	if u == "" {
		t.Skipf("skipped without Azurite, which needs Node: %s is not set; .ci/run installs and starts it (payload/blobstore/testdata/azurite), and filestore runs the same suite with only Go", EnvAzurite)
	}
	return strings.TrimRight(u, "/")
}

// newContainer creates a container of its own for t and returns its URL.
func newContainer(t *testing.T) string {
	t.Helper()
	url := fmt.Sprintf("%s/t%d-%d", azurite(t), os.Getpid(), containers.Add(1))
	c, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: devKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateContainer(context.Background()); err != nil {
		t.Fatal(err)
	}
	return url
}

// rawContainer is an azblob client on url, to look at what the codec
// wrote.
func rawContainer(t *testing.T, url string) *container.Client {
	t.Helper()
	key, err := container.NewSharedKeyCredential(devAccount, devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(url, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func listNames(t *testing.T, c *container.Client, prefix string) []string {
	t.Helper()
	var names []string
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix)})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, strings.TrimPrefix(*it.Name, prefix))
		}
	}
	return names
}

func TestAzurite(t *testing.T) {
	url := newContainer(t)
	raw := rawContainer(t, url)
	const prefix = "hub/"
	claimchecktest.Run(t, claimchecktest.Backend{
		New: func(t *testing.T, threshold int) claimchecktest.Codec {
			c, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: devKey, Prefix: "hub", Threshold: threshold})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Objects: func(t *testing.T) []string { return listNames(t, raw, prefix) },
		Overwrite: func(t *testing.T, name string, data []byte) {
			if _, err := raw.NewBlockBlobClient(prefix+name).Upload(context.Background(), streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// counter counts the requests of each method the codec sends.
type counter struct{ get, put, del, list atomic.Int64 }

func (c *counter) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	switch {
	case r.Method == http.MethodPut:
		c.put.Add(1)
	case r.Method == http.MethodDelete:
		c.del.Add(1)
	case r.Method == http.MethodGet && r.URL.Query().Get("comp") == "list":
		c.list.Add(1)
	case r.Method == http.MethodGet:
		c.get.Add(1)
	}
	return req.Next()
}

func (c *counter) String() string {
	return fmt.Sprintf("put %d, get %d, list %d, delete %d", c.put.Load(), c.get.Load(), c.list.Load(), c.del.Load())
}

// TestRequestsPerLargePayload pins the counts docs/costs.md gives: one Put
// Blob to encode (and one refused Put for a retry), one Get Blob on the
// first decode and none after, nothing for inline payloads, and a list
// plus one delete per blob to delete an instance.
func TestRequestsPerLargePayload(t *testing.T) {
	url := newContainer(t)
	var n counter
	c, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: devKey, Threshold: 100,
		ClientOptions: &container.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{&n}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := payload.Scope{Instance: "count", ExecutionID: 1}
	want := func(put, get, list, del int64) {
		t.Helper()
		if n.put.Load() != put || n.get.Load() != get || n.list.Load() != list || n.del.Load() != del {
			t.Fatalf("requests: %v; want put %d, get %d, list %d, delete %d", &n, put, get, list, del)
		}
	}
	small, err := c.Encode(ctx, s, bytes.Repeat([]byte("x"), 100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(ctx, s, small); err != nil {
		t.Fatal(err)
	}
	want(0, 0, 0, 0)
	data := bytes.Repeat([]byte("y"), 101)
	enc, err := c.Encode(ctx, s, data)
	if err != nil {
		t.Fatal(err)
	}
	want(1, 0, 0, 0)
	if _, err := c.Encode(ctx, s, data); err != nil {
		t.Fatalf("retried Encode: %v", err)
	}
	want(2, 0, 0, 0)
	for range 3 {
		got, err := c.Decode(ctx, s, enc)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Decode = %d bytes, %v", len(got), err)
		}
	}
	want(2, 1, 0, 0)
	if _, err := c.Encode(ctx, payload.Scope{Instance: "count", ExecutionID: 2}, bytes.Repeat([]byte("z"), 200)); err != nil {
		t.Fatal(err)
	}
	want(3, 1, 0, 0)
	if err := c.DeletePayloads(ctx, "count", nil); err != nil {
		t.Fatal(err)
	}
	want(3, 1, 1, 2)
}

// TestConnectionString: the same container reached through a connection
// string (account key) holds what a ContainerURL+AccountKey codec wrote.
func TestConnectionString(t *testing.T) {
	url := newContainer(t)
	name := url[strings.LastIndex(url, "/")+1:]
	cs := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;", devAccount, devKey, azurite(t))
	byKey, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: devKey, Threshold: 10})
	if err != nil {
		t.Fatal(err)
	}
	byString, err := blobstore.New(blobstore.Config{ConnectionString: cs, Container: name, Threshold: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := payload.Scope{Instance: "cs", ExecutionID: 1}
	data := bytes.Repeat([]byte("c"), 64)
	enc, err := byKey.Encode(ctx, s, data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := byString.Decode(ctx, s, enc)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Decode through the connection string = %d bytes, %v", len(got), err)
	}
}

// TestMissingContainer: encoding into a container that does not exist
// fails, saying so.
func TestMissingContainer(t *testing.T) {
	c, err := blobstore.New(blobstore.Config{ContainerURL: azurite(t) + "/no-such-container", AccountKey: devKey, Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Encode(context.Background(), payload.Scope{Instance: "i", ExecutionID: 1}, []byte("large enough"))
	if err == nil || !strings.Contains(err.Error(), "container does not exist") {
		t.Fatalf("Encode into a missing container = %v", err)
	}
}
