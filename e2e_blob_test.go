package cdb_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/internal/testbackend"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/blobstore"
)

// azuriteKey is the Azurite emulator's well-known development account
// key (public, in Azurite's documentation).
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// TestE2ECodecBlobs runs the lifecycle suites on cosmostest with the
// whole chain a production deployment configures: gzip, AES-GCM, then
// Azure Blob Storage (Azurite, which .ci/run starts) with a 64-byte
// threshold, so most payloads are blobs that continue-as-new, children,
// rewind, restart, delete and the samples must read back.
func TestE2ECodecBlobs(t *testing.T) {
	t.Parallel()
	endpoint := os.Getenv("CDB_AZURITE_BLOB_ENDPOINT")
	if endpoint == "" {
		t.Skip("skipped without Azurite, which needs Node: CDB_AZURITE_BLOB_ENDPOINT is not set; .ci/run installs and starts it")
	}
	url := fmt.Sprintf("%s/e2e%d", strings.TrimRight(endpoint, "/"), os.Getpid())
	blobs, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: azuriteKey, Threshold: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := blobs.CreateContainer(t.Context()); err != nil {
		t.Fatal(err)
	}
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	testbackend.ForNamed(t, testbackend.NameCosmostest, func(t *testing.T, b testbackend.Backend) {
		durabletest.RunModules(t, durabletest.WithCodecs(newFactory(t, b), payload.Gzip(), aes, blobs),
			"e2e_samples", "continue_as_new_tests", "lifecycle_tests", "operations_tests", "deletion_stray_tests", "sub_orchestration_routing_tests")
	})
	// The instances the suites did not delete keep their blobs: a chain
	// that never reached the claim-check would leave none.
	if n := countBlobs(t, url); n == 0 && !filtered() {
		t.Errorf("no blob in %s: the suites' payloads did not go through the claim-check", url)
	} else {
		t.Logf("%d blobs", n)
	}
}

// countBlobs lists the container at url with the azblob SDK itself.
func countBlobs(t *testing.T, url string) int {
	t.Helper()
	key, err := container.NewSharedKeyCredential("devstoreaccount1", azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(url, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for pager := c.NewListBlobsFlatPager(nil); pager.More(); {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Segment.BlobItems)
	}
	return n
}

// filtered reports whether -run selects subtests (a pattern with a
// "/"), so a check over what a whole suite leaves behind may have
// nothing to count.
func filtered() bool {
	f := flag.Lookup("test.run")
	return f != nil && strings.Contains(f.Value.String(), "/")
}
