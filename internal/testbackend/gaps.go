package testbackend

// Names of known backend gaps, for [Backend.Skip]. Each names one behaviour
// of the real service that some backend cannot provide.
const (
	// GapGroupBy: GROUP BY inside one partition.
	GapGroupBy = "group-by"
	// GapPartitionKeyRanges: several physical partitions, so that a
	// cross-partition query is served one partition key range per page,
	// with an empty page and a continuation for a range with no results.
	GapPartitionKeyRanges = "partition-key-ranges"
)

// onePartition is the reason of GapPartitionKeyRanges for backends with a
// single physical partition.
const onePartition = "one physical partition: cross-partition queries are never split into per-range pages " +
	"(a real container has several only beyond about 10k RU/s or 50 GB per partition)"

// VercelGaps are the behaviours @vercel/cosmosdb-server 1.0.1 lacks even
// behind the project's shim (cosmostest/testdata/cosmos-shim/README.md).
var VercelGaps = map[string]string{
	GapGroupBy: "the server's SQL engine (@zeit/cosmosdb-query 0.7.2) cannot parse GROUP BY, " +
		"and grouped select lists cannot be emulated reliably by rewriting the query",
	GapPartitionKeyRanges: onePartition,
}
