package cosmos

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/cosmoshook"
)

// This file is the only place that calls azcosmos for data-plane work.
// Every request passes through Store.Do, which counts it, runs the test
// hooks, applies our throttling budget and turns failures into *Error
// values, so error mapping, retries, request accounting and fault injection
// each live in exactly one place. The options each request is sent with
// carry its priority level, read from its context (priority.go).

// Op names a kind of Cosmos request, for counting and fault injection.
// It is defined in internal/cosmoshook, with Call and Hooks, so that the
// test seam can name them without linking the Azure SDK.
type Op = cosmoshook.Op

// The request kinds the provider issues.
const (
	OpRead            Op = "read"
	OpCreate          Op = "create"
	OpUpsert          Op = "upsert"
	OpReplace         Op = "replace"
	OpDelete          Op = "delete"
	OpPatch           Op = "patch"
	OpQuery           Op = "query" // one page of a query
	OpBatch           Op = "batch"
	OpReadContainer   Op = "read_container"
	OpCreateDatabase  Op = "create_database"
	OpCreateContainer Op = "create_container"
	OpReadAccount     Op = "read_account" // the startup account check (the root package's account.go)
)

var allOps = []Op{OpRead, OpCreate, OpUpsert, OpReplace, OpDelete, OpPatch, OpQuery, OpBatch, OpReadContainer, OpCreateDatabase, OpCreateContainer, OpReadAccount}

// Call describes one Cosmos request, as seen by Hooks.
type Call = cosmoshook.Call

// Hooks let tests inject faults at the Cosmos boundary (see
// cosmoshook.Hooks). They must be safe for concurrent use.
type Hooks = cosmoshook.Hooks

// RetryOptions bounds the throttling (429) retries, which only the store
// makes (retry.go): azcore's retries are turned off, so these bound every
// request the service sees. Only 429 is retried here: it
// guarantees the request was not executed, whereas a 408, 503 or reset on
// a write has an unknown outcome and is left to callers, whose writes are
// idempotent by design.
type RetryOptions struct {
	// MaxThrottleRetries is how many more times a throttled request is
	// sent. Default 9; negative disables.
	MaxThrottleRetries int
	// MaxThrottleWait caps the total time spent waiting on throttling for
	// one request. Default 30s. A wait that would end past the request's
	// context deadline is not started either.
	MaxThrottleWait time.Duration
}

// RetryDefaults fills the zero fields of r with the defaults.
func RetryDefaults(r RetryOptions) RetryOptions {
	if r.MaxThrottleRetries == 0 {
		r.MaxThrottleRetries = 9
	}
	if r.MaxThrottleWait == 0 {
		r.MaxThrottleWait = 30 * time.Second
	}
	return r
}

// OpStats accumulates the cost of one kind of request.
type OpStats struct {
	Requests      int64
	Failures      int64
	BytesRead     int64   // response payload bytes (documents, query pages)
	RequestCharge float64 // request units reported by Cosmos
}

// RequestStats is a snapshot of the requests a Provider sent, by kind.
type RequestStats map[Op]OpStats

// Total sums requests over all kinds.
func (s RequestStats) Total() int64 {
	var n int64
	for _, v := range s {
		n += v.Requests
	}
	return n
}

type opCounter struct {
	requests, failures, bytes atomic.Int64
	chargeMilli               atomic.Int64
	throttles, retries        atomic.Int64 // see Counters
}

// Store is the thin layer over one Cosmos container.
type Store struct {
	c     *azcosmos.ContainerClient
	retry RetryOptions
	// sdkRetry is azcore's retry options for every request (retry.go).
	sdkRetry policy.RetryOptions
	hooks    *Hooks
	counts   map[Op]*opCounter
	// Sleep waits between throttling retries; tests replace it to observe
	// the waits without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
	// tokens carries session tokens per partition (sessiontokens.go).
	tokens *sessionTokens
	// background is the level Low requests are sent with (nil: none), and
	// caller reads a caller's own priority from a context (priority.go).
	background *azcosmos.PriorityLevel
	caller     func(context.Context) Priority
}

