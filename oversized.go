package cdb

import (
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// An instance document at the service's 2 MB item limit, reached by any
// route (an older version, another client, an operator's edit), cannot be
// locked: the lock batch's patch makes it larger, and the service refuses
// that with 413 every time. That is a permanent refusal of the instance,
// not a failure of one fetch, so the fetch neither retries it on every
// poll nor stays silent about it: it logs it once per instance, at error
// level, with a cause of kind duroxide.ErrTooLarge, and leaves the
// instance alone for tooLargePause before trying again. The instance is
// parked, not failed or poisoned: either would need a write the service
// refuses, and would give up the messages. Parked, nothing is lost — the
// refused batch applied nothing and counted no attempt — and once the
// document is made smaller (or the instance deleted) the next try takes
// the instance and its messages as they were.

// tooLargePause is how long an instance whose lock the service refuses
// with 413 is left alone.
const tooLargePause = 5 * time.Minute

// refusedTooLarge parks instance after its lock batch was refused with
// 413 (cause) and reports it, the first time, at error level.
func (p *Provider) refusedTooLarge(instance string, now time.Time, cause error) {
	p.busy.mark(instance, now.Add(tooLargePause))
	if !p.oversized.report(instance) {
		p.opts.Logger.Debug("instance document still too large to lock", "instance_id", instance, "retry_in", tooLargePause)
		return
	}
	err := &duroxide.ProviderError{Operation: "fetch_orchestration_item", Kind: duroxide.ErrTooLarge, Err: cause,
		Message: "the instance document is at Cosmos DB's 2 MB item limit, so the service refuses every lock of it"}
	p.opts.Logger.Error("instance cannot be locked: its document is too large; its messages are kept, and wait until the document is made smaller or the instance deleted",
		"instance_id", instance, "error", err, "retry_in", tooLargePause)
}

// oversizedSet is the instances whose refused lock this process has
// reported (refusedTooLarge), until one of their locks succeeds.
type oversizedSet struct {
	mu sync.Mutex
	m  map[string]bool
}

// report records instance and reports whether it is new.
func (s *oversizedSet) report(instance string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[instance] {
		return false
	}
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[instance] = true
	return true
}

// locked forgets instance: its document could be locked again.
func (s *oversizedSet) locked(instance string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) > 0 {
		delete(s.m, instance)
	}
}
