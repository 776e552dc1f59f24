package cdb

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// The Cosmos layer lives in internal/cosmos: every request the provider
// sends passes through its Store, which counts, hooks, throttle-retries
// and classifies it. The names users see (request kinds and statistics,
// retry bounds, errors) are re-exported here so they stay part of this
// package's API; the fault-injection hooks are for tests only and live in
// internal/testhooks.

// Op names a kind of Cosmos request: the key of RequestStats.
type Op = cosmos.Op

// The request kinds the provider issues.
const (
	OpRead            = cosmos.OpRead
	OpCreate          = cosmos.OpCreate
	OpUpsert          = cosmos.OpUpsert
	OpReplace         = cosmos.OpReplace
	OpDelete          = cosmos.OpDelete
	OpPatch           = cosmos.OpPatch
	OpQuery           = cosmos.OpQuery // one page of a query
	OpBatch           = cosmos.OpBatch
	OpReadContainer   = cosmos.OpReadContainer
	OpCreateDatabase  = cosmos.OpCreateDatabase
	OpCreateContainer = cosmos.OpCreateContainer
	OpReadAccount     = cosmos.OpReadAccount // the startup account check (account.go)
)

// MaxDocumentBytes is the largest document Cosmos DB stores (2 MiB). A
// payload that would make a larger document is refused with an error
// matching duroxide.ErrTooLarge that holds a *duroxide.TooLargeError; an
// activity result refused so fails the activity (see the durable
// runtime).
const MaxDocumentBytes = 2 * 1024 * 1024

// UnescapeHTMLPolicy returns the azcore per-call policy that sends the
// documents of a transactional batch at their size: the SDK's JSON
// encoding escapes each '<', '>' and '&' to six bytes, so a batch holding
// 1 MB of HTML would exceed Cosmos DB's 2 MB request limit. New adds it to
// the client it builds; add it to ClientOptions.PerCallPolicies of a
// client given to NewWithContainer.
func UnescapeHTMLPolicy() policy.Policy { return cosmos.UnescapeHTMLPolicy() }

// RetryOptions bounds the throttling (429) retries, which the provider
// alone makes (azcore's retries are turned off).
type RetryOptions = cosmos.RetryOptions

// OpStats accumulates the cost of one kind of request.
type OpStats = cosmos.OpStats

// RequestStats is a snapshot of the requests a Provider sent, by kind.
type RequestStats = cosmos.RequestStats

// RequestError is a failed Cosmos request. StatusCode and SubStatus are the
// service's; StatusCode is 0 for transport failures and canceled contexts.
type RequestError = cosmos.Error

// BatchError is a transactional batch the service rolled back (HTTP 207).
// Index is the operation that failed with StatusCode; every other
// operation reported 424 Failed Dependency.
type BatchError = cosmos.BatchError
