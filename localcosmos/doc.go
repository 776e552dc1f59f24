/*
Package localcosmos is a local, persistent server of the Azure Cosmos DB for
NoSQL API: the gateway REST API that azcosmos
(github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos, v1.5.0) speaks, the
NoSQL query engine and a write-ahead log, in the program's own process. Code
talks to it through the real SDK exactly as it would to the service:

Start with [NewServer] and [Options]; package embedded runs it for a
program, and package cosmostest adds the test hooks.

	srv, err := localcosmos.NewServer(&localcosmos.Options{DataDir: dir})
	if err != nil {
		return err
	}
	defer srv.Close()
	client, err := srv.NewClient(nil) // or azcosmos.NewClientWithKey(srv.Endpoint(), ...)

# What it is for

It is the store behind embedded.Open when no account is configured (the
default every program starts with), served in process through
[Server.InProcessTransport], without a socket. It is also the server the
command cosmostest/cmd/cosmostest shares between processes on a fixed
address, and the core of package cosmostest, the test fake, which adds
faults, latency, lagging replicas and a control endpoint on top through
the hooks below.

# What it guarantees

  - Durability. With [Options].DataDir every change a request makes is one
    record of a write-ahead log, fsynced (fdatasync on Linux) before the
    response is written, so every acknowledged write survives a crash of
    the process, SIGKILL included, or a power loss, and a transactional
    batch is on disk whole or not at all. Records are appended under the
    write lock but synced after it is released, one fsync serving every
    write appended meanwhile (group commit); a read, too, answers only once
    every record appended before it is on disk, so no response shows a
    change a crash could still undo. The log is compacted into a snapshot
    once it exceeds [Options].CompactAfterBytes (64 MiB by default).
    Records hold the stored documents with their system properties and the
    counters behind _rid, ETags and session tokens, so after a restart
    ETags, _ts, session tokens and query continuation tokens go on as
    before. Only a record cut short at the end of the log (a write that was
    never acknowledged) is dropped on restart; any other damage, a
    truncated snapshot or a missing file makes [NewServer] fail with
    [ErrDataCorrupt] naming the file, never load part of the account. A
    second server on the same directory, in this process or another, is
    refused with [ErrDataDirInUse] (on Unix, where the directory is locked
    with flock). If the disk fails, the server answers every later request
    with an error instead of acknowledging what it cannot keep.
    TestPersistKill kills a writer process at random moments, mid-batch and
    mid-compaction included, and checks the recovered account against the
    writes it had acknowledged; TestPersistPowerLoss does the same after
    losing the power, on a simulated file system that drops every byte and
    directory entry not yet fsynced and tears the last write, at every file
    system call of a workload of appends, group commits, compactions and a
    restart. A write costs one fsync more, shared with concurrent writes
    (BenchmarkUpsertPersistent). Without DataDir everything is in memory
    and lost when the server closes.
  - What the service refuses, it refuses. A server that accepts what Cosmos
    DB rejects hides bugs until production, so requests are checked as the
    service checks them, with its statuses, substatuses and messages. A
    shared conformance suite (cosmostest/conformance_test.go) runs the same
    expectations against this server, against @vercel/cosmosdb-server and
    against a real account.
  - Linearizable writes: 50 racing replaces with the same If-Match produce
    exactly one winner.

# What matches the service

  - Account: GET / returns the account properties with this server's own
    address as the only read and write region, which azcosmos then uses.
  - Authorization: master-key signatures (HMAC-SHA256 over verb, resource
    type, resource link and x-ms-date) are verified as the service does; a
    wrong or missing signature is 401, an x-ms-date more than 15 minutes off is
    403. With [AuthToken] or [AuthKeyOrToken] the server accepts Entra ID
    tokens of the kind the Cosmos DB emulator accepts ([Server.TokenCredential]),
    refuses malformed or expired ones with 401, and answers control-plane
    writes made with a token (create or delete a database or container,
    replace a container or its throughput) with 403 substatus 5300, as the
    service does for data-plane RBAC tokens.
  - Databases and containers: create 201 / 409, read, replace, delete, 404
    (substatus 1003 for operations under a missing database or container).
    Container properties are kept as given (partition key definition,
    indexing policy including composite indexes, unique keys) with the
    service's defaults and system properties added. Throughput offers can be
    provisioned, read and replaced.
  - Items: create 201 / 409, read 200 / 404, replace 200 / 404, upsert 201 or
    200, delete 204 / 404; the same id may exist in several logical
    partitions. If-Match is honoured on replace, upsert, delete and patch (412),
    ignored on create; If-None-Match on read gives 304. Every write gets a new
    quoted ETag, returned in the etag header and the body's _etag, with _rid,
    _self, _ts and _attachments. "Prefer: return=minimal" (the azcosmos
    default) returns no body. The partition key header must match the
    document (400 substatus 1001); a document without the partition key
    property is in the undefined partition (header [{}]), distinct from null.
    Items over 2 MB are refused with 413. Unique key policies are enforced
    within a logical partition (409). Time to live works as on the service
    (container defaultTtl, item ttl, -1 for never) on the server clock:
    expired items are gone from reads, writes and queries at once.
  - Patch: add, set, replace, remove, incr and move with the service's
    semantics and error texts, at most 10 operations, no patching of id,
    system properties or the partition key, an operation without a value is
    refused, and a "FROM c WHERE ..." condition evaluated by the query engine
    (412 when false).
  - Transactional batch: at most 100 operations and 2 MB, partition key from
    the header only, all-or-nothing under isolation (readers never see half
    a batch); on failure HTTP 207 with the failing operation's status and 424
    for the others.
  - Queries: the Cosmos NoSQL dialect of the internal query engine, scoped to
    the partition in the header, or cross-partition without it. Cross-partition
    queries that need state across partitions (ORDER BY, TOP, OFFSET/LIMIT,
    aggregates, DISTINCT, GROUP BY) are refused with 400 substatus 1004 like the
    gateway, since azcosmos v1.5.0 has no client query engine, unless the WHERE
    clause pins the partition key. ORDER BY on several paths needs a matching
    composite index. Paging follows x-ms-max-item-count and x-ms-continuation;
    see queries.go for how continuations behave when documents change between
    pages. With [Options].PartitionKeyRanges above 1, a cross-partition query is
    served one partition key range per page, with an empty page and a
    continuation for a range that has no results, as the gateway serves
    containers with several physical partitions (ranges.go). Databases,
    containers and offers can be queried too, and ReadManyItems works (one
    partition key range, id "0").
  - Responses carry x-ms-request-charge (plausible, not exact, request units),
    x-ms-activity-id, x-ms-session-token ("0:-1#<lsn>"), etag and, for errors, a
    {"code","message"} body and x-ms-substatus where the service sets one.

# Deliberate differences

  - Item ids follow the gateway's rules as the .NET SDK's id-encoding tests
    record them: '\' is refused at create (400); '/', '#' and a trailing
    space are accepted at create and then fail every point operation by id
    (404 for '/', 401 for the others) while queries and batches still see
    them; '?' works. Item ids may be up to 1,023 bytes; database and
    container ids up to 255 characters.
  - Every read sees the latest write (strong consistency) whatever the
    account ([Options].ConsistencyLevel) or request consistency level,
    unless [Options].Replicas models lagging replicas (replicas.go). A
    request may not ask for a level stronger than the account's.
  - Authentication checks (x-ms-date skew, token expiry) use the wall clock,
    because the SDK stamps requests with it; everything else (_ts) uses the
    server clock ([Server.SetClock]).
  - Numbers are stored as float64, so integers beyond 2^53 lose precision;
    stored documents are returned with their properties in sorted order.
  - Request charges are an approximation: 1 RU per KB read, about 5.7 RU per
    KB written, and so on. Nothing is throttled, so a request's priority
    level (x-ms-cosmos-priority-level, [RequestPriority]) changes nothing
    but [Stats].LowPriorityRequests: the service, with priority-based
    execution enabled, throttles Low requests first when a container is
    over its RU/s (cosmostest's faults model that).

# What it is not

It is one process's store, not a distributed database: one replica, one
region, no partition splits, no TLS (it speaks plain HTTP, by default on
127.0.0.1 only), no backups beyond the data directory itself. It does not
implement the change feed and read feeds (GET on a collection), stored
procedures, triggers and user-defined functions, users, permissions and
resource tokens, attachments, conflicts, multiple regions, partition splits
(GET .../pkranges reports one range even when [Options].PartitionKeyRanges
models several for query paging), analytical store, vector and full-text
search. Indexing policies only decide which ORDER BY queries are allowed.
Such requests get 400 with a message starting "cosmostest does not
support" (the fake's name, kept in the wire messages clients may match).
It is not a test fake either: faults, latency and stale reads are package
cosmostest's.

# Index

Each container keeps its documents grouped by the string value of their
"type" property. A cross-partition (or range-addressed) query whose WHERE
clause requires type to equal a string, or one of several (c.type = 'a' OR
c.type = @b), reads only those documents, in creation order; other queries
read the whole scope. Results, order, paging and continuations are those
of a full scan (TestIndexedQueriesMatchFullScan compares both on random
data, with partition key ranges and lagging replicas); the request charge,
which counts documents read, is lower.

# Hooks

Two options let a caller disturb the server without the server knowing
about tests; both are nil in production. [Options].Intercept, an
[Interceptor], sees every request before it is handled and may delay it,
refuse it with an error in the service's format, or drop its connection
before or after applying it. [Options].Replicas, a [ReplicaPolicy], makes
reads without a covering session token be served, as on the service, by
replicas a few writes behind. [Server.Counts] and [Server.Stats] report
requests, documents and bytes returned per operation; [Server.Documents]
and [Server.UpdateDocuments] read and change stored documents directly,
bypassing the API, for inspection and white-box tests.
*/
package localcosmos
