package cosmostest_test

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/testbackend"
)

// testResources: databases and containers, with partition key and indexing
// policy stored and returned as given.
func testResources(t *testing.T, b testbackend.Backend) {
	t.Run("database", func(t *testing.T) {
		db := b.NewDatabase(t)
		r, err := db.Read(ctx(t), nil)
		noErr(t, err, "read database")
		if r.DatabaseProperties == nil || r.DatabaseProperties.ID != db.ID() {
			t.Fatalf("read database: got %+v, want id %s", r.DatabaseProperties, db.ID())
		}
		_, err = b.Client.CreateDatabase(ctx(t), azcosmos.DatabaseProperties{ID: db.ID()}, nil)
		wantStatus(t, err, sConflict, "create existing database")
	})

	t.Run("database-missing", func(t *testing.T) {
		db, err := b.Client.NewDatabase(testbackend.NewDatabaseName(t))
		noErr(t, err, "database client")
		_, err = db.Read(ctx(t), nil)
		wantStatus(t, err, sNotFound, "read missing database")
		_, err = db.Delete(ctx(t), nil)
		wantStatus(t, err, sNotFound, "delete missing database")
	})

	t.Run("database-delete", func(t *testing.T) {
		db := b.NewDatabase(t)
		_, err := db.Delete(ctx(t), nil)
		noErr(t, err, "delete database")
		_, err = db.Read(ctx(t), nil)
		wantStatus(t, err, sNotFound, "read deleted database")
	})

	t.Run("container-properties", func(t *testing.T) {
		db := b.NewDatabase(t)
		props := azcosmos.ContainerProperties{
			ID:                     "c",
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/instanceId"}},
			IndexingPolicy: &azcosmos.IndexingPolicy{
				Automatic:     true,
				IndexingMode:  azcosmos.IndexingModeConsistent,
				IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
				CompositeIndexes: [][]azcosmos.CompositeIndex{
					{{Path: "/kind", Order: azcosmos.CompositeIndexAscending}, {Path: "/seq", Order: azcosmos.CompositeIndexAscending}},
					{{Path: "/kind", Order: azcosmos.CompositeIndexAscending}, {Path: "/seq", Order: azcosmos.CompositeIndexDescending}},
				},
			},
		}
		_, err := db.CreateContainer(ctx(t), props, nil)
		noErr(t, err, "create container")
		_, err = db.CreateContainer(ctx(t), props, nil)
		wantStatus(t, err, sConflict, "create existing container")

		c, err := db.NewContainer("c")
		noErr(t, err, "container client")
		r, err := c.Read(ctx(t), nil)
		noErr(t, err, "read container")
		got := r.ContainerProperties
		if got == nil || got.ID != "c" {
			t.Fatalf("read container: got %+v", got)
		}
		wantJSON(t, got.PartitionKeyDefinition.Paths, []string{"/instanceId"}, "partition key paths")
		if got.IndexingPolicy == nil {
			t.Fatal("read container: no indexing policy")
		}
		wantJSON(t, got.IndexingPolicy.CompositeIndexes, props.IndexingPolicy.CompositeIndexes, "composite indexes")
	})

	t.Run("container-missing", func(t *testing.T) {
		db := b.NewDatabase(t)
		c, err := db.NewContainer("nope")
		noErr(t, err, "container client")
		_, err = c.Read(ctx(t), nil)
		wantStatus(t, err, sNotFound, "read missing container")
		_, err = c.ReadItem(ctx(t), pk("p"), "x", nil)
		wantStatus(t, err, sNotFound, "read item of missing container")
	})
}

