package duroxide

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Instance search: the query operators use to find instances by name,
// state, time, parent and id prefix, one page at a time. Providers
// implement ProviderAdmin.SearchInstances; the types, validation, state
// classification and continuation-token envelope live here so every
// provider gives a query the same meaning and rejects the same bad input.

// InstanceState is an instance's coarse state as searches filter and
// report it. It is derived from the stored status of the current
// execution, its output and the blocked mark; it is not stored.
type InstanceState string

// The states. A cancelled instance is stored as Failed with the runtime's
// cancellation text (CanceledOutputPrefix); Failed means every other
// failure. Blocked is a Running instance whose turns the runtime holds back
// (BlockOrchestrationItem). Suspended is a Running instance suspended by
// the Go Client's Suspend (OrchestrationCommit.Suspend); it is not
// Blocked or Running, whatever else holds it. Go names
// spell "canceled" as Go's context does; the values (what the CLI, the
// dashboard and search tokens carry) keep "cancelled".
const (
	InstanceRunning   InstanceState = "running"
	InstanceCompleted InstanceState = "completed"
	InstanceFailed    InstanceState = "failed"
	InstanceCanceled  InstanceState = "cancelled"
	InstanceSuspended InstanceState = "suspended"
	InstanceBlocked   InstanceState = "blocked"
)

// InstanceStates lists every state, for help texts and validation.
func InstanceStates() []InstanceState {
	return []InstanceState{InstanceRunning, InstanceCompleted, InstanceFailed, InstanceCanceled, InstanceSuspended, InstanceBlocked}
}

// IsTerminal reports whether the state is final (completed, failed or
// cancelled): what purge accepts without force.
func (s InstanceState) IsTerminal() bool {
	return s == InstanceCompleted || s == InstanceFailed || s == InstanceCanceled
}

// CanceledOutputPrefix starts the stored output of an instance that failed
// because it was cancelled: the runtime stores the failure's display text,
// "canceled: <reason>" (Rust's AppErrorKind::Cancelled display).
const CanceledOutputPrefix = "canceled: "

// StateOf classifies an instance from what providers store: the current
// execution's status (StatusRunning, ...), its output, and whether the
// runtime marked it blocked or suspended it. ContinuedAsNew is running: a
// new execution follows.
func StateOf(status string, output *string, blocked, suspended bool) InstanceState {
	switch status {
	case StatusCompleted:
		return InstanceCompleted
	case StatusFailed:
		if output != nil && strings.HasPrefix(*output, CanceledOutputPrefix) {
			return InstanceCanceled
		}
		return InstanceFailed
	}
	switch {
	case suspended:
		return InstanceSuspended
	case blocked:
		return InstanceBlocked
	}
	return InstanceRunning
}

// ParseInstanceState reads a state as flags and URLs spell it ("failed",
// any case); anything else is an ErrInvalidInput error.
func ParseInstanceState(s string) (InstanceState, error) {
	st := InstanceState(strings.ToLower(strings.TrimSpace(s)))
	if !slices.Contains(InstanceStates(), st) {
		return "", Kinded(ErrInvalidInput, "parse_instance_state", "unknown instance state %q (known: running, completed, failed, cancelled, suspended, blocked)", s)
	}
	return st, nil
}

// SearchOrder is the order of a search's results.
type SearchOrder int

// The orders. The zero value, newest first, is what an operator usually
// wants. OrderAny is the store's own order: on the Cosmos DB provider the
// only order served by one query request per physical partition, so bulk
// operations use it (docs/costs.md compares the costs).
const (
	OrderCreatedDesc SearchOrder = iota
	OrderCreatedAsc
	OrderAny
)

// String names the order as flags and tokens spell it.
func (o SearchOrder) String() string {
	switch o {
	case OrderCreatedDesc:
		return "created-desc"
	case OrderCreatedAsc:
		return "created-asc"
	case OrderAny:
		return "any"
	}
	return "invalid"
}

// ParseSearchOrder reads an order as String spells it ("created-desc",
// "created-asc", "any"; "" is the default); anything else is an
// ErrInvalidInput error.
func ParseSearchOrder(s string) (SearchOrder, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "created-desc":
		return OrderCreatedDesc, nil
	case "created-asc":
		return OrderCreatedAsc, nil
	case "any":
		return OrderAny, nil
	}
	return 0, Kinded(ErrInvalidInput, "parse_search_order", "unknown order %q (known: created-desc, created-asc, any)", s)
}

// Search page sizes: PageSize 0 means DefaultSearchPageSize; more than
// MaxSearchPageSize is refused.
const (
	DefaultSearchPageSize = 100
	MaxSearchPageSize     = 1000
)

// OutputSnippetChars bounds InstanceSummary.Output (characters).
const OutputSnippetChars = 200

