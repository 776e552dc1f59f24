package cosmostest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/testbackend"
)

// testBatch: transactional batches. A failed batch is HTTP 207, which
// azcosmos reports as Success=false with the failing operation's status and
// 424 for every other operation, and nothing it did is kept.
func testBatch(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	exec := func(t *testing.T, batch azcosmos.TransactionalBatch, content bool) azcosmos.TransactionalBatchResponse {
		t.Helper()
		r, err := c.ExecuteTransactionalBatch(ctx(t), batch, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: content})
		noErr(t, err, "execute batch")
		return r
	}
	statuses := func(r azcosmos.TransactionalBatchResponse) []int32 {
		out := make([]int32, len(r.OperationResults))
		for i, op := range r.OperationResults {
			out[i] = op.StatusCode
		}
		return out
	}
	wantStatuses := func(t *testing.T, r azcosmos.TransactionalBatchResponse, success bool, want ...int32) {
		t.Helper()
		got := statuses(r)
		if r.Success != success || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("batch: Success=%v statuses %v (HTTP %d), want Success=%v %v",
				r.Success, got, r.RawResponse.StatusCode, success, want)
		}
	}
	mustBeAbsent := func(t *testing.T, p string, ids ...string) {
		t.Helper()
		for _, id := range ids {
			_, err := c.ReadItem(ctx(t), pk(p), id, nil)
			wantStatus(t, err, sNotFound, "read "+id+" after failed batch")
		}
	}

	t.Run("success", func(t *testing.T) {
		e := create(t, c, doc{"id": "s-rep", "pk": "s", "v": 1})
		create(t, c, doc{"id": "s-del", "pk": "s"})
		batch := c.NewTransactionalBatch(pk("s"))
		batch.CreateItem(mustJSON(t, doc{"id": "s-new", "pk": "s", "v": 1}), nil)
		batch.ReplaceItem("s-rep", mustJSON(t, doc{"id": "s-rep", "pk": "s", "v": 2}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
		batch.DeleteItem("s-del", nil)
		batch.UpsertItem(mustJSON(t, doc{"id": "s-ups", "pk": "s", "v": 1}), nil)
		r := exec(t, batch, true)
		wantStatuses(t, r, true, sCreated, sOK, sNoContent, sCreated)
		if r.RawResponse.StatusCode != sOK {
			t.Fatalf("batch: HTTP %d, want 200", r.RawResponse.StatusCode)
		}
		for _, i := range []int{0, 1, 3} {
			op := r.OperationResults[i]
			if op.ETag == "" {
				t.Fatalf("op %d: no ETag", i)
			}
			body := mustDoc(t, op.ResourceBody)
			if body["_etag"] != string(op.ETag) {
				t.Fatalf("op %d: body _etag %v, ETag %q", i, body["_etag"], op.ETag)
			}
		}
		if got, etag := read(t, c, "s", "s-rep"); got["v"] != 2.0 || etag != r.OperationResults[1].ETag {
			t.Fatalf("replaced item: %v, ETag %q, want v=2 and ETag %q", got, etag, r.OperationResults[1].ETag)
		}
		mustBeAbsent(t, "s", "s-del")
		read(t, c, "s", "s-new")
		read(t, c, "s", "s-ups")
	})

	t.Run("etags-without-content", func(t *testing.T) {
		batch := c.NewTransactionalBatch(pk("e"))
		batch.CreateItem(mustJSON(t, doc{"id": "e1", "pk": "e"}), nil)
		batch.UpsertItem(mustJSON(t, doc{"id": "e2", "pk": "e"}), nil)
		r := exec(t, batch, false)
		wantStatuses(t, r, true, sCreated, sCreated)
		for i, op := range r.OperationResults {
			if op.ETag == "" {
				t.Fatalf("op %d: no ETag", i)
			}
		}
		if _, etag := read(t, c, "e", "e2"); etag != r.OperationResults[1].ETag {
			t.Fatalf("e2: ETag %q, batch said %q", etag, r.OperationResults[1].ETag)
		}
	})

	t.Run("read-and-patch", func(t *testing.T) {
		create(t, c, doc{"id": "rp", "pk": "rp", "n": 1, "mode": "Open"})
		var ops azcosmos.PatchOperations
		ops.SetCondition("FROM c WHERE c.mode = 'Open'")
		ops.AppendIncrement("/n", 41)
		batch := c.NewTransactionalBatch(pk("rp"))
		batch.PatchItem("rp", ops, nil)
		batch.ReadItem("rp", nil)
		r := exec(t, batch, false)
		wantStatuses(t, r, true, sOK, sOK)
		got := mustDoc(t, r.OperationResults[1].ResourceBody)
		if got["n"] != 42.0 || r.OperationResults[1].ETag != r.OperationResults[0].ETag {
			t.Fatalf("read after patch in batch: %v ETag %q, want n=42 and ETag %q", got, r.OperationResults[1].ETag, r.OperationResults[0].ETag)
		}
	})

	t.Run("sees-own-writes", func(t *testing.T) {
		batch := c.NewTransactionalBatch(pk("own"))
		batch.CreateItem(mustJSON(t, doc{"id": "own", "pk": "own", "v": 1}), nil)
		batch.ReadItem("own", nil)
		batch.ReplaceItem("own", mustJSON(t, doc{"id": "own", "pk": "own", "v": 2}), nil)
		batch.ReadItem("own", nil)
		batch.DeleteItem("own", nil)
		batch.CreateItem(mustJSON(t, doc{"id": "own", "pk": "own", "v": 3}), nil)
		r := exec(t, batch, false)
		wantStatuses(t, r, true, sCreated, sOK, sOK, sOK, sNoContent, sCreated)
		if v1, v2 := mustDoc(t, r.OperationResults[1].ResourceBody)["v"], mustDoc(t, r.OperationResults[3].ResourceBody)["v"]; v1 != 1.0 || v2 != 2.0 {
			t.Fatalf("reads inside the batch saw v=%v and v=%v, want 1 and 2", v1, v2)
		}
		if got, _ := read(t, c, "own", "own"); got["v"] != 3.0 {
			t.Fatalf("after batch: %v, want v=3", got)
		}
	})

	t.Run("rollback-on-conflict", func(t *testing.T) {
		create(t, c, doc{"id": "rb-dup", "pk": "rb", "v": "orig"})
		e := create(t, c, doc{"id": "rb-rep", "pk": "rb", "v": "orig"})
		batch := c.NewTransactionalBatch(pk("rb"))
		batch.CreateItem(mustJSON(t, doc{"id": "rb-a", "pk": "rb"}), nil)
		batch.ReplaceItem("rb-rep", mustJSON(t, doc{"id": "rb-rep", "pk": "rb", "v": "changed"}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
		batch.UpsertItem(mustJSON(t, doc{"id": "rb-b", "pk": "rb"}), nil)
		batch.CreateItem(mustJSON(t, doc{"id": "rb-dup", "pk": "rb"}), nil)
		batch.DeleteItem("rb-rep", nil)
		r := exec(t, batch, false)
		wantStatuses(t, r, false, sFailedDep, sFailedDep, sFailedDep, sConflict, sFailedDep)
		if r.RawResponse.StatusCode != 207 {
			t.Fatalf("failed batch: HTTP %d, want 207", r.RawResponse.StatusCode)
		}
		mustBeAbsent(t, "rb", "rb-a", "rb-b")
		if got, etag := read(t, c, "rb", "rb-rep"); got["v"] != "orig" || etag != e {
			t.Fatalf("rb-rep after rollback: %v ETag %q, want unchanged (ETag %q)", got, etag, e)
		}
	})

	t.Run("stale-if-match", func(t *testing.T) {
		e := create(t, c, doc{"id": "st", "pk": "st", "v": 1})
		_, err := c.ReplaceItem(ctx(t), pk("st"), "st", mustJSON(t, doc{"id": "st", "pk": "st", "v": 2}), nil)
		noErr(t, err, "replace")
		for name, add := range map[string]func(*azcosmos.TransactionalBatch){
			"replace": func(bt *azcosmos.TransactionalBatch) {
				bt.ReplaceItem("st", mustJSON(t, doc{"id": "st", "pk": "st", "v": 3}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
			},
			"upsert": func(bt *azcosmos.TransactionalBatch) {
				bt.UpsertItem(mustJSON(t, doc{"id": "st", "pk": "st", "v": 3}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
			},
			"delete": func(bt *azcosmos.TransactionalBatch) {
				bt.DeleteItem("st", &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
			},
			"patch": func(bt *azcosmos.TransactionalBatch) {
				var ops azcosmos.PatchOperations
				ops.AppendSet("/v", 3)
				bt.PatchItem("st", ops, &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
			},
		} {
			t.Run(name, func(t *testing.T) {
				batch := c.NewTransactionalBatch(pk("st"))
				batch.CreateItem(mustJSON(t, doc{"id": "st-" + name, "pk": "st"}), nil)
				add(&batch)
				wantStatuses(t, exec(t, batch, false), false, sFailedDep, sPrecond)
				mustBeAbsent(t, "st", "st-"+name)
				if got, _ := read(t, c, "st", "st"); got["v"] != 2.0 {
					t.Fatalf("st after failed batch: %v", got)
				}
			})
		}
	})

	t.Run("false-patch-condition", func(t *testing.T) {
		create(t, c, doc{"id": "fc", "pk": "fc", "owner": "A"})
		var ops azcosmos.PatchOperations
		ops.SetCondition("FROM c WHERE c.owner = 'B'")
		ops.AppendSet("/owner", "C")
		batch := c.NewTransactionalBatch(pk("fc"))
		batch.UpsertItem(mustJSON(t, doc{"id": "fc-new", "pk": "fc"}), nil)
		batch.PatchItem("fc", ops, nil)
		wantStatuses(t, exec(t, batch, false), false, sFailedDep, sPrecond)
		mustBeAbsent(t, "fc", "fc-new")
	})

	t.Run("missing-item", func(t *testing.T) {
		batch := c.NewTransactionalBatch(pk("mi"))
		batch.CreateItem(mustJSON(t, doc{"id": "mi-new", "pk": "mi"}), nil)
		batch.ReadItem("nope", nil)
		wantStatuses(t, exec(t, batch, false), false, sFailedDep, sNotFound)
		batch = c.NewTransactionalBatch(pk("mi"))
		batch.CreateItem(mustJSON(t, doc{"id": "mi-new", "pk": "mi"}), nil)
		batch.ReplaceItem("nope", mustJSON(t, doc{"id": "nope", "pk": "mi"}), nil)
		wantStatuses(t, exec(t, batch, false), false, sFailedDep, sNotFound)
		mustBeAbsent(t, "mi", "mi-new")
	})

	t.Run("other-partition-item", func(t *testing.T) {
		// An item whose partition key differs from the batch's is rejected,
		// either as a whole-request 400 or as a failed operation.
		batch := c.NewTransactionalBatch(pk("op"))
		batch.CreateItem(mustJSON(t, doc{"id": "op-1", "pk": "op"}), nil)
		batch.CreateItem(mustJSON(t, doc{"id": "op-2", "pk": "elsewhere"}), nil)
		r, err := c.ExecuteTransactionalBatch(ctx(t), batch, nil)
		switch {
		case err != nil:
			wantStatus(t, err, sBad, "batch with an item of another partition")
		default:
			wantStatuses(t, r, false, sFailedDep, sBad)
		}
		mustBeAbsent(t, "op", "op-1")
		mustBeAbsent(t, "elsewhere", "op-2")
	})

	t.Run("limit-100-operations", func(t *testing.T) {
		ok := c.NewTransactionalBatch(pk("l100"))
		for i := range 100 {
			ok.UpsertItem(mustJSON(t, doc{"id": fmt.Sprint("l", i), "pk": "l100"}), nil)
		}
		wantStatuses(t, exec(t, ok, false), true, repeat(sCreated, 100)...)

		tooMany := c.NewTransactionalBatch(pk("l101"))
		for i := range 101 {
			tooMany.CreateItem(mustJSON(t, doc{"id": fmt.Sprint("l", i), "pk": "l101"}), nil)
		}
		_, err := c.ExecuteTransactionalBatch(ctx(t), tooMany, nil)
		wantStatus(t, err, sBad, "batch with 101 operations")
		mustBeAbsent(t, "l101", "l0", "l100")
	})

	t.Run("limit-2MB", func(t *testing.T) {
		batch := c.NewTransactionalBatch(pk("big"))
		for i := range 3 {
			batch.UpsertItem(mustJSON(t, doc{"id": fmt.Sprint("big", i), "pk": "big", "blob": strings.Repeat("b", 800*1024)}), nil)
		}
		_, err := c.ExecuteTransactionalBatch(ctx(t), batch, nil)
		wantStatus(t, err, sTooLarge, "batch over 2 MB")
		mustBeAbsent(t, "big", "big0")
	})
}

// repeat returns n copies of v.
func repeat(v int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = v
	}
	return out
}
