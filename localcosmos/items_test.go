package localcosmos

import (
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestItemRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)

	r := f.create(t, "a", "i1", "n", 1)
	if r.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("create status %d", r.RawResponse.StatusCode)
	}
	if len(r.Value) != 0 {
		t.Fatalf("minimal create returned a body: %s", r.Value)
	}
	if r.ETag == "" || !strings.HasPrefix(string(r.ETag), `"`) || r.RequestCharge <= 0 || r.ActivityID == "" {
		t.Fatalf("create metadata: etag %q charge %v activity %q", r.ETag, r.RequestCharge, r.ActivityID)
	}
	if r.SessionToken == nil || !strings.HasPrefix(*r.SessionToken, "0:-1#") {
		t.Fatalf("session token %v", r.SessionToken)
	}

	got := f.read(t, "a", "i1")
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		if _, ok := got[k]; !ok {
			t.Errorf("read: no %s in %v", k, got)
		}
	}
	if got["_etag"] != string(r.ETag) || got["n"] != float64(1) {
		t.Fatalf("read: %v (etag %s)", got, r.ETag)
	}

	// Duplicate create, other partition, wrong partition.
	_, err := f.ct.CreateItem(ctx, pkOf("i1"), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusConflict, "duplicate create")
	f.create(t, "a", "i2")
	_, err = f.ct.ReadItem(ctx, pkOf("i3"), "a", nil)
	wantStatus(t, err, http.StatusNotFound, "read in other partition")

	// Replace with the current and a stale ETag.
	etag := r.ETag
	rr, err := f.ct.ReplaceItem(ctx, pkOf("i1"), "a", item("a", "i1", "n", 2), &azcosmos.ItemOptions{IfMatchEtag: &etag})
	wantOK(t, err, "replace")
	if rr.ETag == etag {
		t.Fatal("replace kept the ETag")
	}
	_, err = f.ct.ReplaceItem(ctx, pkOf("i1"), "a", item("a", "i1", "n", 3), &azcosmos.ItemOptions{IfMatchEtag: &etag})
	wantStatus(t, err, http.StatusPreconditionFailed, "stale replace")
	if f.read(t, "a", "i1")["n"] != float64(2) {
		t.Fatal("stale replace changed the document")
	}
	_, err = f.ct.ReplaceItem(ctx, pkOf("i1"), "zz", item("zz", "i1"), nil)
	wantStatus(t, err, http.StatusNotFound, "replace missing")

	// Upsert: 201 new, 200 existing, 412 stale; If-Match on a missing item creates.
	ur, err := f.ct.UpsertItem(ctx, pkOf("i1"), item("u", "i1"), nil)
	wantOK(t, err, "upsert new")
	if ur.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("upsert new: %d", ur.RawResponse.StatusCode)
	}
	ur2, err := f.ct.UpsertItem(ctx, pkOf("i1"), item("u", "i1", "x", true), nil)
	wantOK(t, err, "upsert existing")
	if ur2.RawResponse.StatusCode != http.StatusOK {
		t.Fatalf("upsert existing: %d", ur2.RawResponse.StatusCode)
	}
	_, err = f.ct.UpsertItem(ctx, pkOf("i1"), item("u", "i1"), &azcosmos.ItemOptions{IfMatchEtag: &ur.ETag})
	wantStatus(t, err, http.StatusPreconditionFailed, "stale upsert")
	stale := azcore.ETag(`"nope"`)
	ur3, err := f.ct.UpsertItem(ctx, pkOf("i1"), item("u2", "i1"), &azcosmos.ItemOptions{IfMatchEtag: &stale})
	wantOK(t, err, "upsert with If-Match on a missing item")
	if ur3.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("upsert with If-Match on a missing item: %d", ur3.RawResponse.StatusCode)
	}

	// If-Match on create is ignored.
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), item("c", "i1"), &azcosmos.ItemOptions{IfMatchEtag: &stale})
	wantOK(t, err, "create with If-Match")

	// Content on write.
	cr, err := f.ct.CreateItem(ctx, pkOf("i1"), item("full", "i1"), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	wantOK(t, err, "create with content")
	if decode(t, cr.Value)["_etag"] != string(cr.ETag) {
		t.Fatalf("content on write: %s", cr.Value)
	}

	// Delete: stale 412, 204, then 404.
	_, err = f.ct.DeleteItem(ctx, pkOf("i1"), "a", &azcosmos.ItemOptions{IfMatchEtag: &etag})
	wantStatus(t, err, http.StatusPreconditionFailed, "stale delete")
	dr, err := f.ct.DeleteItem(ctx, pkOf("i1"), "a", nil)
	wantOK(t, err, "delete")
	if dr.RawResponse.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", dr.RawResponse.StatusCode)
	}
	_, err = f.ct.DeleteItem(ctx, pkOf("i1"), "a", nil)
	wantStatus(t, err, http.StatusNotFound, "delete again")
	_, err = f.ct.ReadItem(ctx, pkOf("i1"), "a", nil)
	wantStatus(t, err, http.StatusNotFound, "read deleted")
	f.read(t, "a", "i2") // the other partition's document is untouched
}