// maxSearchString bounds each string filter (bytes): more than any id a
// store accepts, small enough to keep queries and tokens small.
const maxSearchString = 1024

// InstanceQuery selects instances. Every set criterion must hold (they are
// ANDed); the zero value matches every instance. Times are compared at
// millisecond precision; a From bound is inclusive and a Before bound
// exclusive, so consecutive windows neither overlap nor leave gaps.
type InstanceQuery struct {
	// Name and Version match the orchestration exactly ("" = any).
	Name    string
	Version string
	// States matches any of the listed states (nil or empty = any).
	States []InstanceState
	// CreatedFrom and CreatedBefore bound the creation time (zero = open).
	CreatedFrom   time.Time
	CreatedBefore time.Time
	// CompletedFrom and CompletedBefore bound the time the current
	// execution ended; setting either selects terminal instances only.
	CompletedFrom   time.Time
	CompletedBefore time.Time
	// ParentID selects the direct children of one instance ("" = any).
	ParentID string
	// IDPrefix selects ids starting with it, byte for byte ("" = any).
	IDPrefix string
	// OrderBy orders the results; the zero value is newest first.
	OrderBy SearchOrder
	// PageSize is the most instances one page returns (0 = the default).
	// A page may hold fewer while more remain: only an empty
	// ContinuationToken ends a search.
	PageSize int
	// ContinuationToken resumes a search where the previous page ended; it
	// is valid only for the same criteria and order (PageSize may change).
	// It is opaque but not secret: it holds a position, never data.
	ContinuationToken string
	// CountTotal asks for the number of matching instances as well, which
	// costs a read of every match on stores without server-side counts.
	CountTotal bool
}

// InstanceSummary is one search result: the instance's row, no history.
type InstanceSummary struct {
	InstanceID string
	Name       string
	Version    string
	State      InstanceState
	// Status is the stored status of the current execution
	// (StatusRunning, ...), the finer truth behind State.
	Status      string
	ExecutionID uint64
	ParentID    string // "" for a root instance
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt time.Time // zero unless the current execution ended
	// Output is the start of the current execution's output (for a failed
	// or cancelled instance, its failure text): at most OutputSnippetChars
	// characters.
	Output string
}

// InstancePage is one page of a search.
type InstancePage struct {
	Instances []InstanceSummary
	// ContinuationToken fetches the next page; "" when the search ended.
	// It is opaque: pass it back unchanged in InstanceQuery.
	ContinuationToken string
	// Count is the number of instances matching the criteria (all pages),
	// when InstanceQuery.CountTotal asked for it; nil otherwise.
	Count *int
}

// Size is the page size the query asks for, defaults applied.
func (q InstanceQuery) Size() int {
	if q.PageSize == 0 {
		return DefaultSearchPageSize
	}
	return q.PageSize
}

// Validate reports the first criterion no provider can serve as an
// ErrInvalidInput error: an unknown state or order, a page size out of
// range, a string filter that is not valid UTF-8 or longer than 1 KiB.
func (q InstanceQuery) Validate(op string) error {
	if q.PageSize < 0 || q.PageSize > MaxSearchPageSize {
		return Kinded(ErrInvalidInput, op, "page size %d is out of range 0..%d", q.PageSize, MaxSearchPageSize)
	}
	if q.OrderBy < OrderCreatedDesc || q.OrderBy > OrderAny {
		return Kinded(ErrInvalidInput, op, "unknown order %d", int(q.OrderBy))
	}
	for _, s := range q.States {
		if !slices.Contains(InstanceStates(), s) {
			return Kinded(ErrInvalidInput, op, "unknown instance state %q (known: running, completed, failed, cancelled, suspended, blocked)", string(s))
		}
	}
	for _, f := range []struct{ name, v string }{{"name", q.Name}, {"version", q.Version}, {"parent id", q.ParentID}, {"id prefix", q.IDPrefix}} {
		if !utf8.ValidString(f.v) {
			return Kinded(ErrInvalidInput, op, "%s is not valid UTF-8", f.name)
		}
		if len(f.v) > maxSearchString {
			return Kinded(ErrInvalidInput, op, "%s is %d bytes, more than %d", f.name, len(f.v), maxSearchString)
		}
	}
	return nil
}

// WantsState reports whether the query's state filter admits s.
func (q InstanceQuery) WantsState(s InstanceState) bool {
	return len(q.States) == 0 || slices.Contains(q.States, s)
}

