package cosmostest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Conformance cases of the lagging-replica mode (lag.go).

const lagReads = 60

func newLagFixture(t *testing.T, window time.Duration) *fixture {
	return newFixture(t, &Options{Lag: &LagOptions{Versions: 3, Window: window, Seed: 7}})
}

// readV reads item id of partition p and returns its "v" (-1: 404) and
// the response's session token.
func readV(t *testing.T, f *fixture, p, id string, token *string) (int, string) {
	t.Helper()
	r, err := f.ct.ReadItem(testCtx(t), pkOf(p), id, &azcosmos.ItemOptions{SessionToken: token})
	if status(err) == http.StatusNotFound {
		return -1, ""
	}
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	var doc struct{ V int }
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.V, *r.SessionToken
}

// writeVersions creates id with v=0 and replaces it up to v=n, returning
// the ETag and session token of every version.
func writeVersions(t *testing.T, f *fixture, p, id string, n int) ([]azcore.ETag, []string) {
	t.Helper()
	var etags []azcore.ETag
	var tokens []string
	r, err := f.ct.CreateItem(testCtx(t), pkOf(p), item(id, p, "v", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	etags, tokens = append(etags, r.ETag), append(tokens, *r.SessionToken)
	for v := 1; v <= n; v++ {
		r, err := f.ct.ReplaceItem(testCtx(t), pkOf(p), id, item(id, p, "v", v), nil)
		if err != nil {
			t.Fatal(err)
		}
		etags, tokens = append(etags, r.ETag), append(tokens, *r.SessionToken)
	}
	return etags, tokens
}

func TestLagReadWithoutTokenMayBeStaleButBounded(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	writeVersions(t, f, "p", "a", 5)
	seen := map[int]int{}
	for range lagReads {
		v, _ := readV(t, f, "p", "a", nil)
		seen[v]++
	}
	if seen[5] == 0 {
		t.Errorf("no read saw the latest version: %v", seen)
	}
	if len(seen) < 2 {
		t.Errorf("no read without a session token was stale in %d reads: %v", lagReads, seen)
	}
	for v := range seen {
		if v < 5-3 {
			t.Errorf("a read lagged more than Versions=3 writes: saw v=%d (%v)", v, seen)
		}
	}
}

func TestLagReadWithTokenSeesTheWrite(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	_, tokens := writeVersions(t, f, "p", "a", 5)
	for range lagReads {
		if v, _ := readV(t, f, "p", "a", &tokens[5]); v != 5 {
			t.Fatalf("read with the last write's token saw v=%d, want 5", v)
		}
	}
	// An older token guarantees only its own write: never older than that.
	seen := map[int]bool{}
	for range lagReads {
		v, _ := readV(t, f, "p", "a", &tokens[3])
		if v < 3 {
			t.Fatalf("read with v=3's token saw v=%d", v)
		}
		seen[v] = true
	}
	if !seen[3] && !seen[4] {
		t.Errorf("an older token never allowed a stale read: %v", seen)
	}
}

func TestLagStaleReadReturnsItsOwnProgress(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	writeVersions(t, f, "p", "a", 3)
	for range lagReads {
		v, tok := readV(t, f, "p", "a", nil)
		if v == 3 {
			continue
		}
		// The token of a stale read must not promise the latest write:
		// reading with it may still be stale, but never older than v.
		for range 10 {
			if w, _ := readV(t, f, "p", "a", &tok); w < v {
				t.Fatalf("read with a stale read's token (v=%d) saw v=%d", v, w)
			}
		}
		return
	}
	t.Fatal("no stale read happened")
}

func TestLagWritesAndETagsSeeTheLatest(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	etags, _ := writeVersions(t, f, "p", "a", 3)
	for range 20 {
		_, err := f.ct.ReplaceItem(testCtx(t), pkOf("p"), "a", item("a", "p", "v", 9), &azcosmos.ItemOptions{IfMatchEtag: &etags[2]})
		if status(err) != http.StatusPreconditionFailed {
			t.Fatalf("replace with an old ETag: %v, want 412", err)
		}
		_, err = f.ct.CreateItem(testCtx(t), pkOf("p"), item("a", "p", "v", 9), nil)
		if status(err) != http.StatusConflict {
			t.Fatalf("create of an existing id: %v, want 409", err)
		}
	}
	if _, err := f.ct.ReplaceItem(testCtx(t), pkOf("p"), "a", item("a", "p", "v", 4), &azcosmos.ItemOptions{IfMatchEtag: &etags[3]}); err != nil {
		t.Fatalf("replace with the latest ETag: %v", err)
	}
}

func TestLagDeleteMayBeUnseenWithoutToken(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	writeVersions(t, f, "p", "a", 0)
	r, err := f.ct.DeleteItem(testCtx(t), pkOf("p"), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := *r.SessionToken
	seen := map[int]int{}
	for range lagReads {
		v, _ := readV(t, f, "p", "a", nil)
		seen[v]++
		if w, _ := readV(t, f, "p", "a", &tok); w != -1 {
			t.Fatalf("read with the delete's token found the item (v=%d)", w)
		}
	}
	if seen[0] == 0 || seen[-1] == 0 {
		t.Errorf("reads without a token: %v, want both the deleted item and 404", seen)
	}
}

// queryIDs runs a partition query and returns the ids it saw.
func queryIDs(t *testing.T, f *fixture, p string, token *string) map[string]bool {
	t.Helper()
	pager := f.ct.NewQueryItemsPager("SELECT VALUE c.id FROM c", pkOf(p), &azcosmos.QueryOptions{SessionToken: token})
	out := map[string]bool{}
	for pager.More() {
		page, err := pager.NextPage(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Items {
			var id string
			_ = json.Unmarshal(raw, &id)
			out[id] = true
		}
	}
	return out
}

func TestLagQueriesAndBatchesAreAtomic(t *testing.T) {
	t.Parallel()
	f := newLagFixture(t, time.Hour)
	// "a" is followed by Versions writes, so every replica has it.
	writeVersions(t, f, "p", "a", 0)
	writeVersions(t, f, "p", "c", 1)
	writeVersions(t, f, "p", "d", 0)
	b := f.ct.NewTransactionalBatch(pkOf("p"))
	b.CreateItem(item("b1", "p"), nil)
	b.CreateItem(item("b2", "p"), nil)
	resp, err := f.ct.ExecuteTransactionalBatch(testCtx(t), b, nil)
	if err != nil || !resp.Success {
		t.Fatalf("batch: %v %v", err, resp.Success)
	}
	stale, fresh := 0, 0
	for range lagReads {
		ids := queryIDs(t, f, "p", nil)
		if !ids["a"] {
			t.Fatalf("a query lost an older write: %v", ids)
		}
		if ids["b1"] != ids["b2"] {
			t.Fatalf("a query saw half a batch: %v", ids)
		}
		if ids["b1"] {
			fresh++
		} else {
			stale++
		}
		if ids := queryIDs(t, f, "p", &resp.SessionToken); !ids["b1"] || !ids["b2"] {
			t.Fatalf("a query with the batch's token missed it: %v", ids)
		}
	}
	if stale == 0 || fresh == 0 {
		t.Errorf("queries without a token: %d stale, %d fresh; want both", stale, fresh)
	}
}

func TestLagWindowBoundsStaleness(t *testing.T) {
	const window = 100 * time.Millisecond
	f := newLagFixture(t, window)
	writeVersions(t, f, "p", "a", 3)
	written := time.Now()
	// Wait for the window to pass, measured from the last write.
	time.Sleep(time.Until(written.Add(2 * window)))
	for range lagReads {
		if v, _ := readV(t, f, "p", "a", nil); v != 3 {
			t.Fatalf("a read long after the lag window saw v=%d, want 3", v)
		}
	}
}

func TestLagOffReadsAlwaysLatest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	writeVersions(t, f, "p", "a", 3)
	for range lagReads {
		if v, _ := readV(t, f, "p", "a", nil); v != 3 {
			t.Fatalf("without Lag a read saw v=%d", v)
		}
	}
}