// testItems: point operations, ETags, If-Match, partition identity.
func testItems(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	t.Run("create-read", func(t *testing.T) {
		r, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "cr", "pk": "p", "v": 1.5, "s": "Mixed"}), nil)
		wantStatus(t, err, 0, "create")
		if r.RawResponse.StatusCode != sCreated || r.ETag == "" {
			t.Fatalf("create: status %d etag %q, want 201 and an ETag", r.RawResponse.StatusCode, r.ETag)
		}
		got, etag := read(t, c, "p", "cr")
		if etag != r.ETag || got["_etag"] != string(r.ETag) {
			t.Fatalf("read: ETag header %q, _etag %v, want both %q", etag, got["_etag"], r.ETag)
		}
		if got["v"] != 1.5 || got["s"] != "Mixed" {
			t.Fatalf("read: got %v", got)
		}
		for _, sys := range []string{"_rid", "_ts", "_self"} {
			if _, ok := got[sys]; !ok {
				t.Errorf("read: system property %s missing", sys)
			}
		}
		// _ts is in seconds since the epoch.
		if ts, _ := got["_ts"].(float64); math.Abs(ts-float64(time.Now().Unix())) > 600 {
			t.Errorf("read: _ts %v is not within 10 minutes of now (%d)", got["_ts"], time.Now().Unix())
		}
	})

	t.Run("ids-case-sensitive", func(t *testing.T) {
		create(t, c, doc{"id": "Case", "pk": "p", "v": "upper"})
		create(t, c, doc{"id": "case", "pk": "p", "v": "lower"})
		if got, _ := read(t, c, "p", "Case"); got["v"] != "upper" {
			t.Fatalf("read Case: got %v", got)
		}
	})

	t.Run("etag-changes-on-identical-write", func(t *testing.T) {
		e1 := create(t, c, doc{"id": "same-body", "pk": "p", "v": 1})
		r, err := c.ReplaceItem(ctx(t), pk("p"), "same-body", mustJSON(t, doc{"id": "same-body", "pk": "p", "v": 1}), nil)
		noErr(t, err, "replace with an identical body")
		if r.ETag == "" || r.ETag == e1 {
			t.Fatalf("replace with identical body: ETag %q, old %q; want a new ETag", r.ETag, e1)
		}
	})

	t.Run("write-content", func(t *testing.T) {
		// Without EnableContentResponseOnWrite the service returns no body.
		r, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "wc1", "pk": "p"}), nil)
		noErr(t, err, "create minimal")
		if len(bytes.TrimSpace(r.Value)) != 0 {
			t.Fatalf("create without content response: got body %q, want none", truncate(r.Value))
		}
		r, err = c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "wc2", "pk": "p"}), withContent())
		noErr(t, err, "create with content")
		if got := mustDoc(t, r.Value); got["id"] != "wc2" || got["_etag"] != string(r.ETag) {
			t.Fatalf("create with content response: got %v (ETag %q)", got, r.ETag)
		}
	})

	t.Run("duplicate-create", func(t *testing.T) {
		create(t, c, doc{"id": "dup", "pk": "p"})
		_, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "dup", "pk": "p"}), nil)
		wantStatus(t, err, sConflict, "duplicate create")
	})

	t.Run("missing", func(t *testing.T) {
		_, err := c.ReadItem(ctx(t), pk("p"), "nope", nil)
		wantStatus(t, err, sNotFound, "read missing")
		_, err = c.ReplaceItem(ctx(t), pk("p"), "nope", mustJSON(t, doc{"id": "nope", "pk": "p"}), nil)
		wantStatus(t, err, sNotFound, "replace missing")
		_, err = c.DeleteItem(ctx(t), pk("p"), "nope", nil)
		wantStatus(t, err, sNotFound, "delete missing")
	})

	t.Run("replace-if-match", func(t *testing.T) {
		e1 := create(t, c, doc{"id": "rim", "pk": "p", "v": 1})
		r, err := c.ReplaceItem(ctx(t), pk("p"), "rim", mustJSON(t, doc{"id": "rim", "pk": "p", "v": 2}), ifMatch(e1))
		noErr(t, err, "replace with current ETag")
		if r.RawResponse.StatusCode != sOK || r.ETag == "" || r.ETag == e1 {
			t.Fatalf("replace: status %d ETag %q (old %q), want 200 and a new ETag", r.RawResponse.StatusCode, r.ETag, e1)
		}
		_, err = c.ReplaceItem(ctx(t), pk("p"), "rim", mustJSON(t, doc{"id": "rim", "pk": "p", "v": 3}), ifMatch(e1))
		wantStatus(t, err, sPrecond, "replace with stale ETag")
		if got, _ := read(t, c, "p", "rim"); got["v"] != 2.0 {
			t.Fatalf("after failed replace: v=%v, want 2", got["v"])
		}
	})

	t.Run("upsert", func(t *testing.T) {
		r, err := c.UpsertItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "ups", "pk": "p", "v": 1}), nil)
		noErr(t, err, "upsert new")
		if r.RawResponse.StatusCode != sCreated || r.ETag == "" {
			t.Fatalf("upsert new: status %d ETag %q, want 201 and an ETag", r.RawResponse.StatusCode, r.ETag)
		}
		e1 := r.ETag
		r, err = c.UpsertItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "ups", "pk": "p", "v": 2}), ifMatch(e1))
		noErr(t, err, "upsert existing with current ETag")
		if r.RawResponse.StatusCode != sOK || r.ETag == "" || r.ETag == e1 {
			t.Fatalf("upsert existing: status %d ETag %q, want 200 and a new ETag", r.RawResponse.StatusCode, r.ETag)
		}
		_, err = c.UpsertItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "ups", "pk": "p", "v": 3}), ifMatch(e1))
		wantStatus(t, err, sPrecond, "upsert with stale ETag")
		if got, _ := read(t, c, "p", "ups"); got["v"] != 2.0 {
			t.Fatalf("after failed upsert: v=%v, want 2", got["v"])
		}
	})

	t.Run("delete-if-match", func(t *testing.T) {
		e1 := create(t, c, doc{"id": "dim", "pk": "p"})
		r, err := c.ReplaceItem(ctx(t), pk("p"), "dim", mustJSON(t, doc{"id": "dim", "pk": "p", "v": 2}), nil)
		noErr(t, err, "replace")
		_, err = c.DeleteItem(ctx(t), pk("p"), "dim", ifMatch(e1))
		wantStatus(t, err, sPrecond, "delete with stale ETag")
		d, err := c.DeleteItem(ctx(t), pk("p"), "dim", ifMatch(r.ETag))
		noErr(t, err, "delete with current ETag")
		if d.RawResponse.StatusCode != sNoContent {
			t.Fatalf("delete: status %d, want 204", d.RawResponse.StatusCode)
		}
		_, err = c.ReadItem(ctx(t), pk("p"), "dim", nil)
		wantStatus(t, err, sNotFound, "read deleted")
	})

	t.Run("same-id-two-partitions", func(t *testing.T) {
		create(t, c, doc{"id": "twin", "pk": "a", "who": "a"})
		create(t, c, doc{"id": "twin", "pk": "b", "who": "b"})
		if got, _ := read(t, c, "a", "twin"); got["who"] != "a" {
			t.Fatalf("read twin in a: got %v", got)
		}
		if got, _ := read(t, c, "b", "twin"); got["who"] != "b" {
			t.Fatalf("read twin in b: got %v", got)
		}
		_, err := c.DeleteItem(ctx(t), pk("a"), "twin", nil)
		noErr(t, err, "delete twin in a")
		if got, _ := read(t, c, "b", "twin"); got["who"] != "b" {
			t.Fatalf("read twin in b after deleting a's: got %v", got)
		}
	})

	t.Run("wrong-partition", func(t *testing.T) {
		create(t, c, doc{"id": "wp", "pk": "right"})
		_, err := c.ReadItem(ctx(t), pk("wrong"), "wp", nil)
		wantStatus(t, err, sNotFound, "read with wrong partition key")
		_, err = c.ReplaceItem(ctx(t), pk("wrong"), "wp", mustJSON(t, doc{"id": "wp", "pk": "wrong"}), nil)
		wantStatus(t, err, sNotFound, "replace with wrong partition key")
		_, err = c.DeleteItem(ctx(t), pk("wrong"), "wp", nil)
		wantStatus(t, err, sNotFound, "delete with wrong partition key")
	})

	t.Run("partition-key-mismatch", func(t *testing.T) {
		_, err := c.CreateItem(ctx(t), pk("header"), mustJSON(t, doc{"id": "pkm", "pk": "body"}), nil)
		wantStatus(t, err, sBad, "create with header pk != body pk")
		_, err = c.UpsertItem(ctx(t), pk("header"), mustJSON(t, doc{"id": "pkm", "pk": "body"}), nil)
		wantStatus(t, err, sBad, "upsert with header pk != body pk")
		_, err = c.CreateItem(ctx(t), pk("header"), mustJSON(t, doc{"id": "pkm"}), nil)
		wantStatus(t, err, sBad, "create without the partition key property")
		create(t, c, doc{"id": "pkm", "pk": "body"})
		_, err = c.ReplaceItem(ctx(t), pk("body"), "pkm", mustJSON(t, doc{"id": "pkm", "pk": "other"}), nil)
		wantStatus(t, err, sBad, "replace changing the partition key")
	})

	t.Run("session-token", func(t *testing.T) {
		r, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": "st", "pk": "p"}), nil)
		noErr(t, err, "create")
		if r.SessionToken == nil || *r.SessionToken == "" {
			t.Fatal("create: no session token")
		}
		r, err = c.ReadItem(ctx(t), pk("p"), "st", nil)
		noErr(t, err, "read")
		if r.SessionToken == nil || *r.SessionToken == "" {
			t.Fatal("read: no session token")
		}
		batch := c.NewTransactionalBatch(pk("p"))
		batch.UpsertItem(mustJSON(t, doc{"id": "st", "pk": "p", "v": 1}), nil)
		br, err := c.ExecuteTransactionalBatch(ctx(t), batch, nil)
		noErr(t, err, "batch")
		if br.SessionToken == "" {
			t.Fatal("batch: no session token")
		}
	})

	t.Run("missing-id", func(t *testing.T) {
		_, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"pk": "p"}), nil)
		wantStatus(t, err, sBad, "create without id")
	})
}

