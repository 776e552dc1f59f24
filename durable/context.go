package durable

import (
	"log/slog"
	"sort"
	"time"
)

// OrchestrationContext is what orchestration code uses to schedule durable
// work and read replay-safe state. One context serves the orchestration
// function and all its Go blocks; it must only be used from them (see the
// package documentation, "Writing orchestrations").
type OrchestrationContext struct {
	sched *scheduler

	instanceID           string
	executionID          uint64
	orchestrationName    string
	orchestrationVersion string
	isReplaying          bool

	now    func() time.Time
	logger *slog.Logger

	// Replay state: the actions the code emitted and how their futures'
	// tokens bind to schedule events and results (Rust's CtxInner).
	nextToken     uint64
	emitted       []emittedAction
	results       map[uint64]completion // token -> result
	tokenBindings map[uint64]uint64     // token -> schedule id
	scheduleToken map[uint64]uint64     // schedule id -> token

	externalSubs      map[uint64]externalSub // schedule id -> subscription
	externalOrder     []uint64               // schedule ids in bind order
	externalArrivals  map[string][]string
	externalNextIndex map[string]int
	externalCancelled map[uint64]bool

	queueSubs      []queueSub
	queueArrivals  map[string][]string
	queueCancelled map[uint64]bool
	queueResolved  map[uint64]bool

	subOrchInstances map[uint64]string // token -> resolved child instance id

	cancelledTokens []cancelledToken
	// futures lists every future created this turn, in creation order.
	futures []*futureState

	customStatus *string
	kv           map[string]string
	kvUpdatedAt  map[string]uint64

	// updates holds the update handlers SetUpdateHandler registered; nil
	// until the first, whose registration starts the loop serving them.
	updates *updateHandlers
	// engine is the replay engine running the code: Patched and
	// HistorySize read the history at the code's position through it.
	engine *replayEngine
	// patches holds the execution's Patched answers by change id, so a
	// second call answers as the first; oldPatches lists the ids answered
	// false (the old branch), in call order, for the replayer.
	patches    map[string]bool
	oldPatches []string
	// limits are the runtime's HistoryLimits (ContinueAsNewSuggested).
	limits HistoryLimits
}

// emittedAction is an action with the token of the future it belongs to.
type emittedAction struct {
	token uint64
	act   action
}

type externalSub struct {
	name  string
	index int
}

type queueSub struct {
	id   uint64
	name string
}

type cancelledToken struct {
	token uint64
	kind  scheduleKind
}

// completionKind says how a scheduled call completed: an activity's or a
// child's success or failure, or a timer's firing (Rust: the
// CompletionResult discriminator).
type completionKind int

const (
	activityOK completionKind = iota + 1
	activityErr
	timerFired
	subOrchOK
	subOrchErr
)

type completion struct {
	kind  completionKind
	value string // result, or the failure's display message
}

func newOrchestrationContext(instance string, executionID uint64, name, version string, now func() time.Time, logger *slog.Logger) *OrchestrationContext {
	return &OrchestrationContext{
		sched:                &scheduler{logger: logger},
		instanceID:           instance,
		executionID:          executionID,
		orchestrationName:    name,
		orchestrationVersion: version,
		isReplaying:          true,
		now:                  now,
		logger:               logger,
		results:              map[uint64]completion{},
		tokenBindings:        map[uint64]uint64{},
		scheduleToken:        map[uint64]uint64{},
		// The other maps are made when first written (put): most turns
		// use few of them, and each made map is garbage after the turn.
	}
}

// InstanceID returns the orchestration instance id.
func (c *OrchestrationContext) InstanceID() string { return c.instanceID }

// ExecutionID returns the execution number (1, then +1 per continue-as-new).
func (c *OrchestrationContext) ExecutionID() uint64 { return c.executionID }

// OrchestrationName returns the registered name being run.
func (c *OrchestrationContext) OrchestrationName() string { return c.orchestrationName }

// OrchestrationVersion returns the version being run.
func (c *OrchestrationContext) OrchestrationVersion() string { return c.orchestrationVersion }

// IsReplaying reports whether the code is re-running through history that
// was already persisted. Side effects that must happen once (logs,
// metrics) belong behind !IsReplaying; durable work needs no such guard.
func (c *OrchestrationContext) IsReplaying() bool { return c.isReplaying }

func (c *OrchestrationContext) nowMs() uint64 {
	ms := c.now().UnixMilli()
	if ms < 0 {
		return 0
	}
	return uint64(ms)
}

// emit records an action and returns its token (Rust's emit_action).
func (c *OrchestrationContext) emit(a action) uint64 {
	c.nextToken++
	c.emitted = append(c.emitted, emittedAction{token: c.nextToken, act: a})
	return c.nextToken
}

func (c *OrchestrationContext) drainEmitted() []emittedAction {
	out := c.emitted
	c.emitted = nil
	return out
}

func (c *OrchestrationContext) bindToken(token, scheduleID uint64) {
	c.tokenBindings[token] = scheduleID
	c.scheduleToken[scheduleID] = token
}

func (c *OrchestrationContext) boundScheduleID(token uint64) (uint64, bool) {
	id, ok := c.tokenBindings[token]
	return id, ok
}

// deliverResult stores a completion for the future bound to scheduleID.
func (c *OrchestrationContext) deliverResult(scheduleID uint64, r completion) {
	token, ok := c.scheduleToken[scheduleID]
	if !ok {
		c.log().Warn("dropping completion result with no binding", "schedule_id", scheduleID)
		return
	}
	c.results[token] = r
}

