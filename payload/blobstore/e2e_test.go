package blobstore_test

// The 50 MB activity result runs through the runtime on memprovider,
// which refuses payloads over Cosmos DB's 2 MB item limit as Cosmos
// does, so the test passes only if the result went to a blob.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/blobstore"
)

func TestFiftyMegabyteActivityResultRoundTrips(t *testing.T) {
	url := newContainer(t)
	raw := rawContainer(t, url)
	ctx := context.Background()
	base := memprovider.New()
	// wrap puts base behind a codec of its own on the container, as a
	// process would after a restart.
	wrap := func() duroxide.Provider {
		c, err := blobstore.New(blobstore.Config{ContainerURL: url, AccountKey: devKey})
		if err != nil {
			t.Fatal(err)
		}
		p, err := payload.Wrap(base, c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := wrap()

	raw50 := make([]byte, 25<<20)
	if _, err := rand.Read(raw50); err != nil {
		t.Fatal(err)
	}
	big := hex.EncodeToString(raw50) // 50 MB of JSON-safe text
	sum := sha256.Sum256([]byte(big))
	want := fmt.Sprintf("%d %x", len(big), sum)

	reg := durable.NewRegistry()
	if err := durable.RegisterActivity(reg, "Big", func(durable.ActivityContext, string) (string, error) { return big, nil }); err != nil {
		t.Fatal(err)
	}
	if err := durable.RegisterOrchestration(reg, "Digest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		s, err := durable.CallActivity[string](ctx, "Big", "").Await()
		if err != nil {
			return "", err
		}
		h := sha256.Sum256([]byte(s))
		return fmt.Sprintf("%d %x", len(s), h), nil
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(ctx, p, reg, &durable.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	client := durable.NewClient(p)
	if err := client.StartOrchestration(ctx, "big-1", "Digest", ""); err != nil {
		t.Fatal(err)
	}
	st, err := client.WaitForOrchestration(ctx, "big-1", durable.WaitOptions{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted || st.Output != want {
		t.Fatalf("status %v %q, want Completed %q", st.State, st.Output, want)
	}
	if n := len(listNames(t, raw, "big-1/")); n == 0 {
		t.Fatal("the 50 MB result left no blob: it was not kept outside the store")
	}

	// A fresh codec and wrapper (a restarted process) reads the history.
	fresh := durable.NewClient(wrap())
	if st, err := fresh.Status(ctx, "big-1"); err != nil || st.Output != want {
		t.Fatalf("after a restart: status %+v, %v", st, err)
	}
	if _, err := fresh.DeleteInstance(ctx, "big-1"); err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, raw, "big-1/"); len(got) != 0 {
		t.Fatalf("deleting the instance left blobs %v", got)
	}
}
