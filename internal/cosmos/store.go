package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// This file is the only place that calls azcosmos for data-plane work.
// Every request passes through store.do, which counts it, runs the test
// hooks, applies our throttling budget and turns failures into *CosmosError
// values, so error mapping, retries, request accounting and fault injection
// each live in exactly one place.

// Op names a kind of Cosmos request, for counting and fault injection.
type Op string

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
	OpReadAccount     Op = "read_account" // the startup account check (account.go)
)

var allOps = []Op{OpRead, OpCreate, OpUpsert, OpReplace, OpDelete, OpPatch, OpQuery, OpBatch, OpReadContainer, OpCreateDatabase, OpCreateContainer, OpReadAccount}

// Call describes one Cosmos request, as seen by Hooks.
type Call struct {
	Op           Op
	PartitionKey string // "" for cross-partition queries and control-plane calls
	ID           string // item id for point operations
	Operations   int    // number of operations in a batch
}

// Hooks let tests inject faults at the Cosmos boundary. Before runs before
// a request is sent; a non-nil error is returned as if Cosmos had failed
// and nothing is sent. After runs once a request returned; a non-nil error
// replaces the result, which simulates a response lost after the write
// was applied. Hooks must be safe for concurrent use.
type Hooks struct {
	Before func(ctx context.Context, c Call) error
	After  func(ctx context.Context, c Call, err error) error
}

// RetryOptions bounds our own throttling (429) retries, which run above the
// SDK's (azcore retries a 429 three more times by default). Only 429 is
// retried here: it guarantees the request was not executed, whereas a 408,
// 503 or reset on a write has an unknown outcome and is left to callers,
// whose writes are idempotent by design.
type RetryOptions struct {
	// MaxThrottleRetries is how many more times a throttled request is sent
	// after the SDK gave up. Default 9; negative disables.
	MaxThrottleRetries int
	// MaxThrottleWait caps the total time spent waiting on throttling for
	// one request. Default 30s.
	MaxThrottleWait time.Duration
}

func (r RetryOptions) withDefaults() RetryOptions {
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
	throttles, retries        atomic.Int64 // telemetry.go
}

// store is the thin layer over one Cosmos container.
type store struct {
	c       *azcosmos.ContainerClient
	retry   RetryOptions
	hooks   *Hooks
	counts  map[Op]*opCounter
	sleepFn func(ctx context.Context, d time.Duration) error
	// tokens carries session tokens per partition (sessiontokens.go).
	tokens *sessionTokens
}

func newStore(c *azcosmos.ContainerClient, retry RetryOptions, hooks *Hooks) *store {
	s := &store{c: c, retry: retry.withDefaults(), hooks: hooks, counts: map[Op]*opCounter{}, sleepFn: sleepCtx, tokens: newSessionTokens()}
	for _, op := range allOps {
		s.counts[op] = &opCounter{}
	}
	return s
}

func (s *store) stats() RequestStats {
	out := RequestStats{}
	for op, c := range s.counts {
		if n := c.requests.Load(); n > 0 {
			out[op] = OpStats{Requests: n, Failures: c.failures.Load(), BytesRead: c.bytes.Load(), RequestCharge: float64(c.chargeMilli.Load()) / 1000}
		}
	}
	return out
}

func (s *store) resetStats() {
	for _, c := range s.counts {
		c.requests.Store(0)
		c.failures.Store(0)
		c.bytes.Store(0)
		c.chargeMilli.Store(0)
		c.throttles.Store(0)
		c.retries.Store(0)
	}
}

// result is what a single request reports back to do for accounting.
type result struct {
	bytes  int
	charge float32
}

// do runs one request with hooks, accounting, throttling retries and error
// classification.
func (s *store) do(ctx context.Context, call Call, f func(ctx context.Context) (result, error)) error {
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		err := s.once(ctx, call, f)
		if err == nil {
			return nil
		}
		var ce *CosmosError
		if !errors.As(err, &ce) || ce.StatusCode != http.StatusTooManyRequests {
			return err
		}
		s.counts[call.Op].throttles.Add(1)
		if attempt >= s.retry.MaxThrottleRetries {
			return err
		}
		d := ce.RetryAfter
		if d <= 0 {
			d = time.Duration(100<<min(attempt, 6)) * time.Millisecond
		}
		if waited+d > s.retry.MaxThrottleWait {
			return err
		}
		waited += d
		if serr := s.sleepFn(ctx, d); serr != nil {
			return err
		}
		s.counts[call.Op].retries.Add(1)
	}
}

