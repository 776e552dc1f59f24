package cosmos

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Read-your-writes on a real account.
//
// Under Session consistency the service only promises that a read sees a
// write when the read carries a session token at least as new as that
// write's. A read without one may be served by any replica of the
// partition, and the fourth replica of a quorum write (or a read region)
// can be behind. azcosmos v1.5.0 keeps no session-token cache:
// ItemOptions.SessionToken and QueryOptions.SessionToken are forwarded only
// when the caller sets them (Azure/azure-sdk-for-go issues #18987 and
// #25118), unlike the .NET and Java SDKs, whose clients carry tokens per
// partition key range automatically. Without tokens a history or KV read
// that follows a lock write could miss the last committed turn; the runtime
// would replay a stale history and commit on top of it. No ETag catches
// that: the lock write itself went to the primary and succeeded.
//
// So the store remembers the session token of every response, per logical
// partition (one instance), and sends it on every point read and every
// query scoped to that partition. Because a fetch's lock write is itself a
// response on the partition, every read of the turn that follows carries a
// token at least as new as the lock, and the lock write was applied after
// every earlier commit to the partition (by any process), so the turn loads
// everything committed before its lock.
//
// Cross-partition queries (work discovery, outbox and lease sweeps, admin
// listings) carry the merge of every token this process has seen: a session
// token holds one entry per partition key range, and the gateway applies to
// each range the entry for it, so a process sees its own writes there too
// (an enqueue is found by the next fetch of the same process, as the
// contract's tests expect). Writes of other processes may be missed by
// them, and that staleness is harmless: a stale discovery page only costs a
// poll (new work is found by a later one) or a failed lock (the lock write
// is conditional on the ETag, so a stale candidate is refused with 412 and
// skipped), and admin listings are documented as eventually consistent.

// sessionTokenTTL is how long an unused partition's token is kept. Past it
// the partition's writes have long reached every replica (replication lag
// is seconds even across regions), so forgetting the token is safe and
// keeps memory bounded by the partitions touched recently.
const sessionTokenTTL = 10 * time.Minute

// sessionTokenSweepAt is the map size at which stale entries are swept.
const sessionTokenSweepAt = 50_000

type sessionEntry struct {
	token   string
	touched time.Time
}

// sessionTokens is the per-partition session-token cache.
type sessionTokens struct {
	mu       sync.Mutex
	byPK     map[string]sessionEntry
	all      string // merge of every token seen, for cross-partition queries
	disabled bool   // tests only: see Store.DisableSessionTokens
	now      func() time.Time
}

func newSessionTokens() *sessionTokens {
	return &sessionTokens{byPK: map[string]sessionEntry{}, now: time.Now}
}

// get returns the token to send on a read of partition ("" for a
// cross-partition query), or nil.
func (s *sessionTokens) get(partition string) *string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disabled {
		return nil
	}
	if partition == "" {
		if s.all == "" {
			return nil
		}
		tok := s.all
		return &tok
	}
	e, ok := s.byPK[partition]
	if !ok {
		return nil
	}
	e.touched = s.now()
	s.byPK[partition] = e
	tok := e.token
	return &tok
}

// observe merges the token of a response on partition into the cache.
func (s *sessionTokens) observe(partition, token string) {
	if token == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.all = mergeSessionTokens(s.all, token)
	if partition == "" {
		return
	}
	prev := s.byPK[partition].token
	s.byPK[partition] = sessionEntry{token: mergeSessionTokens(prev, token), touched: now}
	if len(s.byPK) >= sessionTokenSweepAt {
		for k, e := range s.byPK {
			if now.Sub(e.touched) > sessionTokenTTL {
				delete(s.byPK, k)
			}
		}
	}
}

// observeErr records the token of a failed response (a 404 carries one).
func (s *sessionTokens) observeErr(partition string, err error) {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		s.observe(partition, re.RawResponse.Header.Get("x-ms-session-token"))
	}
}

// mergeSessionTokens combines two session tokens, keeping for every
// partition key range the newer progress. A token is a comma-separated
// list of "<range id>:<version>#<global LSN>[#<region>=<LSN>...]" entries
// (the service's format; "0:-1#12" on the emulators). Entries that cannot be
// parsed replace older ones, so a format change degrades to "latest wins".
func mergeSessionTokens(a, b string) string {
	if a == "" {
		return b
	}
	if a == b {
		return a
	}
	type entry struct {
		raw string
		lsn int64
		ok  bool
	}
	var order []string
	ranges := map[string]entry{}
	for _, tok := range []string{a, b} {
		for _, part := range strings.Split(tok, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			rng, lsn, ok := parseSessionEntry(part)
			cur, seen := ranges[rng]
			if !seen {
				order = append(order, rng)
			}
			if !seen || !ok || !cur.ok || lsn >= cur.lsn {
				ranges[rng] = entry{raw: part, lsn: lsn, ok: ok}
			}
		}
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, ranges[r].raw)
	}
	return strings.Join(parts, ",")
}

// parseSessionEntry splits "<range>:<version>#<lsn>..." into the range id
// and the global LSN.
func parseSessionEntry(s string) (rng string, lsn int64, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return s, 0, false
	}
	rng = s[:i]
	fields := strings.Split(s[i+1:], "#")
	if len(fields) < 2 {
		return rng, 0, false
	}
	n, err := strconv.ParseInt(fields[1], 10, 64)
	return rng, n, err == nil
}

// SessionToken returns the token the store would send on a read of
// partition, or nil; tests that read through the SDK directly use it to
// get read-your-writes too.
func (s *Store) SessionToken(partition string) *string { return s.tokens.get(partition) }

// ObserveSessionToken records token as if a response on partition had
// carried it (a write made behind the store's back by a test).
func (s *Store) ObserveSessionToken(partition, token string) { s.tokens.observe(partition, token) }

// DisableSessionTokens makes the store send no session tokens, as it did
// before it carried them; tests use it to show that a lagging replica
// catches a missing token.
func (s *Store) DisableSessionTokens() {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	s.tokens.disabled = true
}