// NewStore wraps c. hooks may be nil.
func NewStore(c *azcosmos.ContainerClient, retry RetryOptions, hooks *Hooks) *Store {
	s := &Store{c: c, retry: RetryDefaults(retry), sdkRetry: SDKRetryOptions(policy.RetryOptions{}), hooks: hooks, counts: map[Op]*opCounter{}, Sleep: sleepCtx, tokens: newSessionTokens()}
	for _, op := range allOps {
		s.counts[op] = &opCounter{}
	}
	s.SetBackgroundPriority(azcosmos.PriorityLevelLow)
	return s
}

// Stats snapshots the request counters of the kinds sent at least once.
func (s *Store) Stats() RequestStats {
	out := RequestStats{}
	for op, c := range s.counts {
		if n := c.requests.Load(); n > 0 {
			out[op] = OpStats{Requests: n, Failures: c.failures.Load(), BytesRead: c.bytes.Load(), RequestCharge: float64(c.chargeMilli.Load()) / 1000}
		}
	}
	return out
}

// OpCounters is one kind's counters including the throttling ones, which
// RequestStats does not carry (telemetry exports them).
type OpCounters struct {
	OpStats
	Throttles int64 // requests answered 429
	Retries   int64 // throttled requests sent again by Do
}

// Counters snapshots every kind's counters, sent or not.
func (s *Store) Counters() map[Op]OpCounters {
	out := make(map[Op]OpCounters, len(s.counts))
	for op, c := range s.counts {
		out[op] = OpCounters{
			OpStats:   OpStats{Requests: c.requests.Load(), Failures: c.failures.Load(), BytesRead: c.bytes.Load(), RequestCharge: float64(c.chargeMilli.Load()) / 1000},
			Throttles: c.throttles.Load(), Retries: c.retries.Load(),
		}
	}
	return out
}

// ResetStats zeroes every counter.
func (s *Store) ResetStats() {
	for _, c := range s.counts {
		c.requests.Store(0)
		c.failures.Store(0)
		c.bytes.Store(0)
		c.chargeMilli.Store(0)
		c.throttles.Store(0)
		c.retries.Store(0)
	}
}

// Result is what a single request reports back to Do for accounting.
type Result struct {
	Bytes  int
	Charge float32
}

// Do runs one request with hooks, accounting, throttling retries and error
// classification. The point operations below use it; callers outside this
// package use it only for requests the SDK cannot send (the account read).
func (s *Store) Do(ctx context.Context, call Call, f func(ctx context.Context) (Result, error)) error {
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		err := s.once(ctx, call, f)
		if err == nil {
			return nil
		}
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(ce, ErrThrottled) {
			return err
		}
		s.counts[call.Op].throttles.Add(1)
		d, ok := s.throttleWait(ctx, ce, attempt, waited)
		if !ok {
			return err
		}
		waited += d
		if serr := s.Sleep(ctx, d); serr != nil {
			return err
		}
		s.counts[call.Op].retries.Add(1)
	}
}

// once sends the request once (as far as the store is concerned: the
// SDK's Cosmos policy may make several attempts, each counted).
func (s *Store) once(ctx context.Context, call Call, f func(ctx context.Context) (Result, error)) error {
	c := s.counts[call.Op]
	if s.hooks != nil && s.hooks.Before != nil {
		if err := s.hooks.Before(ctx, call); err != nil {
			c.requests.Add(1)
			c.failures.Add(1)
			return Classify(call, err)
		}
	}
	actx, attempts := s.withAttempts(ctx)
	r, err := f(actx)
	// All attempts but the last failed (the SDK retries only failures).
	n := max(attempts.Load(), 1)
	c.requests.Add(n)
	c.failures.Add(n - 1)
	c.bytes.Add(int64(r.Bytes))
	c.chargeMilli.Add(int64(r.Charge * 1000))
	if s.hooks != nil && s.hooks.After != nil {
		err = s.hooks.After(ctx, call, err)
	}
	if err != nil {
		c.failures.Add(1)
		return Classify(call, err)
	}
	return nil
}

