package testbackend

// Names of known backend gaps, for [Backend.Skip]. Each names one behaviour
// of the real service that some backend cannot provide.
const (
	// GapGroupBy: GROUP BY inside one partition.
	GapGroupBy = "group-by"
)

// VercelGaps are the behaviours @vercel/cosmosdb-server 1.0.1 lacks even
// behind the project's shim (cosmostest/testdata/cosmos-shim/README.md).
var VercelGaps = map[string]string{
	GapGroupBy: "the server's SQL engine (@zeit/cosmosdb-query 0.7.2) cannot parse GROUP BY, " +
		"and grouped select lists cannot be emulated reliably by rewriting the query",
}