func (c *OrchestrationContext) bindExternalSubscription(scheduleID uint64, name string) {
	idx := c.externalNextIndex[name]
	put(&c.externalNextIndex, name, idx+1)
	if _, dup := c.externalSubs[scheduleID]; !dup {
		c.externalOrder = append(c.externalOrder, scheduleID)
	}
	put(&c.externalSubs, scheduleID, externalSub{name: name, index: idx})
}

// hasPendingSubscriptionSlot reports whether an active subscription for
// name is still waiting for an arrival; cancelled ones occupy no slot.
func (c *OrchestrationContext) hasPendingSubscriptionSlot(name string) bool {
	active := 0
	for id, sub := range c.externalSubs {
		if sub.name == name && !c.externalCancelled[id] {
			active++
		}
	}
	return active > len(c.externalArrivals[name])
}

func (c *OrchestrationContext) deliverExternalEvent(name, data string) {
	put(&c.externalArrivals, name, append(c.externalArrivals[name], data))
}

// externalEvent returns the arrival matched to a subscription: the n-th
// active subscription of a name gets the n-th arrival.
func (c *OrchestrationContext) externalEvent(scheduleID uint64) (string, bool) {
	sub, ok := c.externalSubs[scheduleID]
	if !ok || c.externalCancelled[scheduleID] {
		return "", false
	}
	cancelledBelow := 0
	for id, other := range c.externalSubs {
		if other.name == sub.name && other.index < sub.index && c.externalCancelled[id] {
			cancelledBelow++
		}
	}
	arrivals := c.externalArrivals[sub.name]
	i := sub.index - cancelledBelow
	if i < 0 || i >= len(arrivals) {
		return "", false
	}
	return arrivals[i], true
}

func (c *OrchestrationContext) markExternalSubscriptionCancelled(scheduleID uint64) {
	put(&c.externalCancelled, scheduleID, true)
}

func (c *OrchestrationContext) bindQueueSubscription(scheduleID uint64, name string) {
	c.queueSubs = append(c.queueSubs, queueSub{id: scheduleID, name: name})
}

func (c *OrchestrationContext) deliverQueueMessage(name, data string) {
	put(&c.queueArrivals, name, append(c.queueArrivals[name], data))
}

func (c *OrchestrationContext) markQueueSubscriptionCancelled(scheduleID uint64) {
	put(&c.queueCancelled, scheduleID, true)
}

// queueMessage matches a persistent subscription FIFO: its arrival index is
// the number of active subscriptions of the same name created before it.
func (c *OrchestrationContext) queueMessage(scheduleID uint64) (string, bool) {
	name, found := "", false
	for _, s := range c.queueSubs {
		if s.id == scheduleID {
			name, found = s.name, true
			break
		}
	}
	if !found || c.queueResolved[scheduleID] || c.queueCancelled[scheduleID] {
		return "", false
	}
	idx := 0
	for _, s := range c.queueSubs {
		if s.id == scheduleID {
			break
		}
		if s.name == name && !c.queueCancelled[s.id] {
			idx++
		}
	}
	arrivals := c.queueArrivals[name]
	if idx >= len(arrivals) {
		return "", false
	}
	put(&c.queueResolved, scheduleID, true)
	return arrivals[idx], true
}

func (c *OrchestrationContext) markTokenCancelled(token uint64, kind scheduleKind) {
	c.cancelledTokens = append(c.cancelledTokens, cancelledToken{token: token, kind: kind})
}

// cancelledScheduleIDs returns the schedule ids of bound futures of kind
// that were dropped, ascending, so the breadcrumbs come out in one order
// on every replay (Rust iterates a hash set).
func (c *OrchestrationContext) cancelledScheduleIDs(kind scheduleKind) []uint64 {
	var ids []uint64
	seen := map[uint64]bool{}
	for _, t := range c.cancelledTokens {
		if t.kind != kind {
			continue
		}
		if id, ok := c.tokenBindings[t.token]; ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// cancelledSubOrchestrations returns (schedule id, child instance) of
// dropped, bound sub-orchestration futures, by schedule id.
func (c *OrchestrationContext) cancelledSubOrchestrations() []subOrchCancel {
	var out []subOrchCancel
	for _, id := range c.cancelledScheduleIDs(kindSubOrchestration) {
		if inst, ok := c.subOrchInstances[c.scheduleToken[id]]; ok {
			out = append(out, subOrchCancel{scheduleID: id, instance: inst})
		}
	}
	return out
}

type subOrchCancel struct {
	scheduleID uint64
	instance   string
}

func (c *OrchestrationContext) bindSubOrchestrationInstance(token uint64, instance string) {
	put(&c.subOrchInstances, token, instance)
}

func (c *OrchestrationContext) clearCancelledTokens() { c.cancelledTokens = nil }

// newFuture creates the state of a durable future owned by the running
// coroutine.
func (c *OrchestrationContext) newFuture(token uint64, kind scheduleKind, poll func() (any, error, bool)) *futureState {
	st := &futureState{ctx: c, token: token, kind: kind, poll: poll}
	st.adopt()
	c.futures = append(c.futures, st)
	return st
}

// dropAllPending drops every pending future: the orchestration function
// returned, so nothing can await them any more, and each is cancelled (as
// Rust drops everything the function still held).
func (c *OrchestrationContext) dropAllPending() {
	for _, st := range c.futures {
		st.drop()
	}
}

// put sets (*m)[k] = v, making the map on first use.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}
