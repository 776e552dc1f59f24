package localcosmos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/localcosmos/internal/query"
)

// TestPartitionKeyRangesPaging: with several ranges, every cross-partition
// page holds results of one range only, there is one page per range (empty
// ones included) when pages are large, and every item comes back once.
func TestPartitionKeyRangesPaging(t *testing.T) {
	t.Parallel()
	const ranges = 8
	f := newFixture(t, &Options{PartitionKeyRanges: ranges})
	want := map[string]bool{}
	for i := range 20 {
		inst := fmt.Sprint("inst", i)
		f.create(t, "a"+inst, inst, "kind", "k")
		want["a"+inst] = true
	}
	var sizes []int
	seen := map[string]bool{}
	pager := f.ct.NewQueryItemsPager("SELECT * FROM c WHERE c.kind = 'k'", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 100})
	for pager.More() {
		page, err := pager.NextPage(testCtx(t))
		wantOK(t, err, "page")
		sizes = append(sizes, len(page.Items))
		rangeOfPage := -1
		for _, raw := range page.Items {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			id, inst := d["id"].(string), d["instanceId"].(string)
			if seen[id] {
				t.Fatalf("%s returned twice", id)
			}
			seen[id] = true
			r := rangeOf(pkKey([]any{inst}), ranges)
			if rangeOfPage >= 0 && r != rangeOfPage {
				t.Fatalf("one page mixes ranges %d and %d", rangeOfPage, r)
			}
			rangeOfPage = r
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("got %d items, want %d", len(seen), len(want))
	}
	if len(sizes) != ranges {
		t.Fatalf("page sizes %v: want one page per range (%d)", sizes, ranges)
	}

	// Single-partition queries are not split.
	_, single := allPages(t, f.ct, "SELECT * FROM c", pkOf("inst3"), nil)
	if len(single) != 1 || single[0] != 1 {
		t.Fatalf("single-partition page sizes %v, want [1]", single)
	}
}

func TestPartitionKeyRangesOption(t *testing.T) {
	for _, n := range []int{-1, 257} {
		if _, err := NewServer(&Options{PartitionKeyRanges: n}); err == nil {
			t.Errorf("PartitionKeyRanges %d accepted", n)
		}
	}
	// A continuation naming a range that does not exist is refused.
	tok := encodeRangeContinuation(continuation{Hash: 1, Range: 9}, 8)
	if _, _, _, e := runRangedPage(nil, nil, query.Options{}, nil, tok, 10, 1, 8); e == nil || e.Status != http.StatusBadRequest {
		t.Fatalf("continuation into range 9 of 8: %v, want 400", e)
	}
}
