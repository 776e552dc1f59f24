package localcosmos

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestPatchOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	f.create(t, "a", "i1", "n", 1, "s", "x", "arr", []any{1, 2, 3}, "obj", map[string]any{"k": "v"}, "f", 1.5)

	var p azcosmos.PatchOperations
	p.AppendSet("/s", "y")         // replace existing
	p.AppendSet("/obj/new", "nv")  // set creates
	p.AppendAdd("/arr/1", 9)       // insert at index
	p.AppendAdd("/arr/-", 4)       // append
	p.AppendReplace("/n", 10)      // replace existing
	p.AppendIncrement("/n", 5)     // incr existing
	p.AppendIncrement("/fresh", 3) // incr creates
	p.AppendRemove("/obj/k")       // remove
	p.AppendIncrement("/f", -1)    // incr a float
	p.AppendSet("/arr/0", "first") // set on an array index updates
	r, err := f.ct.PatchItem(ctx, pkOf("i1"), "a", p, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	wantOK(t, err, "patch")
	got := decode(t, r.Value)
	want := map[string]any{"s": "y", "n": float64(15), "fresh": float64(3), "f": 0.5,
		"obj": map[string]any{"new": "nv"}, "arr": []any{"first", float64(9), float64(2), float64(3), float64(4)}}
	for k, v := range want {
		if string(marshalJSON(got[k])) != string(marshalJSON(v)) {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if got["_etag"] != string(r.ETag) {
		t.Fatal("patch response ETag does not match the body")
	}

	// Move (not in the Go SDK): raw request.
	body := []byte(`{"operations":[{"op":"move","from":"/s","path":"/moved"}]}`)
	st, _, res := do(t, signedRequest(t, f.s, http.MethodPatch, docsPath+"/a", body, map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`}))
	if st != http.StatusOK || res["moved"] != "y" || res["s"] != nil {
		t.Fatalf("move: %d %v", st, res)
	}
}

func TestPatchErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	cr := f.create(t, "a", "i1", "n", 1, "s", "x", "arr", []any{1})
	cases := []struct {
		name   string
		ops    func(p *azcosmos.PatchOperations)
		status int
		msg    string
	}{
		{"replace-missing", func(p *azcosmos.PatchOperations) { p.AppendReplace("/nope", 1) }, 400, "to be replaced is absent"},
		{"remove-missing", func(p *azcosmos.PatchOperations) { p.AppendRemove("/nope") }, 400, "to be removed is absent"},
		{"incr-string", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/s", 1) }, 400, "isn't a number"},
		{"add-deep", func(p *azcosmos.PatchOperations) { p.AppendAdd("/x/y", 1) }, 400, "can't create path recursively"},
		{"set-deep", func(p *azcosmos.PatchOperations) { p.AppendSet("/x/y", 1) }, 400, "can't create path recursively"},
		{"add-out-of-bounds", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/5", 1) }, 400, "out of array bounds"},
		{"remove-out-of-bounds", func(p *azcosmos.PatchOperations) { p.AppendRemove("/arr/1") }, 400, "out of array bounds"},
		{"id", func(p *azcosmos.PatchOperations) { p.AppendSet("/id", "b") }, 400, "system property"},
		{"ts", func(p *azcosmos.PatchOperations) { p.AppendSet("/_ts", 1) }, 400, "system property"},
		{"partition-key", func(p *azcosmos.PatchOperations) { p.AppendSet("/instanceId", "i2") }, 400, "partition key"},
		// azcosmos omits a nil value ("value,omitempty"), so null cannot be
		// set through it: the service refuses an operation without a value.
		{"nil-value", func(p *azcosmos.PatchOperations) { p.AppendSet("/n", nil) }, 400, "'value'"},
		{"too-many", func(p *azcosmos.PatchOperations) {
			for i := 0; i < 11; i++ {
				p.AppendSet("/n", i+1)
			}
		}, 400, "can't exceed 10"},
		{"condition-false", func(p *azcosmos.PatchOperations) {
			p.SetCondition("FROM c WHERE c.s = 'nope'")
			p.AppendSet("/n", 2)
		}, 412, ""},
		{"condition-invalid", func(p *azcosmos.PatchOperations) {
			p.SetCondition("WHERE c.s = 'x'")
			p.AppendSet("/n", 2)
		}, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p azcosmos.PatchOperations
			tc.ops(&p)
			_, err := f.ct.PatchItem(ctx, pkOf("i1"), "a", p, nil)
			wantStatus(t, err, tc.status, tc.name)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := f.read(t, "a", "i1"); got["_etag"] != string(cr.ETag) {
				t.Fatalf("%s: the failed patch changed the document: %v", tc.name, got)
			}
		})
	}

	var p azcosmos.PatchOperations
	p.AppendSet("/n", 2)
	_, err := f.ct.PatchItem(ctx, pkOf("i1"), "missing", p, nil)
	wantStatus(t, err, http.StatusNotFound, "patch missing")
	stale := azcore.ETag(`"stale"`)
	_, err = f.ct.PatchItem(ctx, pkOf("i1"), "a", p, &azcosmos.ItemOptions{IfMatchEtag: &stale})
	wantStatus(t, err, http.StatusPreconditionFailed, "stale If-Match")

	p.SetCondition("FROM c WHERE c.s = 'x' AND c.n = 1")
	r, err := f.ct.PatchItem(ctx, pkOf("i1"), "a", p, &azcosmos.ItemOptions{IfMatchEtag: &cr.ETag})
	wantOK(t, err, "conditional patch")
	if len(r.Value) != 0 {
		t.Fatal("minimal patch returned a body")
	}
	if got := f.read(t, "a", "i1"); got["n"] != float64(2) {
		t.Fatalf("conditional patch: %v", got)
	}
}

func TestPatchResultTooLarge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1", "blob", strings.Repeat("a", 1500*1024))
	var p azcosmos.PatchOperations
	p.AppendSet("/blob2", strings.Repeat("b", 700*1024))
	_, err := f.ct.PatchItem(testCtx(t), pkOf("i1"), "a", p, nil)
	wantStatus(t, err, http.StatusRequestEntityTooLarge, "patch over 2 MB")
}

func TestPatchRawSyntax(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`}
	for _, body := range []string{
		`{}`,
		`{"operations":[]}`,
		`{"operations":[{"op":"frobnicate","path":"/a","value":1}]}`,
		`{"operations":[{"op":"set","path":"a","value":1}]}`,
		`{"operations":[{"op":"incr","path":"/a","value":"1"}]}`,
		`{"operations":[{"op":"move","path":"/a"}]}`,
		`[1,2]`,
	} {
		st, _, res := do(t, signedRequest(t, f.s, http.MethodPatch, docsPath+"/a", []byte(body), hdr))
		if st != http.StatusBadRequest {
			b, _ := json.Marshal(res)
			t.Errorf("%s: %d %s", body, st, b)
		}
	}
}
