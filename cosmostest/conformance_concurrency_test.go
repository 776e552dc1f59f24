package cosmostest_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/testbackend"
)

// racers is how many goroutines race in each concurrency case.
const racers = 50

// race runs f(i) for i in [0, racers) at once and returns each result.
func race(f func(i int) error) []error {
	errs := make([]error, racers)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range racers {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = f(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// winners returns the indexes whose error is nil, failing t on any error
// whose status is not loser.
func winners(t *testing.T, errs []error, loser int) []int {
	t.Helper()
	var out []int
	for i, err := range errs {
		switch statusOf(err) {
		case 0:
			out = append(out, i)
		case loser:
		default:
			t.Fatalf("racer %d: %v, want success or %d", i, err, loser)
		}
	}
	return out
}

// testConcurrency: optimistic concurrency holds under contention.
func testConcurrency(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})

	t.Run("conditional-replace", func(t *testing.T) {
		for round := range 5 {
			id := fmt.Sprint("cr", round)
			e := create(t, c, doc{"id": id, "pk": "p", "winner": -1})
			bodies := bodiesOf(t, func(i int) doc { return doc{"id": id, "pk": "p", "winner": i} })
			errs := race(func(i int) error {
				_, err := c.ReplaceItem(ctx(t), pk("p"), id, bodies[i], ifMatch(e))
				return err
			})
			w := winners(t, errs, sPrecond)
			if len(w) != 1 {
				t.Fatalf("round %d: %d winners %v, want exactly 1", round, len(w), w)
			}
			if got, _ := read(t, c, "p", id); got["winner"] != float64(w[0]) {
				t.Fatalf("round %d: stored winner %v, want %d", round, got["winner"], w[0])
			}
		}
	})

	t.Run("create-same-id", func(t *testing.T) {
		bodies := bodiesOf(t, func(i int) doc { return doc{"id": "same", "pk": "p", "by": i} })
		errs := race(func(i int) error {
			_, err := c.CreateItem(ctx(t), pk("p"), bodies[i], nil)
			return err
		})
		if w := winners(t, errs, sConflict); len(w) != 1 {
			t.Fatalf("%d creates of one id succeeded, want exactly 1", len(w))
		}
	})

	t.Run("patch-increment", func(t *testing.T) {
		create(t, c, doc{"id": "counter", "pk": "p", "n": 0})
		errs := race(func(int) error {
			var ops azcosmos.PatchOperations
			ops.AppendIncrement("/n", 1)
			_, err := c.PatchItem(ctx(t), pk("p"), "counter", ops, nil)
			return err
		})
		for i, err := range errs {
			noErr(t, err, fmt.Sprint("increment ", i))
		}
		if got, _ := read(t, c, "p", "counter"); got["n"] != float64(racers) {
			t.Fatalf("counter is %v after %d concurrent increments", got["n"], racers)
		}
	})

	t.Run("conditional-batch", func(t *testing.T) {
		e := create(t, c, doc{"id": "cb", "pk": "cb", "winner": -1})
		creates := bodiesOf(t, func(i int) doc { return doc{"id": fmt.Sprint("cb-", i), "pk": "cb"} })
		replaces := bodiesOf(t, func(i int) doc { return doc{"id": "cb", "pk": "cb", "winner": i} })
		errs := race(func(i int) error {
			batch := c.NewTransactionalBatch(pk("cb"))
			batch.CreateItem(creates[i], nil)
			batch.ReplaceItem("cb", replaces[i], &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e})
			r, err := c.ExecuteTransactionalBatch(ctx(t), batch, nil)
			if err != nil {
				return err
			}
			if !r.Success {
				return errPreconditionFailed
			}
			return nil
		})
		w := winners(t, errs, sPrecond)
		if len(w) != 1 {
			t.Fatalf("%d batches succeeded, want exactly 1", len(w))
		}
		items := queryAll(t, c, "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.id, 'cb-')", pk("cb"), nil)
		wantJSON(t, values(t, items), []string{fmt.Sprint("cb-", w[0])}, "items created by the batches")
	})
}

// errPreconditionFailed stands for a batch that failed (Success=false), so
// that winners can count it as a loser.
var errPreconditionFailed = &azcore.ResponseError{StatusCode: sPrecond, ErrorCode: "batch failed"}

// bodiesOf encodes gen(i) for every racer up front: encoding can fail the
// test, which must not happen on a racer's goroutine.
func bodiesOf(t *testing.T, gen func(i int) doc) [][]byte {
	t.Helper()
	out := make([][]byte, racers)
	for i := range out {
		out[i] = mustJSON(t, gen(i))
	}
	return out
}

// testAuth: master-key signatures are checked.
func testAuth(t *testing.T, b testbackend.Backend) {
	t.Run("wrong-key", func(t *testing.T) {
		db := b.NewDatabase(t)
		key := make([]byte, 64)
		if _, err := rand.Read(key); err != nil {
			t.Fatal(err)
		}
		wrong := b.NewClient(t, base64.StdEncoding.EncodeToString(key), nil)
		d, err := wrong.NewDatabase(db.ID())
		noErr(t, err, "database client")
		_, err = d.Read(ctx(t), nil)
		wantStatus(t, err, sUnauth, "read database with a wrong key")
		_, err = wrong.CreateDatabase(ctx(t), azcosmos.DatabaseProperties{ID: testbackend.NewDatabaseName(t)}, nil)
		wantStatus(t, err, sUnauth, "create database with a wrong key")
	})

	t.Run("request-date", func(t *testing.T) {
		// A signature is valid for 15 minutes from its x-ms-date; outside
		// that window the service answers 403 ("The authorization token is
		// not valid at the current time"), not 401.
		db := b.NewDatabase(t)
		for _, tc := range []struct {
			shift time.Duration
			want  int
		}{{-5 * time.Minute, 0}, {-30 * time.Minute, http.StatusForbidden}, {30 * time.Minute, http.StatusForbidden}} {
			opts := b.ClientOptions()
			opts.PerCallPolicies = append(opts.PerCallPolicies, dateShift(tc.shift))
			d, err := b.NewClient(t, "", opts).NewDatabase(db.ID())
			noErr(t, err, "database client")
			_, err = d.Read(ctx(t), nil)
			wantStatus(t, err, tc.want, fmt.Sprintf("read database with x-ms-date off by %v", tc.shift))
		}
	})

	t.Run("right-key-new-client", func(t *testing.T) {
		db := b.NewDatabase(t)
		other := b.NewClient(t, "", nil)
		d, err := other.NewDatabase(db.ID())
		noErr(t, err, "database client")
		_, err = d.Read(ctx(t), nil)
		noErr(t, err, "read database with the right key")
	})
}

// dateShift is a per-call policy that stamps requests with a clock off by
// the given duration; the key credential signs whatever x-ms-date it finds.
type dateShift time.Duration

func (d dateShift) Do(req *policy.Request) (*http.Response, error) {
	req.Raw().Header.Set("x-ms-date", time.Now().Add(time.Duration(d)).UTC().Format(http.TimeFormat))
	return req.Next()
}
