// Package query is the query engine of localcosmos, the local server of
// the Azure Cosmos DB for NoSQL API (and the core of cosmostest, the test
// fake). It parses the Cosmos query language, checks what
// the real gateway and backend refuse, and evaluates queries over decoded
// JSON documents.
//
// Start with [Parse] and [Query.Execute].
//
// The server uses it in three steps:
//
//	q, err := query.Parse(text)             // syntax and compile errors: *Error, 400
//	err = q.Validate(query.Options{...})    // gateway/index refusals: *Error, 400 (1004 for cross-partition)
//	results, err := q.Execute(docs, params, opts)
//
// and pages through results itself. (*Query).PartitionKeyFilter tells it when
// a request sent without a partition key is pinned to one partition by its
// WHERE clause, which the gateway serves as a single-partition query.
//
// Semantics follow the service, not SQL:
//
//   - A missing property is undefined. Anything compared with undefined, and
//     any range comparison (<, <=, >, >=) between different types, is
//     undefined. WHERE keeps a row only when the predicate is exactly true.
//     AND/OR are three-valued (false AND undefined = false, true OR undefined
//     = true); NOT undefined is undefined.
//   - = and != between two defined values of different types are false and
//     true; arrays and objects compare structurally.
//   - NOT is a unary operator binding tighter than comparisons, as in the
//     service grammar: write NOT (c.a = 1).
//   - true, false, null and undefined are lower-case only; other keywords are
//     case-insensitive and reserved (c.value is a syntax error, c["value"] is
//     not); identifiers and parameter names are case-sensitive.
//   - Projections omit undefined fields; SELECT VALUE of undefined yields no
//     row. Unaliased non-path select items are named $1, $2, ...
//   - ORDER BY orders mixed types by type (undefined < null < booleans <
//     numbers < strings). A single-item ORDER BY leaves out rows whose value
//     is undefined unless the indexing policy includes that exact path
//     ("/p/?"); a multi-item ORDER BY (served by a composite index) keeps them.
//   - Aggregates skip undefined values; over no values COUNT and SUM are 0 and
//     MIN, MAX and AVG are undefined.
//   - A parameter the request did not supply evaluates to undefined.
//
// Errors carry the service's JSON message shapes so client code that parses
// them behaves as in production. Constructs the service accepts but this
// package does not implement fail with a message starting "cosmostest:".
package query
