package localcosmos

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/duroxide-go/cdb/localcosmos/internal/query"
)

// Physical partitions. The service spreads a container's logical
// partitions over physical partitions (partition key ranges) and the
// gateway serves a cross-partition query one range at a time: a page holds
// results of one range only, a range's last page is followed by a
// continuation into the next range even when that range has nothing to
// return, so a client sees short and even empty pages with a continuation
// token (Azure/azure-cosmos-dotnet-v2#692; the azcosmos documentation of
// NewQueryItemsPager). A client that stops at the first short or empty page
// misses whatever lives in the later ranges.
//
// With Options.PartitionKeyRanges = n > 1 every container has n ranges and
// a logical partition belongs to range hash(partition key) mod n (FNV-1a,
// not the service's effective-partition-key hash). The ranges shape the
// paging of cross-partition queries only: GET .../pkranges still reports a
// single range "0", which ReadManyItems and range-addressed queries use.

// rangeOf returns the range of the logical partition with canonical key pk.
func rangeOf(pk string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(pk))
	return int(h.Sum64() % uint64(n))
}

// docsInRange returns the documents of docs in range r of n, keeping their
// order.
func docsInRange(docs []*document, r, n int) []*document {
	if n <= 1 {
		return docs
	}
	out := make([]*document, 0, len(docs)/n+1)
	for _, d := range docs {
		if rangeOf(d.pk, n) == r {
			out = append(out, d)
		}
	}
	return out
}

// runRangedPage computes one page of a cross-partition query over n
// ranges: results from the range the continuation names only, then a
// continuation into the next range once this one is exhausted, whether or
// not the next range holds any results.
func runRangedPage(q *query.Query, params query.Params, opts query.Options, docs []*document, token string, size int, hash uint64, n int) ([]json.RawMessage, string, int, *apiError) {
	if n <= 1 {
		return runQueryPage(q, params, opts, docs, token, size, hash)
	}
	var cont continuation
	if token != "" {
		var e *apiError
		if cont, e = decodeContinuation(token, hash); e != nil {
			return nil, "", 0, e
		}
		if cont.Range < 0 || cont.Range >= n {
			return nil, "", 0, errBadRequest(msgInvalidContinuation)
		}
	}
	r := cont.Range
	page, next, scanned, e := runQueryPageFrom(q, params, opts, docsInRange(docs, r, n), cont, size, hash)
	if e != nil {
		return nil, "", 0, e
	}
	switch {
	case next != nil:
		next.Range = r
	case r+1 < n:
		next = &continuation{Hash: hash, Range: r + 1}
	default:
		return page, "", scanned, nil
	}
	return page, encodeRangeContinuation(*next, n), scanned, nil
}

// encodeRangeContinuation is encodeContinuation with the bounds of the
// range the token resumes in, shaped like the gateway's tokens.
func encodeRangeContinuation(c continuation, n int) string {
	lo, hi := "", "FF"
	if c.Range > 0 {
		lo = fmt.Sprintf("%02X", c.Range*255/n)
	}
	if c.Range+1 < n {
		hi = fmt.Sprintf("%02X", (c.Range+1)*255/n)
	}
	tok := encodeContinuation(c)
	var wrap map[string]any
	if json.Unmarshal([]byte(tok), &wrap) != nil {
		return tok
	}
	wrap["range"] = map[string]any{"min": lo, "max": hi}
	return string(marshalJSON(wrap))
}