func (s *store) once(ctx context.Context, call Call, f func(ctx context.Context) (result, error)) error {
	c := s.counts[call.Op]
	if s.hooks != nil && s.hooks.Before != nil {
		if err := s.hooks.Before(ctx, call); err != nil {
			c.requests.Add(1)
			c.failures.Add(1)
			return classify(call, err)
		}
	}
	r, err := f(ctx)
	c.requests.Add(1)
	c.bytes.Add(int64(r.bytes))
	c.chargeMilli.Add(int64(r.charge * 1000))
	if s.hooks != nil && s.hooks.After != nil {
		err = s.hooks.After(ctx, call, err)
	}
	if err != nil {
		c.failures.Add(1)
		return classify(call, err)
	}
	return nil
}

// observe records the session token of a response on partition (from the
// response, or from the error's raw response when the request failed).
func (s *store) observe(partition string, token *string, err error) {
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
// with its zero value, so leaving it implicit silently drops bodies.
func itemOptions(ifMatch *azcore.ETag, wantBody bool) *azcosmos.ItemOptions {
	return &azcosmos.ItemOptions{IfMatchEtag: ifMatch, EnableContentResponseOnWrite: wantBody}
}

func pk(instance string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(instance) }

// read fetches one document. A missing document is a *CosmosError with
// StatusCode 404 (see isNotFound).
func (s *store) read(ctx context.Context, partition, id string) ([]byte, azcore.ETag, error) {
	var body []byte
	var etag azcore.ETag
	err := s.do(ctx, Call{Op: OpRead, PartitionKey: partition, ID: id}, func(ctx context.Context) (result, error) {
		o := itemOptions(nil, false)
		o.SessionToken = s.tokens.get(partition)
		r, err := s.c.ReadItem(ctx, pk(partition), id, o)
		s.observe(partition, r.SessionToken, err)
		body, etag = r.Value, r.ETag
		return result{bytes: len(r.Value), charge: r.RequestCharge}, err
	})
	return body, etag, err
}

func (s *store) create(ctx context.Context, partition string, doc []byte) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.do(ctx, Call{Op: OpCreate, PartitionKey: partition}, func(ctx context.Context) (result, error) {
		r, err := s.c.CreateItem(ctx, pk(partition), doc, itemOptions(nil, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return result{charge: r.RequestCharge}, err
	})
	return etag, err
}

func (s *store) upsert(ctx context.Context, partition string, doc []byte, ifMatch *azcore.ETag) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.do(ctx, Call{Op: OpUpsert, PartitionKey: partition}, func(ctx context.Context) (result, error) {
		r, err := s.c.UpsertItem(ctx, pk(partition), doc, itemOptions(ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return result{charge: r.RequestCharge}, err
	})
	return etag, err
}

func (s *store) replace(ctx context.Context, partition, id string, doc []byte, ifMatch *azcore.ETag) (azcore.ETag, error) {
	var etag azcore.ETag
	err := s.do(ctx, Call{Op: OpReplace, PartitionKey: partition, ID: id}, func(ctx context.Context) (result, error) {
		r, err := s.c.ReplaceItem(ctx, pk(partition), id, doc, itemOptions(ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		etag = r.ETag
		return result{charge: r.RequestCharge}, err
	})
	return etag, err
}

func (s *store) delete(ctx context.Context, partition, id string, ifMatch *azcore.ETag) error {
	return s.do(ctx, Call{Op: OpDelete, PartitionKey: partition, ID: id}, func(ctx context.Context) (result, error) {
		r, err := s.c.DeleteItem(ctx, pk(partition), id, itemOptions(ifMatch, false))
		s.observe(partition, r.SessionToken, err)
		return result{charge: r.RequestCharge}, err
	})
}

// patch applies ops; with wantBody the patched document is returned.
func (s *store) patch(ctx context.Context, partition, id string, ops azcosmos.PatchOperations, ifMatch *azcore.ETag, wantBody bool) ([]byte, azcore.ETag, error) {
	var body []byte
	var etag azcore.ETag
	err := s.do(ctx, Call{Op: OpPatch, PartitionKey: partition, ID: id}, func(ctx context.Context) (result, error) {
		r, err := s.c.PatchItem(ctx, pk(partition), id, ops, itemOptions(ifMatch, wantBody))
		s.observe(partition, r.SessionToken, err)
		body, etag = r.Value, r.ETag
		return result{bytes: len(r.Value), charge: r.RequestCharge}, err
	})
	return body, etag, err
}

// queryParams is a convenience for building parameter lists.
type queryParams []azcosmos.QueryParameter

func (q queryParams) add(name string, v any) queryParams {
	return append(q, azcosmos.QueryParameter{Name: name, Value: v})
}

// queryOptions bounds a query. PageSize 0 means the service default.
// MaxPages 0 means all pages. A nil Partition means cross-partition: only
// plain filters and projections are allowed there (the gateway refuses
// ORDER BY, TOP, aggregates and DISTINCT across partitions).
type queryOptions struct {
	Partition *string
	PageSize  int32
	MaxPages  int
}

// query runs a parameterised query and calls each for every item until it
// returns false or the pages run out. It returns whether more results were
// left unread.
func (s *store) query(ctx context.Context, text string, params queryParams, o queryOptions, each func(item []byte) bool) (more bool, err error) {
	key := azcosmos.NewPartitionKey()
	call := Call{Op: OpQuery}
	if o.Partition != nil {
		key = pk(*o.Partition)
		call.PartitionKey = *o.Partition
	}
	qo := &azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: o.PageSize}
	qo.SessionToken = s.tokens.get(call.PartitionKey) // "" = cross-partition; see sessiontokens.go
	pager := s.c.NewQueryItemsPager(text, key, qo)
	for pages := 0; pager.More(); pages++ {
		if o.MaxPages > 0 && pages >= o.MaxPages {
			return true, nil
		}
		var page azcosmos.QueryItemsResponse
		err := s.do(ctx, call, func(ctx context.Context) (result, error) {
			var err error
			page, err = pager.NextPage(ctx)
			var tok string
			if page.RawResponse != nil {
				tok = page.RawResponse.Header.Get("x-ms-session-token")
			}
			s.observe(call.PartitionKey, &tok, err)
			n := 0
			for _, it := range page.Items {
				n += len(it)
			}
			return result{bytes: n, charge: page.RequestCharge}, err
		})
		if err != nil {
			return false, err
		}
		for _, it := range page.Items {
			if !each(it) {
				return true, nil
			}
		}
	}
	return false, nil
}

// queryPages runs a parameterised query from a continuation token (nil:
// from the start), reading at most maxPages pages (0: no limit) while page
// returns true. It returns the continuation after the last page read (nil
// when the query ended) and how many pages it read. Pages may be short or
// empty while a continuation remains: a cross-partition query is served one
// partition key range per page.
func (s *store) queryPages(ctx context.Context, text string, params queryParams, o queryOptions, token *string, page func(items [][]byte) bool) (next *string, pages int, err error) {
	key := azcosmos.NewPartitionKey()
	call := Call{Op: OpQuery}
	if o.Partition != nil {
		key = pk(*o.Partition)
		call.PartitionKey = *o.Partition
	}
	qo := &azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: o.PageSize, ContinuationToken: token}
	qo.SessionToken = s.tokens.get(call.PartitionKey) // "" = cross-partition; see sessiontokens.go
	pager := s.c.NewQueryItemsPager(text, key, qo)
	for pager.More() && (o.MaxPages <= 0 || pages < o.MaxPages) {
		var resp azcosmos.QueryItemsResponse
		err := s.do(ctx, call, func(ctx context.Context) (result, error) {
			var err error
			resp, err = pager.NextPage(ctx)
			var tok string
			if resp.RawResponse != nil {
				tok = resp.RawResponse.Header.Get("x-ms-session-token")
			}
			s.observe(call.PartitionKey, &tok, err)
			n := 0
			for _, it := range resp.Items {
				n += len(it)
			}
			return result{bytes: n, charge: resp.RequestCharge}, err
		})
		if err != nil {
			return nil, pages, err
		}
		pages++
		next = resp.ContinuationToken
		if !page(resp.Items) {
			break
		}
	}
	return next, pages, nil
}

// CosmosError is a failed Cosmos request. StatusCode and SubStatus are the
// service's; StatusCode is 0 for transport failures and canceled contexts.
type CosmosError struct {
	Call       Call
	StatusCode int
	SubStatus  int
	RetryAfter time.Duration
	ActivityID string
	// Message is the service's explanation, when it sent one.
	Message string
	Err     error
}

func (e *CosmosError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("cosmos %s: %v", e.Call.Op, e.Err)
	}
	msg := fmt.Sprintf("cosmos %s: status %d", e.Call.Op, e.StatusCode)
	if e.SubStatus != 0 {
		msg += fmt.Sprintf(" (substatus %d)", e.SubStatus)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.ActivityID != "" {
		msg += " (activity " + e.ActivityID + ")"
	}
	return msg
}

func (e *CosmosError) Unwrap() error { return e.Err }

// Retryable reports whether repeating the request can succeed. See the
// README's error table for the reasoning behind each status.
func (e *CosmosError) Retryable() bool {
	switch e.StatusCode {
	case 0:
		// Transport failure or canceled context. Cancellation is not worth
		// retrying; everything else (reset, timeout, DNS) is transient.
		return !errors.Is(e.Err, context.Canceled)
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusGone,
		449, // RetryWith: concurrent update in the service
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusPreconditionFailed:
		// An ETag race: re-reading and trying again can succeed. Callers
		// for which 412 means "your lock is gone" map it to permanent.
		return true
	case http.StatusForbidden:
		return e.SubStatus == 3 || e.SubStatus == 1008 // write forbidden / account not found during failover
	}
	return false
}

// classify turns an error from azcosmos (or a hook) into *CosmosError.
func classify(call Call, err error) error {
	var ce *CosmosError
	if errors.As(err, &ce) {
		if ce.Call.Op == "" {
			ce.Call = call
		}
		return ce
	}
	out := &CosmosError{Call: call, Err: err}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		out.StatusCode = re.StatusCode
		var msgActivity string
		out.Message, msgActivity = serviceMessage(re.RawResponse)
		out.ActivityID = msgActivity
		if re.RawResponse != nil {
			h := re.RawResponse.Header
			out.SubStatus, _ = strconv.Atoi(h.Get("x-ms-substatus"))
			if id := h.Get("x-ms-activity-id"); id != "" {
				out.ActivityID = id
			}
			if ms, perr := strconv.ParseFloat(h.Get("x-ms-retry-after-ms"), 64); perr == nil {
				out.RetryAfter = time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	return out
}

func statusOf(err error) int {
	var ce *CosmosError
	if errors.As(err, &ce) {
		return ce.StatusCode
	}
	return 0
}

func isNotFound(err error) bool     { return statusOf(err) == http.StatusNotFound }
func isConflict(err error) bool     { return statusOf(err) == http.StatusConflict }
func isPrecondition(err error) bool { return statusOf(err) == http.StatusPreconditionFailed }

// maxMessageBytes bounds the service message kept on an error, so logs
// stay readable; the ActivityId is kept even when the rest is cut.
const maxMessageBytes = 1024

// serviceMessage decodes the service's {"code","message"} error body as
// JSON (escapes such as \r\n and \" become what they stand for), folds
// its line breaks into "; " so one error stays one log line, and bounds it
// on a UTF-8 boundary. It returns the ActivityId the message names, which
// the gateway repeats there, for responses whose header lacks it.
func serviceMessage(resp *http.Response) (msg, activityID string) {
	if resp == nil {
		return "", ""
	}
	body, err := runtime.Payload(resp)
	if err != nil || len(body) == 0 {
		return "", ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "", ""
	}
	return tidyMessage(e.Message)
}

func tidyMessage(m string) (msg, activityID string) {
	lines := strings.FieldsFunc(m, func(r rune) bool { return r == '\r' || r == '\n' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	m = strings.Join(slices.DeleteFunc(lines, func(s string) bool { return s == "" }), "; ")
	if i := strings.Index(m, "ActivityId: "); i >= 0 {
		rest := m[i+len("ActivityId: "):]
		if j := strings.IndexAny(rest, ",; "); j >= 0 {
			rest = rest[:j]
		}
		activityID = rest
	}
	if len(m) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(m[cut]) {
			cut--
		}
		m = m[:cut] + "…"
		if activityID != "" && !strings.Contains(m, activityID) {
			m += " (ActivityId: " + activityID + ")"
		}
	}
	return m, activityID
}
