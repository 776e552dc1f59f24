package testbackend

// Names of known backend gaps, for [Backend.Skip]. Each names one behaviour
// of the real service that some backend cannot provide.
const (
	// GapSessionToken: responses carry an x-ms-session-token header.
	GapSessionToken = "session-token"
)

// VercelGaps are the behaviours @vercel/cosmosdb-server 1.0.1 lacks even
// behind the project's shim (cosmostest/testdata/cosmos-shim/README.md).
var VercelGaps = map[string]string{
	GapSessionToken: "the server keeps no LSNs, so it cannot issue session tokens",
}
