package cosmostest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestFaultStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	f.s.InjectFault(Fault{Op: OpCreateItem, Status: http.StatusServiceUnavailable, SubStatus: 21008, Times: 1})
	_, err := f.ct.CreateItem(ctx, pkOf("i1"), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusServiceUnavailable, "faulted create")
	if substatus(err) != "21008" {
		t.Fatalf("substatus %q", substatus(err))
	}
	if docs, _ := f.s.Documents(testDB, testColl); len(docs) != 0 {
		t.Fatalf("faulted create applied: %v", docs)
	}
	// Times: 1 is used up.
	f.create(t, "a", "i1")
}

func TestFaultThrottleRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	// The SDK's default client retries 429s, honouring x-ms-retry-after-ms.
	c := f.s.Client()
	ct, _ := c.NewContainer(testDB, testColl)
	f.s.ResetCounts()
	f.s.InjectFault(Fault{Op: OpReadItem, Status: http.StatusTooManyRequests, SubStatus: 3200, Headers: map[string]string{"x-ms-retry-after-ms": "5"}, Times: 2})
	_, err := ct.ReadItem(testCtx(t), pkOf("i1"), "a", nil)
	wantOK(t, err, "read after two 429s")
	if n := f.s.Counts()[OpReadItem]; n != 3 {
		t.Fatalf("read requests: %d, want 3", n)
	}
}

func TestFaultDropBeforeApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	remove := f.s.InjectFault(Fault{Op: OpCreateItem, Drop: DropBeforeApply})
	_, err := f.ct.CreateItem(testCtx(t), pkOf("i1"), item("a", "i1"), nil)
	if err == nil || status(err) != -1 {
		t.Fatalf("dropped create: want a transport error, got %v", err)
	}
	if docs, _ := f.s.Documents(testDB, testColl); len(docs) != 0 {
		t.Fatal("dropped-before-apply create was applied")
	}
	remove()
	f.create(t, "a", "i1")
}

func TestFaultDropAfterApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.s.InjectFault(Fault{Op: OpBatch, Drop: DropAfterApply, Times: 1})
	b := f.ct.NewTransactionalBatch(pkOf("i1"))
	b.CreateItem(item("a", "i1"), nil)
	b.CreateItem(item("b", "i1"), nil)
	_, err := f.ct.ExecuteTransactionalBatch(testCtx(t), b, nil)
	if err == nil || status(err) != -1 {
		t.Fatalf("dropped batch: want a transport error, got %v", err)
	}
	if docs, _ := f.s.Documents(testDB, testColl); len(docs) != 2 {
		t.Fatalf("dropped-after-apply batch: %d documents, want 2", len(docs))
	}
	// Retrying the same batch now fails with 409: the write is not idempotent.
	r, err := f.ct.ExecuteTransactionalBatch(testCtx(t), b, nil)
	wantOK(t, err, "retried batch")
	if r.Success || r.OperationResults[0].StatusCode != http.StatusConflict {
		t.Fatalf("retried batch: success %v results %+v", r.Success, r.OperationResults)
	}
}

func TestFaultDelayAndMatch(t *testing.T) {
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	f.create(t, "b", "i1")
	f.s.InjectFault(Fault{
		Op:    OpReadItem,
		Match: func(r *http.Request) bool { return r.URL.Path == docsPath+"/b" },
		Delay: 300 * time.Millisecond,
	})
	start := time.Now()
	f.read(t, "a", "i1")
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("unmatched read took %v", d)
	}
	start = time.Now()
	f.read(t, "b", "i1")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("delayed read took %v", d)
	}
	// The delay respects the client going away.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := f.ct.ReadItem(ctx, pkOf("i1"), "b", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled delayed read: %v", err)
	}
	f.s.ClearFaults()
	start = time.Now()
	f.read(t, "b", "i1")
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("read after ClearFaults took %v", d)
	}
}

func TestFaultAllOpsAndOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// An empty Op matches everything; the first matching fault wins.
	r1 := f.s.InjectFault(Fault{Status: http.StatusRequestTimeout})
	f.s.InjectFault(Fault{Status: http.StatusInternalServerError})
	// (Writes: the SDK retries 408 and 500 on reads, never on writes.)
	_, err := f.ct.CreateItem(testCtx(t), pkOf("i1"), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusRequestTimeout, "first fault")
	r1()
	_, err = f.ct.UpsertItem(testCtx(t), pkOf("i1"), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusInternalServerError, "second fault")
	f.s.ClearFaults()
	_, err = f.db.Read(testCtx(t), nil)
	wantOK(t, err, "after ClearFaults")
}

func TestFaultDefaultRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.s.InjectFault(Fault{Op: OpReadItem, Status: http.StatusTooManyRequests})
	_, err := f.ct.ReadItem(testCtx(t), pkOf("i"), "x", nil)
	wantStatus(t, err, http.StatusTooManyRequests, "throttled")
	var re *azcore.ResponseError
	errors.As(err, &re)
	if re.RawResponse.Header.Get("x-ms-retry-after-ms") == "" || re.ErrorCode == "" {
		t.Fatalf("429 without x-ms-retry-after-ms: %v", re.RawResponse.Header)
	}
}

// Writes whose response is lost surface as transport errors and are not
// retried by the SDK, so the caller sees an unknown outcome.
func TestFaultDropAfterApplyNotRetried(t *testing.T) {
	f := newFixture(t, nil)
	c, err := f.s.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{RetryDelay: time.Millisecond}}})
	wantOK(t, err, "client")
	defer c.Close()
	ct, _ := c.NewContainer(testDB, testColl)
	f.s.ResetCounts()
	f.s.InjectFault(Fault{Op: OpUpsertItem, Drop: DropAfterApply})
	_, err = ct.UpsertItem(testCtx(t), pkOf("i1"), item("a", "i1"), nil)
	if err == nil {
		t.Fatal("dropped upsert succeeded")
	}
	if n := f.s.Counts()[OpUpsertItem]; n != 1 {
		t.Fatalf("upsert requests: %d, want 1 (writes are not retried)", n)
	}
	f.read(t, "a", "i1")
}

func TestCloseCutsDelays(t *testing.T) {
	f := newFixture(t, nil)
	f.s.InjectFault(Fault{Op: OpReadItem, Delay: time.Hour})
	errc := make(chan error, 1)
	go func() {
		// The SDK retries a read whose connection broke, against a server
		// that is gone by then: bound it.
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		_, err := f.ct.ReadItem(ctx, pkOf("i1"), "a", nil)
		errc <- err
	}()
	for f.s.Counts()[OpReadItem] == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	f.s.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := <-errc; err == nil {
		t.Fatal("read during Close succeeded")
	}
}
