package localcosmos

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Benchmarks measure a full round trip through azcosmos (client pipeline,
// HTTP on loopback, server) per operation.

func BenchmarkPointRead(b *testing.B) {
	f := newFixture(b, nil)
	f.create(b, "a", "i1", "payload", "0123456789abcdef0123456789abcdef")
	ctx := testCtx(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.ct.ReadItem(ctx, pkOf("i1"), "a", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpsert(b *testing.B) {
	benchmarkUpsert(b, nil)
}

// BenchmarkUpsertPersistent is BenchmarkUpsert with a data directory: the
// difference is the cost of the write-ahead log (one fsync per write) and
// of compaction.
func BenchmarkUpsertPersistent(b *testing.B) {
	benchmarkUpsert(b, &Options{DataDir: b.TempDir()})
}

func benchmarkUpsert(b *testing.B, opts *Options) {
	f := newFixture(b, opts)
	ctx := testCtx(b)
	body := item("a", "i1", "payload", "0123456789abcdef0123456789abcdef")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.ct.UpsertItem(ctx, pkOf("i1"), body, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatch3(b *testing.B) {
	benchmarkBatch3(b, nil)
}

// BenchmarkBatch3Persistent is BenchmarkBatch3 with a data directory: the
// batch is one log record, so one fsync.
func BenchmarkBatch3Persistent(b *testing.B) {
	benchmarkBatch3(b, &Options{DataDir: b.TempDir()})
}

func benchmarkBatch3(b *testing.B, opts *Options) {
	f := newFixture(b, opts)
	ctx := testCtx(b)
	bodies := [][]byte{item("a", "i1", "n", 1), item("b", "i1", "n", 2), item("c", "i1", "n", 3)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		batch := f.ct.NewTransactionalBatch(pkOf("i1"))
		for _, body := range bodies {
			batch.UpsertItem(body, nil)
		}
		r, err := f.ct.ExecuteTransactionalBatch(ctx, batch, nil)
		if err != nil || !r.Success {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuerySinglePartition(b *testing.B) {
	f := newFixture(b, nil)
	for i := 0; i < 20; i++ {
		f.create(b, fmt.Sprint("d", i), "i1", "seq", i)
		f.create(b, fmt.Sprint("d", i), "i2", "seq", i)
	}
	ctx := testCtx(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pager := f.ct.NewQueryItemsPager("SELECT * FROM c WHERE c.seq >= 0", pkOf("i1"), nil)
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Items) != 20 {
			b.Fatal(err, len(page.Items))
		}
	}
}

func BenchmarkQueryCrossPartitionPaged(b *testing.B) {
	f := newFixture(b, nil)
	for i := 0; i < 500; i++ {
		f.create(b, fmt.Sprint("d", i), fmt.Sprint("i", i%50), "seq", i)
	}
	ctx := testCtx(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pager := f.ct.NewQueryItemsPager("SELECT c.id FROM c WHERE c.seq % 2 = 0", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 100})
		n := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Items)
		}
		if n != 250 {
			b.Fatal(n)
		}
	}
}

// BenchmarkQueryByType is a discovery-shaped cross-partition query (one
// type, 50 matching documents) on a container that also holds 5,000
// documents of another type, through the type index and as a full scan.
func BenchmarkQueryByType(b *testing.B) {
	for _, mode := range []string{"index", "fullscan"} {
		b.Run(mode, func(b *testing.B) {
			f := newFixture(b, nil)
			f.s.st.fullScan = mode == "fullscan"
			ctx := testCtx(b)
			for i := range 5050 {
				ty := "history"
				if i%101 == 0 {
					ty = "orch_queue"
				}
				inst := fmt.Sprintf("i%d", i%500)
				if _, err := f.ct.CreateItem(ctx, pkOf(inst), item(fmt.Sprintf("d%d", i), inst, "type", ty, "n", i), nil); err != nil {
					b.Fatal(err)
				}
			}
			q := "SELECT c.id, c.instanceId FROM c WHERE c.type = @type AND c.n >= 0"
			opts := &azcosmos.QueryOptions{PageSizeHint: -1, QueryParameters: []azcosmos.QueryParameter{{Name: "@type", Value: "orch_queue"}}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				pager := f.ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), opts)
				n := 0
				for pager.More() {
					resp, err := pager.NextPage(ctx)
					if err != nil {
						b.Fatal(err)
					}
					n += len(resp.Items)
				}
				if n != 50 {
					b.Fatalf("%d results, want 50", n)
				}
			}
		})
	}
}

// BenchmarkUpsertPersistentParallel is BenchmarkUpsertPersistent with
// concurrent writers, whose records share fsyncs (group commit).
func BenchmarkUpsertPersistentParallel(b *testing.B) {
	f := newFixture(b, &Options{DataDir: b.TempDir()})
	ctx := testCtx(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		inst := fmt.Sprintf("i%d", n.Add(1))
		body := item("a", inst, "payload", "0123456789abcdef0123456789abcdef")
		for pb.Next() {
			if _, err := f.ct.UpsertItem(ctx, pkOf(inst), body, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
