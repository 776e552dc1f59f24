/*
Package cosmostest runs an in-process fake of an Azure Cosmos DB for NoSQL
account for tests, in the spirit of net/http/httptest and miniredis. It serves
the REST API that azcosmos (github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos,
v1.5.0) uses, over plain HTTP on 127.0.0.1, so code under test talks to it
through the real SDK exactly as it would to the service:

	s := cosmostest.New(t, nil) // closed when the test ends
	client := s.Client()        // or s.NewClient(opts), or azcosmos.NewClientWithKey(s.Endpoint(), ...)

Start with [New] in a test (or [NewServer] outside one) and
[Server.InjectFault]; package localcosmos is the server underneath.

The server is package localcosmos, the local Cosmos DB server that
embedded.Open runs in production: its documentation says what matches the
service, what differs deliberately and what is not implemented, and how
[Options].DataDir keeps the account on disk. A [Server] is a
[localcosmos.Server] (it has all its methods: Endpoint, Client, Counts,
Stats, SetClock, Documents, UpdateDocuments, InProcessTransport...) with
what tests need on top: faults, added latency, lagging replicas and a
control endpoint, all injected through the core's hooks
(localcosmos.Options.Intercept and Replicas). A shared conformance suite
(conformance_test.go) runs the same expectations against this server,
against @vercel/cosmosdb-server and against a real account.

# Test hooks

[Server.InjectFault] makes matching requests fail with a status (for example
429 with x-ms-retry-after-ms, 503 or 408), sleep, or lose their connection
before or after being applied ([DropAfterApply] is how to check that a write is
safe to retry). A fault with ApplyFirst applies the request and then answers
its status (an ambiguous outcome), a fault with a Priority affects only
requests of that priority level ([LowPriorityThrottle] sheds the Low ones
with 429, as a container over its RU/s does under priority-based
execution), and [Server.SetLatency] delays every request. Faults and
latency apply to requests served in process
([localcosmos.Server.InProcessTransport]) too: a dropped connection is a
transport error there. [Server.Counts] and [Server.Stats] report requests,
documents and bytes returned per operation, for cost tests.
[Server.SetClock] controls _ts. [Server.Documents] and
[Server.UpdateDocuments] read and change stored documents directly,
bypassing the API, for white-box tests.

# Lagging replicas

Every read sees the latest write (strong consistency) whatever the account
([Options].ConsistencyLevel) or request consistency level, unless
[Options].Lag turns on lagging replicas (lag.go): then a read or query
without a session token covering a partition's latest writes may be served
from an older version of the partition, as on the service.

# Sharing one server between processes

The command cosmostest/cmd/cosmostest serves a server on a fixed address
([Options.Addr]) until interrupted, printing COSMOS_ENDPOINT, COSMOS_KEY and
COSMOSTEST_CONTROL; the control endpoint ([Server.ControlHandler]) sets faults
([FaultSpec]: by operation, writes only, with a probability, for a duration)
and added latency over HTTP. The package does not import package testing
([New] takes the small [TB] interface), so binaries can embed the
server too.
*/
package cosmostest
