/*
Package cdb is an Azure Cosmos DB (NoSQL API) provider for duroxide, the
durable-execution framework: it implements [duroxide.Provider] and
[duroxide.ProviderAdmin] (package github.com/duroxide-go/cdb/duroxide) on
one Cosmos container, so orchestrations survive process restarts and many
processes can share the work.

Start with [New] and [Config] (or package embedded's Open, which picks an
account or a local store and calls New); orchestrations themselves are
written against package durable. In the code, provider.go holds [Provider],
and fetch.go and ack.go the two halves of an orchestration turn; the
repository's docs/design.md describes both.

# Writing orchestrations

This package only stores orchestrations; code is written against package
[github.com/duroxide-go/cdb/durable]: register orchestrations and activities
in a durable.Registry, run them with durable.Start on the provider [New]
returns (or any duroxide.Provider), and start, signal and observe instances
with a durable.Client. Its package documentation lists the rules
orchestration code must follow, and its examples show each durable call.

# Connecting

[New] connects as a [Config] says, creates the database and container if
they are missing (see below) and starts the maintenance loop (which
delivers outbox intents, rolls large turns forward and finishes deletions;
[Provider.RunMaintenance] does the same on demand). [Config] says how to
reach the account; [Options], the last argument of both [New] and
[NewWithContainer], tune the provider's behaviour (nil: the defaults):

	p, err := cdb.New(ctx, cdb.Config{
		Endpoint: "https://myacct.documents.azure.com:443/",
		Key:      os.Getenv("COSMOS_KEY"),
	}, nil)
	defer p.Close()

With Microsoft Entra ID, pass any azcore.TokenCredential instead of a key:
azidentity.NewDefaultAzureCredential, NewManagedIdentityCredential with a
client id, or NewWorkloadIdentityCredential on Kubernetes. Cosmos DB does not
let Entra ID tokens create databases or containers, so provision the
container with ARM/Bicep/Terraform/az (partition key [PartitionKeyPath],
[IndexingPolicy]); the bootstrap then only checks that it exists and explains
what to do when it does not. [ConfigFromEnv] reads COSMOS_ENDPOINT,
COSMOS_KEY (absent: DefaultAzureCredential), COSMOS_DATABASE and
COSMOS_CONTAINER. [ParseConnectionString] accepts connection strings in any
segment order. [NewWithContainer] wraps a container client you already have.

# Storage layout

One container, partitioned by /instanceId: every document of an
orchestration instance — its instance document (metadata, lock, custom
status), history events, queue messages, sessions, KV entries and outbox
intents — lives in that instance's logical partition and is discriminated by
a "type" field. The field names and id patterns follow the Rust duroxide-cdb
crate, and events and work items are stored in duroxide's own JSON: package
duroxide's tests check the encoding byte for byte against serde_json's
output (duroxide/testdata). No test has run a Rust process against a
container this package wrote, so mixing Go and Rust processes on one
container is unproven; run one language per container. User strings that go
into ids (instance ids, session ids, KV keys) are escaped reversibly: '/',
'\', '?', '#', '"', '%', '~' and control characters become "~XX"; everything else
is kept, so ordinary ids equal the Rust crate's.

# Consistency without locks

There are no database locks. Each orchestration turn commits as one
transactional batch in the instance's partition whose first operation
replaces the instance document with If-Match on the ETag the fetch obtained:
that single condition is the lock check. Fetching locks an instance and its
messages with one batch holding a conditional patch; work items are locked
with an If-Match patch. Writes use deterministic ids and ETag conditions, so
every one of them is safe to retry (the SDK does not retry writes that time
out). Messages for other instances travel through a transactional outbox.
Turns too big for one batch commit in stage/commit/roll-forward phases and
are never half-visible. See docs/costs.md in the repository for the
request cost of each operation.

# Many processes

Any number of processes may share a container; instance and item locks keep
them from taking the same work. [Leases] (in [Options].Leases) also
splits the 256 dispatch slots between the live processes through lease
documents in the reserved partition [LeasePartition], so each process polls
only its fair share of the queue; shares are rebalanced as processes join,
leave or die, and fetches fall back to polling more slots, never fewer,
while ownership converges.

# Testing

Package github.com/duroxide-go/cdb/cosmostest is an in-process Cosmos DB for
tests (like net/http/httptest), with faults, latency and lagging replicas,
on top of package github.com/duroxide-go/cdb/localcosmos, the local server
embedded.Open runs without an account; package
github.com/duroxide-go/cdb/duroxide/providertest is duroxide's provider
validation suite, which this provider passes in full.
*/
package cdb