// testIDs: which item ids the service accepts.
func testIDs(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	// The gateway's id rules, as the .NET SDK's id-encoding tests against
	// the service record them (Azure/azure-cosmos-dotnet-v3,
	// CosmosItemIdEncodingTests; issues #2606, #4129): an id with '\' is
	// refused at create (400); ids with '/', '#' or a trailing space are
	// ACCEPTED at create and then unusable by id (404 for '/', 401 for '#'
	// and a trailing space) on read, replace, patch and delete; '?' works.
	// Queries and batches carry ids in the body. The accept-then-fail cases
	// are the dangerous ones: a test that only creates passes.
	t.Run("restricted-backslash", func(t *testing.T) {
		_, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": `a\b`, "pk": "p"}), nil)
		wantStatus(t, err, sBad, `create with id a\b`)
	})
	for _, tc := range []struct {
		name, id string
		byID     int // status of every point operation by id
	}{
		{"slash", "a/b", http.StatusNotFound},
		{"hash", "a#b", http.StatusUnauthorized},
		{"trailing-space", "ab ", http.StatusUnauthorized},
		{"question", "a?b", 0},
	} {
		t.Run("restricted-"+tc.name, func(t *testing.T) {
			create(t, c, doc{"id": tc.id, "pk": "p", "n": 1})
			_, err := c.ReadItem(ctx(t), pk("p"), tc.id, nil)
			wantStatus(t, err, tc.byID, "read "+tc.id)
			_, err = c.ReplaceItem(ctx(t), pk("p"), tc.id, mustJSON(t, doc{"id": tc.id, "pk": "p", "n": 2}), nil)
			wantStatus(t, err, tc.byID, "replace "+tc.id)
			var ops azcosmos.PatchOperations
			ops.AppendSet("/n", 3)
			_, err = c.PatchItem(ctx(t), pk("p"), tc.id, ops, nil)
			wantStatus(t, err, tc.byID, "patch "+tc.id)
			// A query still finds it, and a batch (ids in the body) can
			// delete it.
			pager := c.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.id = @id", pk("p"),
				&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: tc.id}}})
			page, err := pager.NextPage(ctx(t))
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("query for id %q: %d items, %v", tc.id, len(page.Items), err)
			}
			_, err = c.DeleteItem(ctx(t), pk("p"), tc.id, nil)
			wantStatus(t, err, tc.byID, "delete "+tc.id)
			if tc.byID == 0 {
				return
			}
			b := c.NewTransactionalBatch(pk("p"))
			b.DeleteItem(tc.id, nil)
			resp, err := c.ExecuteTransactionalBatch(ctx(t), b, nil)
			if err != nil || !resp.Success {
				t.Fatalf("batch delete of id %q: success %v, %v", tc.id, resp.Success, err)
			}
		})
	}

	// Item ids may be up to 1,023 bytes (Cosmos DB service quotas, per-item
	// limits); 255 is the limit for database and container names only.
	t.Run("length-1023", func(t *testing.T) {
		id := strings.Repeat("x", 1023)
		create(t, c, doc{"id": id, "pk": "p"})
		if got, _ := read(t, c, "p", id); got["id"] != id {
			t.Fatalf("read 1023-byte id: got id of %d bytes", len(got["id"].(string)))
		}
	})
	t.Run("length-1024", func(t *testing.T) {
		_, err := c.CreateItem(ctx(t), pk("p"), mustJSON(t, doc{"id": strings.Repeat("y", 1024), "pk": "p"}), nil)
		wantStatus(t, err, sBad, "create with 1024-byte id")
	})
	t.Run("unicode", func(t *testing.T) {
		id := "ünïcødé-ИД-标识-🙂 space"
		create(t, c, doc{"id": id, "pk": "p"})
		if got, _ := read(t, c, "p", id); got["id"] != id {
			t.Fatalf("read unicode id: got %v", got["id"])
		}
	})
}

// testLimits: item size.
func testLimits(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	t.Run("item-under-2MB", func(t *testing.T) {
		create(t, c, doc{"id": "big-ok", "pk": "p", "blob": strings.Repeat("a", 1800*1024)})
	})
	t.Run("item-over-2MB", func(t *testing.T) {
		big := mustJSON(t, doc{"id": "big", "pk": "p", "blob": strings.Repeat("a", 2*1024*1024+1024)})
		_, err := c.CreateItem(ctx(t), pk("p"), big, nil)
		wantStatus(t, err, sTooLarge, "create item over 2 MB")
		_, err = c.UpsertItem(ctx(t), pk("p"), big, nil)
		wantStatus(t, err, sTooLarge, "upsert item over 2 MB")
		create(t, c, doc{"id": "big", "pk": "p"})
		_, err = c.ReplaceItem(ctx(t), pk("p"), "big", big, nil)
		wantStatus(t, err, sTooLarge, "replace with item over 2 MB")
	})
}
