package cosmostest_test

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/testbackend"
)

// testPatch: partial document update, its preconditions and its conditions.
func testPatch(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	t.Run("operations", func(t *testing.T) {
		create(t, c, doc{"id": "ops", "pk": "p", "n": 1, "tags": []string{"a"}, "obj": doc{"x": 1}, "tmp": "t"})
		var ops azcosmos.PatchOperations
		ops.AppendSet("/status", "done")
		ops.AppendSet("/obj/y", 2)
		ops.AppendAdd("/tags/-", "b")
		ops.AppendAdd("/tags/0", "first")
		ops.AppendReplace("/n", 5)
		ops.AppendIncrement("/n", 2)
		ops.AppendIncrement("/counter", 3)
		ops.AppendRemove("/tmp")
		r, err := c.PatchItem(ctx(t), pk("p"), "ops", ops, withContent())
		noErr(t, err, "patch")
		if r.RawResponse.StatusCode != sOK || r.ETag == "" {
			t.Fatalf("patch: status %d ETag %q, want 200 and an ETag", r.RawResponse.StatusCode, r.ETag)
		}
		got, etag := read(t, c, "p", "ops")
		if etag != r.ETag {
			t.Fatalf("patch returned ETag %q, read has %q", r.ETag, etag)
		}
		delete(got, "_rid")
		delete(got, "_self")
		delete(got, "_etag")
		delete(got, "_ts")
		delete(got, "_attachments")
		wantJSON(t, got, doc{
			"counter": 3, "id": "ops", "n": 7, "obj": doc{"x": 1, "y": 2}, "pk": "p",
			"status": "done", "tags": []string{"first", "a", "b"},
		}, "patched document")
	})

	t.Run("invalid-paths", func(t *testing.T) {
		create(t, c, doc{"id": "inv", "pk": "p", "n": 1})
		for name, ops := range map[string]func(*azcosmos.PatchOperations){
			"replace-missing": func(o *azcosmos.PatchOperations) { o.AppendReplace("/nope", 1) },
			"remove-missing":  func(o *azcosmos.PatchOperations) { o.AppendRemove("/nope") },
			"set-deep":        func(o *azcosmos.PatchOperations) { o.AppendSet("/a/b/c", 1) },
			"incr-string":     func(o *azcosmos.PatchOperations) { o.AppendSet("/s", "x"); o.AppendIncrement("/s", 1) },
		} {
			var p azcosmos.PatchOperations
			ops(&p)
			_, err := c.PatchItem(ctx(t), pk("p"), "inv", p, nil)
			wantStatus(t, err, sBad, "patch "+name)
		}
		if got, _ := read(t, c, "p", "inv"); got["n"] != 1.0 || got["s"] != nil {
			t.Fatalf("failed patches changed the document: %v", got)
		}
	})

	t.Run("too-many-operations", func(t *testing.T) {
		create(t, c, doc{"id": "many", "pk": "p"})
		var ops azcosmos.PatchOperations
		for i := range 11 {
			ops.AppendSet(fmt.Sprintf("/f%d", i), i)
		}
		_, err := c.PatchItem(ctx(t), pk("p"), "many", ops, nil)
		wantStatus(t, err, sBad, "patch with 11 operations")
	})

	t.Run("missing", func(t *testing.T) {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/x", 1)
		_, err := c.PatchItem(ctx(t), pk("p"), "nope", ops, nil)
		wantStatus(t, err, sNotFound, "patch missing item")
		create(t, c, doc{"id": "pm", "pk": "right"})
		_, err = c.PatchItem(ctx(t), pk("wrong"), "pm", ops, nil)
		wantStatus(t, err, sNotFound, "patch with wrong partition key")
	})

	t.Run("if-match", func(t *testing.T) {
		e1 := create(t, c, doc{"id": "pim", "pk": "p", "n": 0})
		var ops azcosmos.PatchOperations
		ops.AppendIncrement("/n", 1)
		r, err := c.PatchItem(ctx(t), pk("p"), "pim", ops, ifMatch(e1))
		noErr(t, err, "patch with current ETag")
		if r.ETag == "" || r.ETag == e1 {
			t.Fatalf("patch: ETag %q (old %q), want a new one", r.ETag, e1)
		}
		_, err = c.PatchItem(ctx(t), pk("p"), "pim", ops, ifMatch(e1))
		wantStatus(t, err, sPrecond, "patch with stale ETag")
		if got, _ := read(t, c, "p", "pim"); got["n"] != 1.0 {
			t.Fatalf("after stale patch: n=%v, want 1", got["n"])
		}
	})

	t.Run("condition", func(t *testing.T) {
		// Mixed-case names and values: a condition must be evaluated as
		// written, against this one document only.
		create(t, c, doc{"id": "cond", "pk": "p", "ownerId": "Worker-A", "lockedUntil": 100, "n": 0})
		create(t, c, doc{"id": "other", "pk": "p", "ownerId": "Worker-B", "lockedUntil": 0})
		cases := []struct {
			cond string
			want int
		}{
			{"FROM c WHERE c.ownerId = 'Worker-A'", sOK},
			{"from c where c.ownerId = 'Worker-A' AND c.lockedUntil > 50", sOK},
			{"FROM root WHERE root.lockedUntil >= 100", sOK},
			{"FROM c WHERE c.ownerId = 'worker-a'", sPrecond},
			{"FROM c WHERE c.ownerId = 'Worker-B'", sPrecond},
			{"FROM c WHERE c.lockedUntil < 50", sPrecond},
			{"FROM c WHERE NOT IS_DEFINED(c.ownerId)", sPrecond},
			{"FROM c WHERE IS_DEFINED(c.ownerId) AND c.n = 3", sOK}, // one increment per success so far
		}
		for i, tc := range cases {
			var ops azcosmos.PatchOperations
			ops.SetCondition(tc.cond)
			ops.AppendIncrement("/n", 1)
			_, err := c.PatchItem(ctx(t), pk("p"), "cond", ops, nil)
			if got := statusOf(err); (tc.want == sOK && got != 0) || (tc.want != sOK && got != tc.want) {
				t.Fatalf("case %d %q: status %d (err %v), want %d", i, tc.cond, got, err, tc.want)
			}
		}
		if got, _ := read(t, c, "p", "cond"); got["n"] != 4.0 {
			t.Fatalf("after conditional patches: n=%v, want 4 (one per successful patch)", got["n"])
		}
	})

	t.Run("condition-and-if-match", func(t *testing.T) {
		e1 := create(t, c, doc{"id": "cim", "pk": "p", "state": "open"})
		var ops azcosmos.PatchOperations
		ops.SetCondition("FROM c WHERE c.state = 'open'")
		ops.AppendSet("/state", "closed")
		stale := azcore.ETag("\"00000000-0000-0000-0000-000000000000\"")
		_, err := c.PatchItem(ctx(t), pk("p"), "cim", ops, ifMatch(stale))
		wantStatus(t, err, sPrecond, "true condition, stale ETag")
		_, err = c.PatchItem(ctx(t), pk("p"), "cim", ops, ifMatch(e1))
		noErr(t, err, "true condition, current ETag")
	})
}