// observe records the session token of a response on partition (from the
// response, or from the error's raw response when the request failed).
func (s *Store) observe(partition string, token *string, err error) {
	if err != nil {
		s.tokens.observeErr(partition, err)
		return
	}
	if token != nil {
		s.tokens.observe(partition, *token)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// itemOptions builds ItemOptions with content-on-write always set
// explicitly: any non-nil ItemOptions overrides the client-level setting
// with its zero value, so leaving it implicit silently drops bodies. The
// priority level is ctx's (priority.go); nil leaves the client's.
func (s *Store) itemOptions(ctx context.Context, ifMatch *azcore.ETag, wantBody bool) *azcosmos.ItemOptions {
	return &azcosmos.ItemOptions{IfMatchEtag: ifMatch, EnableContentResponseOnWrite: wantBody, PriorityLevel: s.level(ctx)}
}

func pk(instance string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(instance) }

// Read fetches one document. A missing document is an *Error matching
// ErrNotFound.
func (s *Store) Read(ctx context.Context, partition, id string) ([]byte, azcore.ETag, error) {
	var body []byte
	var etag azcore.ETag
	err := s.Do(ctx, Call{Op: OpRead, PartitionKey: partition, ID: id}, func(ctx context.Context) (Result, error) {
		o := s.itemOptions(ctx, nil, false)
		o.SessionToken = s.tokens.get(partition)
		r, err := s.c.ReadItem(ctx, pk(partition), id, o)
		s.observe(partition, r.SessionToken, err)
		body, etag = r.Value, r.ETag
		return Result{Bytes: len(r.Value), Charge: r.RequestCharge}, err
	})
	return body, etag, err
}

// Create writes a new document; ErrConflict when its id exists.
func (s *Store) Create(ctx context.Context, partition string, doc []byte) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.Do(ctx, Call{Op: OpCreate, PartitionKey: partition}, func(ctx context.Context) (Result, error) {
		r, err := s.c.CreateItem(ctx, pk(partition), doc, s.itemOptions(ctx, nil, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return Result{Charge: r.RequestCharge}, err
	})
	return etag, err
}

// Upsert writes doc whether or not it exists (If-Match when ifMatch is set).
func (s *Store) Upsert(ctx context.Context, partition string, doc []byte, ifMatch *azcore.ETag) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.Do(ctx, Call{Op: OpUpsert, PartitionKey: partition}, func(ctx context.Context) (Result, error) {
		r, err := s.c.UpsertItem(ctx, pk(partition), doc, s.itemOptions(ctx, ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return Result{Charge: r.RequestCharge}, err
	})
	return etag, err
}

// Replace overwrites an existing document (If-Match when ifMatch is set).
func (s *Store) Replace(ctx context.Context, partition, id string, doc []byte, ifMatch *azcore.ETag) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.Do(ctx, Call{Op: OpReplace, PartitionKey: partition, ID: id}, func(ctx context.Context) (Result, error) {
		r, err := s.c.ReplaceItem(ctx, pk(partition), id, doc, s.itemOptions(ctx, ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return Result{Charge: r.RequestCharge}, err
	})
	return etag, err
}

// Delete removes a document (If-Match when ifMatch is set).
func (s *Store) Delete(ctx context.Context, partition, id string, ifMatch *azcore.ETag) error {
	return s.Do(ctx, Call{Op: OpDelete, PartitionKey: partition, ID: id}, func(ctx context.Context) (Result, error) {
		r, err := s.c.DeleteItem(ctx, pk(partition), id, s.itemOptions(ctx, ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		return Result{Charge: r.RequestCharge}, err
	})
}

// Patch applies ops; with wantBody the patched document is returned.
func (s *Store) Patch(ctx context.Context, partition, id string, ops azcosmos.PatchOperations, ifMatch *azcore.ETag, wantBody bool) ([]byte, azcore.ETag, error) {
	var body []byte
	var etag azcore.ETag
	err := s.Do(ctx, Call{Op: OpPatch, PartitionKey: partition, ID: id}, func(ctx context.Context) (Result, error) {
		r, err := s.c.PatchItem(ctx, pk(partition), id, ops, s.itemOptions(ctx, ifMatch, wantBody))
		s.observe(partition, r.SessionToken, err)
		body, etag = r.Value, r.ETag
		return Result{Bytes: len(r.Value), Charge: r.RequestCharge}, err
	})
	return body, etag, err
}

// QueryParams is a convenience for building parameter lists.
type QueryParams []azcosmos.QueryParameter

// Add appends the parameter name (with its '@') bound to v.
func (q QueryParams) Add(name string, v any) QueryParams {
	return append(q, azcosmos.QueryParameter{Name: name, Value: v})
}

// QueryOptions bounds a query. PageSize 0 means the service default.
// MaxPages 0 means all pages. A nil Partition means cross-partition: only
// plain filters and projections are allowed there (the gateway refuses
// ORDER BY, TOP, aggregates and DISTINCT across partitions).
type QueryOptions struct {
	Partition *string
	PageSize  int32
	MaxPages  int
}

// Query runs a parameterised query and calls each for every item until it
// returns false or the pages run out. It returns whether more results were
// left unread.
func (s *Store) Query(ctx context.Context, text string, params QueryParams, o QueryOptions, each func(item []byte) bool) (more bool, err error) {
	var cont *string
	for pages := 0; pages == 0 || cont != nil; pages++ {
		if o.MaxPages > 0 && pages >= o.MaxPages {
			return true, nil
		}
		page, err := s.page(ctx, text, params, o, cont)
		if err != nil {
			return false, err
		}
		cont = page.ContinuationToken
		for _, it := range page.Items {
			if !each(it) {
				return true, nil
			}
		}
	}
	return false, nil
}

// QueryPages runs a parameterised query from a continuation token (nil:
// from the start), reading at most maxPages pages (0: no limit) while page
// returns true. It returns the continuation after the last page read (nil
// when the query ended) and how many pages it read. Pages may be short or
// empty while a continuation remains: a cross-partition query is served one
// partition key range per page. A token that no request header can carry
// (a control character: the service never issues one, so it was tampered
// with) is ErrBadRequest, as the service answers a token it cannot read,
// not the transport error the HTTP client would report.
func (s *Store) QueryPages(ctx context.Context, text string, params QueryParams, o QueryOptions, token *string, page func(items [][]byte) bool) (next *string, pages int, err error) {
	if token != nil && !headerSafe(*token) {
		return nil, 0, fmt.Errorf("cosmos query: the continuation token holds a control character no request header can carry: %w", ErrBadRequest)
	}
	cont := token
	for first := true; first || cont != nil; first = false {
		if o.MaxPages > 0 && pages >= o.MaxPages {
			break
		}
		resp, err := s.page(ctx, text, params, o, cont)
		if err != nil {
			return nil, pages, err
		}
		pages++
		next, cont = resp.ContinuationToken, resp.ContinuationToken
		if !page(resp.Items) {
			break
		}
	}
	return next, pages, nil
}

// page fetches one page of a query, from continuation cont (nil: the
// first page), retrying throttling like any request. Every attempt builds
// a new pager: azcore's Pager is terminal once a fetch failed (NextPage
// then returns the stored error without sending anything), so a throttled
// page can only be sent again from its continuation token.
func (s *Store) page(ctx context.Context, text string, params QueryParams, o QueryOptions, cont *string) (azcosmos.QueryItemsResponse, error) {
	key := azcosmos.NewPartitionKey()
	call := Call{Op: OpQuery}
	if o.Partition != nil {
		key = pk(*o.Partition)
		call.PartitionKey = *o.Partition
	}
	var resp azcosmos.QueryItemsResponse
	err := s.Do(ctx, call, func(ctx context.Context) (Result, error) {
		qo := &azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: o.PageSize, ContinuationToken: cont, PriorityLevel: s.level(ctx)}
		qo.SessionToken = s.tokens.get(call.PartitionKey) // "" = cross-partition; see sessiontokens.go
		var err error
		resp, err = s.c.NewQueryItemsPager(text, key, qo).NextPage(ctx)
		var tok string
		if resp.RawResponse != nil {
			tok = resp.RawResponse.Header.Get("x-ms-session-token")
		}
		s.observe(call.PartitionKey, &tok, err)
		n := 0
		for _, it := range resp.Items {
			n += len(it)
		}
		return Result{Bytes: n, Charge: resp.RequestCharge}, err
	})
	return resp, err
}

// headerSafe reports whether v can be sent as an HTTP header value (the
// rule of net/http: no control character but the horizontal tab).
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}
