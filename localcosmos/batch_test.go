package localcosmos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestBatchSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	cr := f.create(t, "r", "i1", "n", 1)
	f.create(t, "d", "i1")
	f.create(t, "p", "i1", "n", 1)

	b := f.ct.NewTransactionalBatch(pkOf("i1"))
	b.CreateItem(item("c", "i1"), nil)
	b.ReplaceItem("r", item("r", "i1", "n", 2), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &cr.ETag})
	b.DeleteItem("d", nil)
	b.UpsertItem(item("u", "i1"), nil)
	var p azcosmos.PatchOperations
	p.AppendIncrement("/n", 5)
	b.PatchItem("p", p, nil)
	r, err := f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	wantOK(t, err, "batch")
	if !r.Success || r.RawResponse.StatusCode != http.StatusOK {
		t.Fatalf("batch: success %v status %d", r.Success, r.RawResponse.StatusCode)
	}
	want := []int32{201, 200, 204, 201, 200}
	for i, res := range r.OperationResults {
		if res.StatusCode != want[i] || res.RequestCharge <= 0 {
			t.Errorf("op %d: %+v, want status %d", i, res, want[i])
		}
		if res.ResourceBody != nil {
			t.Errorf("op %d: body %s without content response", i, res.ResourceBody)
		}
		if i != 2 && res.ETag == "" {
			t.Errorf("op %d: no ETag", i)
		}
	}
	if r.SessionToken == "" || r.RequestCharge <= 0 {
		t.Fatalf("batch response: session %q charge %v", r.SessionToken, r.RequestCharge)
	}
	if got := f.read(t, "p", "i1"); got["n"] != float64(6) || got["_etag"] != string(r.OperationResults[4].ETag) {
		t.Fatalf("patched in batch: %v", got)
	}

	// A read forces content (the SDK sets it), and content on write returns bodies.
	b = f.ct.NewTransactionalBatch(pkOf("i1"))
	b.ReadItem("r", nil)
	b.UpsertItem(item("u", "i1", "v", 2), nil)
	r, err = f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	wantOK(t, err, "batch with read")
	if got := decode(t, r.OperationResults[0].ResourceBody); got["n"] != float64(2) {
		t.Fatalf("read in batch: %v", got)
	}
	if got := decode(t, r.OperationResults[1].ResourceBody); got["v"] != float64(2) || r.OperationResults[1].StatusCode != 200 {
		t.Fatalf("upsert in batch with content: %+v", r.OperationResults[1])
	}
}

func TestBatchFailureRollsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	f.create(t, "dup", "i1", "n", 1)
	stale := azcore.ETag(`"stale"`)
	cases := []struct {
		name   string
		build  func(b *azcosmos.TransactionalBatch)
		failAt int
		status int32
	}{
		{"conflict", func(b *azcosmos.TransactionalBatch) {
			b.CreateItem(item("new1", "i1"), nil)
			b.UpsertItem(item("dup", "i1", "n", 9), nil)
			b.CreateItem(item("dup", "i1"), nil)
		}, 2, 409},
		{"precondition", func(b *azcosmos.TransactionalBatch) {
			b.DeleteItem("dup", nil)
			b.CreateItem(item("dup", "i1", "n", 9), nil)
			b.ReplaceItem("dup", item("dup", "i1", "n", 10), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
		}, 2, 412},
		{"not-found", func(b *azcosmos.TransactionalBatch) {
			b.CreateItem(item("new1", "i1"), nil)
			b.ReadItem("missing", nil)
			b.CreateItem(item("new2", "i1"), nil)
		}, 1, 404},
		{"pk-mismatch", func(b *azcosmos.TransactionalBatch) {
			b.CreateItem(item("new1", "i1"), nil)
			b.CreateItem(item("new2", "other"), nil)
		}, 1, 400},
		{"patch-after-delete", func(b *azcosmos.TransactionalBatch) {
			var p azcosmos.PatchOperations
			p.AppendReplace("/absent", 1)
			b.DeleteItem("dup", nil)
			b.PatchItem("dup", p, nil)
		}, 1, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := f.s.Documents(testDB, testColl)
			b := f.ct.NewTransactionalBatch(pkOf("i1"))
			tc.build(&b)
			r, err := f.ct.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
			wantOK(t, err, "batch")
			if r.Success || r.RawResponse.StatusCode != http.StatusMultiStatus {
				t.Fatalf("success %v status %d", r.Success, r.RawResponse.StatusCode)
			}
			for i, res := range r.OperationResults {
				want := int32(http.StatusFailedDependency)
				if i == tc.failAt {
					want = tc.status
				}
				if res.StatusCode != want {
					t.Errorf("op %d: status %d, want %d", i, res.StatusCode, want)
				}
			}
			after, _ := f.s.Documents(testDB, testColl)
			if a, b := string(marshalJSON(before)), string(marshalJSON(after)); a != b {
				t.Fatalf("failed batch changed the container:\nbefore %s\nafter  %s", a, b)
			}
		})
	}
}

func TestBatchLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)

	b := f.ct.NewTransactionalBatch(pkOf("i1"))
	for i := 0; i < 100; i++ {
		b.CreateItem(item(fmt.Sprint("x", i), "i1"), nil)
	}
	r, err := f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	wantOK(t, err, "100 operations")
	if !r.Success || len(r.OperationResults) != 100 {
		t.Fatalf("100 operations: success %v, %d results", r.Success, len(r.OperationResults))
	}

	b = f.ct.NewTransactionalBatch(pkOf("i1"))
	for i := 0; i < 101; i++ {
		b.CreateItem(item(fmt.Sprint("y", i), "i1"), nil)
	}
	_, err = f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	wantStatus(t, err, http.StatusBadRequest, "101 operations")
	if !strings.Contains(err.Error(), msgBatchTooMany) {
		t.Fatalf("101 operations: %v", err)
	}

	// Over 2 MB in total, each item well under the item limit.
	b = f.ct.NewTransactionalBatch(pkOf("i1"))
	for i := 0; i < 3; i++ {
		b.CreateItem(item(fmt.Sprint("big", i), "i1", "blob", strings.Repeat("z", 800*1024)), nil)
	}
	_, err = f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	wantStatus(t, err, http.StatusRequestEntityTooLarge, "batch over 2 MB")
	if docs, _ := f.s.Documents(testDB, testColl); len(docs) != 100 {
		t.Fatalf("after refused batches: %d documents, want 100", len(docs))
	}
}

func TestBatchRawRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	hdr := func(pk string) map[string]string {
		h := map[string]string{"x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True", "x-ms-cosmos-batch-ordered": "True"}
		if pk != "" {
			h["x-ms-documentdb-partitionkey"] = pk
		}
		return h
	}
	// The SDK writes ids unescaped: a quote in an id breaks the JSON.
	st, _, body := do(t, signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`[{"operationType":"Read","id":"a"b"}]`), hdr(`["i1"]`)))
	if st != http.StatusBadRequest || body["code"] != "BadRequest" {
		t.Fatalf("invalid JSON: %d %v", st, body)
	}
	st, _, _ = do(t, signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`[{"operationType":"Create","resourceBody":{"id":"a","instanceId":"i1"}}]`), hdr("")))
	if st != http.StatusBadRequest {
		t.Fatalf("batch without partition key: %d", st)
	}
	st, _, _ = do(t, signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`[{"operationType":"Explode","id":"a"}]`), hdr(`["i1"]`)))
	if st != http.StatusBadRequest {
		t.Fatalf("unknown operation: %d", st)
	}
	st, _, _ = do(t, signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`[]`), hdr(`["i1"]`)))
	if st != http.StatusBadRequest {
		t.Fatalf("empty batch: %d", st)
	}
	// The failing operation carries its substatus.
	req := signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`[{"operationType":"Create","resourceBody":{"id":"a","instanceId":"i2"}}]`), hdr(`["i1"]`))
	resp, err := http.DefaultClient.Do(req)
	wantOK(t, err, "pk mismatch batch")
	defer resp.Body.Close()
	var results []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&results); err != nil || resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("pk mismatch batch: %d %v", resp.StatusCode, err)
	}
	if results[0]["statusCode"] != float64(400) || results[0]["subStatusCode"] != float64(1001) {
		t.Fatalf("pk mismatch result: %v", results[0])
	}
}
