package localcosmos

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

const racers = 50

func TestConcurrentConditionalReplace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for round := 0; round < 5; round++ {
		id := fmt.Sprint("r", round)
		etag := f.create(t, id, "i1", "winner", -1).ETag
		var wins, lost, other atomic.Int32
		var wg sync.WaitGroup
		for g := 0; g < racers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.ct.ReplaceItem(testCtx(t), pkOf("i1"), id, item(id, "i1", "winner", g), &azcosmos.ItemOptions{IfMatchEtag: &etag})
				switch status(err) {
				case 0:
					wins.Add(1)
				case http.StatusPreconditionFailed:
					lost.Add(1)
				default:
					other.Add(1)
					t.Errorf("replace: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || lost.Load() != racers-1 || other.Load() != 0 {
			t.Fatalf("round %d: %d wins, %d 412s, %d others", round, wins.Load(), lost.Load(), other.Load())
		}
	}
}

func TestConcurrentPatchIncrement(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "counter", "i1", "n", 0)
	var wg sync.WaitGroup
	for g := 0; g < racers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p azcosmos.PatchOperations
			p.AppendIncrement("/n", 1)
			_, err := f.ct.PatchItem(testCtx(t), pkOf("i1"), "counter", p, nil)
			if err != nil {
				t.Errorf("incr: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := f.read(t, "counter", "i1")["n"]; n != float64(racers) {
		t.Fatalf("counter = %v, want %d", n, racers)
	}
}

// Readers never observe part of a batch: every batch creates two documents
// in one partition, so a partition always holds an even number of them.
func TestConcurrentBatchAtomicity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const batches = 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	var reads atomic.Int32
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				pager := f.ct.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", pkOf("i1"), nil)
				page, err := pager.NextPage(testCtx(t))
				if err != nil {
					t.Errorf("count: %v", err)
					return
				}
				var n int
				_ = decodeJSON(page.Items[0], &n)
				if n%2 != 0 {
					t.Errorf("reader saw %d documents: half a batch", n)
					return
				}
				reads.Add(1)
			}
		}()
	}
	var writers sync.WaitGroup
	for w := 0; w < 4; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < batches/4; i++ {
				b := f.ct.NewTransactionalBatch(pkOf("i1"))
				b.CreateItem(item(fmt.Sprintf("w%d-%d-a", w, i), "i1"), nil)
				b.CreateItem(item(fmt.Sprintf("w%d-%d-b", w, i), "i1"), nil)
				r, err := f.ct.ExecuteTransactionalBatch(testCtx(t), b, nil)
				if err != nil || !r.Success {
					t.Errorf("batch: %v", err)
				}
				// A failing batch must leave nothing behind either.
				b = f.ct.NewTransactionalBatch(pkOf("i1"))
				b.CreateItem(item(fmt.Sprintf("w%d-%d-c", w, i), "i1"), nil)
				b.CreateItem(item(fmt.Sprintf("w%d-%d-a", w, i), "i1"), nil)
				if r, err := f.ct.ExecuteTransactionalBatch(testCtx(t), b, nil); err != nil || r.Success {
					t.Errorf("failing batch: %v success=%v", err, r.Success)
				}
			}
		}()
	}
	writers.Wait()
	close(done)
	wg.Wait()
	docs, _ := f.s.Documents(testDB, testColl)
	if len(docs) != 2*batches {
		t.Fatalf("%d documents, want %d", len(docs), 2*batches)
	}
	if reads.Load() == 0 {
		t.Fatal("no reads happened")
	}
}