// Matches reports whether s meets every criterion of q (not the paging):
// the reference semantics providers' queries implement.
func (q InstanceQuery) Matches(s InstanceSummary) bool {
	switch {
	case q.Name != "" && s.Name != q.Name,
		q.Version != "" && s.Version != q.Version,
		q.ParentID != "" && s.ParentID != q.ParentID,
		!strings.HasPrefix(s.InstanceID, q.IDPrefix),
		!q.WantsState(s.State),
		!inWindow(s.CreatedAt, q.CreatedFrom, q.CreatedBefore, false):
		return false
	}
	if q.CompletedFrom.IsZero() && q.CompletedBefore.IsZero() {
		return true
	}
	return inWindow(s.CompletedAt, q.CompletedFrom, q.CompletedBefore, true)
}

// inWindow compares t with [from, before) at millisecond precision; a zero
// t is outside every window when required.
func inWindow(t, from, before time.Time, required bool) bool {
	if t.IsZero() {
		return !required && from.IsZero() && before.IsZero()
	}
	ms := t.UnixMilli()
	return (from.IsZero() || ms >= from.UnixMilli()) && (before.IsZero() || ms < before.UnixMilli())
}

// CompareSummaries orders a and b as o asks: by creation time, then by id
// (so equal times still have one order); OrderAny sorts by id.
func (o SearchOrder) CompareSummaries(a, b InstanceSummary) int {
	return o.compareKeys(a.CreatedAt.UnixMilli(), a.InstanceID, b.CreatedAt.UnixMilli(), b.InstanceID)
}

func (o SearchOrder) compareKeys(aCreated int64, aID string, bCreated int64, bID string) int {
	switch o {
	case OrderCreatedDesc:
		return cmp.Or(cmp.Compare(bCreated, aCreated), cmp.Compare(bID, aID))
	case OrderCreatedAsc:
		return cmp.Or(cmp.Compare(aCreated, bCreated), cmp.Compare(aID, bID))
	}
	return cmp.Compare(aID, bID)
}

// SearchCursor is where a search stopped, as a continuation token carries
// it: the last instance returned (for keyset paging) and/or the store's own
// continuation.
type SearchCursor struct {
	// CreatedAt (ms) and ID are the last instance returned.
	CreatedAt int64  `json:"c,omitempty"`
	ID        string `json:"i,omitempty"`
	// Store is a store's own continuation (e.g. Cosmos DB's token).
	Store string `json:"s,omitempty"`
}

// After reports whether an instance created at created (ms) with id comes
// after the cursor in order o.
func (c SearchCursor) After(o SearchOrder, created int64, id string) bool {
	return o.compareKeys(created, id, c.CreatedAt, c.ID) > 0
}

// tokenEnvelope is a continuation token's content: the cursor plus a
// fingerprint of the criteria it belongs to.
type tokenEnvelope struct {
	Version     int    `json:"v"`
	Fingerprint string `json:"f"`
	SearchCursor
}

// fingerprint identifies the criteria and order (not the page size or
// token), so a token cannot resume a different search.
func (q InstanceQuery) fingerprint() string {
	states := make([]string, 0, len(q.States))
	for _, s := range q.States {
		states = append(states, string(s))
	}
	slices.Sort(states)
	states = slices.Compact(states)
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	key, _ := json.Marshal([]any{q.Name, q.Version, states, ms(q.CreatedFrom), ms(q.CreatedBefore),
		ms(q.CompletedFrom), ms(q.CompletedBefore), q.ParentID, q.IDPrefix, int(q.OrderBy)})
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:12])
}

// EncodeCursor makes the continuation token that resumes q at c.
func (q InstanceQuery) EncodeCursor(c SearchCursor) string {
	raw, _ := json.Marshal(tokenEnvelope{Version: 1, Fingerprint: q.fingerprint(), SearchCursor: c})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// DecodeCursor reads q.ContinuationToken: ok is false for the first page.
// A token that is not one of EncodeCursor's, or belongs to other criteria,
// is an ErrInvalidInput error.
func (q InstanceQuery) DecodeCursor(op string) (c SearchCursor, ok bool, err error) {
	if q.ContinuationToken == "" {
		return SearchCursor{}, false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.ContinuationToken)
	var env tokenEnvelope
	if err != nil || json.Unmarshal(raw, &env) != nil || env.Version != 1 {
		return SearchCursor{}, false, Kinded(ErrInvalidInput, op, "continuation token is not one a search returned")
	}
	if env.Fingerprint != q.fingerprint() {
		return SearchCursor{}, false, Kinded(ErrInvalidInput, op, "continuation token belongs to a search with other criteria or order")
	}
	return env.SearchCursor, true, nil
}

// Snippet cuts an output to OutputSnippetChars characters.
func Snippet(output *string) string {
	if output == nil {
		return ""
	}
	s := *output
	if utf8.RuneCountInString(s) <= OutputSnippetChars {
		return s
	}
	return string([]rune(s)[:OutputSnippetChars])
}
