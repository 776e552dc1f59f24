package durable

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
)

// OrchestrationFunc is the untyped form of an orchestration: raw input in,
// raw output or error out. The typed helpers in the registry adapt
// func(*OrchestrationContext, In) (Out, error) to it. A returned error
// fails the orchestration with its Error() text as the message.
type OrchestrationFunc func(ctx *OrchestrationContext, input string) (string, error)

// Registry maps orchestration names (with semantic versions) and activity
// names to their functions. Register everything before Start; the version
// policy may be changed while the runtime runs. A Registry is safe for
// concurrent use.
type Registry struct {
	mu             sync.RWMutex
	orchestrations map[string][]versionedOrchestration // ascending versions
	activities     map[string]ActivityFunc
	policies       map[string]VersionPolicy
	// activityPolicies are the workers' settings per activity name
	// (SetActivityPolicy).
	activityPolicies map[string]ActivityPolicy
}

type versionedOrchestration struct {
	version duroxide.SemVer
	fn      OrchestrationFunc
}

// VersionPolicy says which registered version starts a new instance (and
// a continue-as-new or child that names no version). The zero value is
// Latest; Exact pins one version.
type VersionPolicy struct {
	// Exact is the pinned version; empty means the latest registered one.
	Exact string
}

// Latest is the policy that picks the highest registered version.
var Latest = VersionPolicy{}

// Exact returns the policy that always picks version.
func Exact(version string) VersionPolicy { return VersionPolicy{Exact: version} }

// DefaultVersion is the version AddOrchestration registers: "1.0.0".
const DefaultVersion = "1.0.0"

// ReservedActivityPrefix starts the names of the runtime's system
// activities; user activities may not use it.
const ReservedActivityPrefix = "__duroxide_syscall:"

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{
		orchestrations: map[string][]versionedOrchestration{},
		activities:     map[string]ActivityFunc{},
		policies:       map[string]VersionPolicy{},
	}
}

// RegistrationError reports a rejected registration.
type RegistrationError struct {
	Kind, Name, Reason string
	// Err is the sentinel the refusal matches (errors.Is), if any:
	// ErrUnsupportedType for a type the typed codec cannot carry.
	Err error
}

// Error implements error.
func (e *RegistrationError) Error() string {
	return fmt.Sprintf("durable: cannot register %s %q: %s", e.Kind, e.Name, e.Reason)
}

// Unwrap returns Err.
func (e *RegistrationError) Unwrap() error { return e.Err }

// AddOrchestration registers fn as version 1.0.0 of name.
func (r *Registry) AddOrchestration(name string, fn OrchestrationFunc) error {
	return r.AddOrchestrationVersion(name, DefaultVersion, fn)
}

// AddOrchestrationVersion registers fn as version of name. Versions of one
// name must be registered in increasing order.
func (r *Registry) AddOrchestrationVersion(name, version string, fn OrchestrationFunc) error {
	fail := func(reason string) error {
		return &RegistrationError{Kind: "orchestration", Name: name, Reason: reason}
	}
	if name == "" {
		return fail("empty name")
	}
	if fn == nil {
		return fail("nil function")
	}
	v, err := duroxide.ParseSemVer(version)
	if err != nil {
		return fail(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.orchestrations[name]
	if n := len(vs); n > 0 {
		latest := vs[n-1].version
		switch c := v.Compare(latest); {
		case c == 0:
			return fail("duplicate registration: " + name + "@" + v.String())
		case c < 0:
			return fail(fmt.Sprintf("non-monotonic version: %s is not later than existing latest %s", v, latest))
		}
	}
	r.orchestrations[name] = append(vs, versionedOrchestration{version: v, fn: fn})
	return nil
}

// AddActivity registers fn under name.
func (r *Registry) AddActivity(name string, fn ActivityFunc) error {
	fail := func(reason string) error { return &RegistrationError{Kind: "activity", Name: name, Reason: reason} }
	switch {
	case name == "":
		return fail("empty name")
	case fn == nil:
		return fail("nil function")
	case strings.HasPrefix(name, ReservedActivityPrefix):
		return fail("uses reserved prefix '" + ReservedActivityPrefix + "'")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.activities[name]; dup {
		return fail("duplicate registration")
	}
	r.activities[name] = fn
	return nil
}

// RegisterOrchestration registers a typed orchestration as version 1.0.0.
// Input and output follow the typed codec: a string travels as raw text,
// anything else as JSON. An input or output type JSON cannot carry (a
// channel, a func, a complex number...) is refused with a
// *RegistrationError matching ErrUnsupportedType.
func RegisterOrchestration[In, Out any](r *Registry, name string, fn func(*OrchestrationContext, In) (Out, error)) error {
	return RegisterOrchestrationVersion(r, name, DefaultVersion, fn)
}

// RegisterOrchestrationVersion registers a typed orchestration as version.
func RegisterOrchestrationVersion[In, Out any](r *Registry, name, version string, fn func(*OrchestrationContext, In) (Out, error)) error {
	if fn == nil {
		return &RegistrationError{Kind: "orchestration", Name: name, Reason: "nil function"}
	}
	if err := checkCodecTypes[In, Out]("orchestration", name); err != nil {
		return err
	}
	return r.AddOrchestrationVersion(name, version, func(ctx *OrchestrationContext, raw string) (string, error) {
		in, err := Decode[In](raw)
		if err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return Encode(out)
	})
}

// RegisterActivity registers a typed activity, with the codec as
// RegisterOrchestration (and its refusal of types the codec cannot
// carry: ErrUnsupportedType).
func RegisterActivity[In, Out any](r *Registry, name string, fn func(ActivityContext, In) (Out, error)) error {
	if fn == nil {
		return &RegistrationError{Kind: "activity", Name: name, Reason: "nil function"}
	}
	if err := checkCodecTypes[In, Out]("activity", name); err != nil {
		return err
	}
	return r.AddActivity(name, func(ctx ActivityContext, raw string) (string, error) {
		in, err := Decode[In](raw)
		if err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return Encode(out)
	})
}

// SetVersionPolicy changes the policy for name; it takes effect for the
// next start resolved by policy, also while the runtime runs.
func (r *Registry) SetVersionPolicy(name string, p VersionPolicy) error {
	if p.Exact != "" {
		if _, err := duroxide.ParseSemVer(p.Exact); err != nil {
			return &RegistrationError{Kind: "version policy", Name: name, Reason: err.Error()}
		}
	}
	r.mu.Lock()
	r.policies[name] = p
	r.mu.Unlock()
	return nil
}

// Versions lists name's registered versions in increasing order.
func (r *Registry) Versions(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, v := range r.orchestrations[name] {
		out = append(out, v.version.String())
	}
	return out
}

// resolveOrchestration picks name's handler by policy.
func (r *Registry) resolveOrchestration(name string) (string, OrchestrationFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	vs := r.orchestrations[name]
	p := r.policies[name]
	if p.Exact == "" {
		if len(vs) == 0 {
			return "", nil, false
		}
		last := vs[len(vs)-1]
		return last.version.String(), last.fn, true
	}
	v, _ := duroxide.ParseSemVer(p.Exact) // validated by SetVersionPolicy
	return r.exactLocked(name, v)
}

// resolveOrchestrationExact returns version of name; a version that does
// not parse is as unknown as one that is not registered.
func (r *Registry) resolveOrchestrationExact(name, version string) (string, OrchestrationFunc, bool) {
	v, err := duroxide.ParseSemVer(version)
	if err != nil {
		return "", nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.exactLocked(name, v)
}

func (r *Registry) exactLocked(name string, v duroxide.SemVer) (string, OrchestrationFunc, bool) {
	for _, x := range r.orchestrations[name] {
		if x.version.Compare(v) == 0 {
			return x.version.String(), x.fn, true
		}
	}
	return "", nil, false
}

// resolveActivity returns the activity (user or system) named name.
func (r *Registry) resolveActivity(name string) (ActivityFunc, bool) {
	if fn, ok := systemActivities[name]; ok {
		return fn, true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.activities[name]
	return fn, ok
}

// systemActivities back the context's deterministic helpers; every
// runtime serves them, as Rust injects them into every registry.
var systemActivities = map[string]ActivityFunc{
	SyscallNewGUID: func(ActivityContext, string) (string, error) { return uuid.NewString(), nil },
	SyscallUTCNowMs: func(ActivityContext, string) (string, error) {
		return strconv.FormatInt(time.Now().UnixMilli(), 10), nil
	},
	SyscallKVValue: getKVValueActivity,
	SyscallPatch:   func(_ ActivityContext, changeID string) (string, error) { return changeID, nil },
}

// getKVValueActivity reads another instance's KV value; its result is
// null or the value as a JSON string, so absent and empty differ (Rust's
// JSON of an Option<String>).
func getKVValueActivity(ctx ActivityContext, input string) (string, error) {
	var req struct {
		InstanceID *string `json:"instance_id"`
		Key        *string `json:"key"`
	}
	if err := jsonUnmarshal(input, &req); err != nil {
		return "", fmt.Errorf("get_kv_value: invalid input: %v", err)
	}
	if req.InstanceID == nil {
		return "", fmt.Errorf("get_kv_value: missing instance_id")
	}
	if req.Key == nil {
		return "", fmt.Errorf("get_kv_value: missing key")
	}
	v, ok, err := ctx.Client().KVValue(ctx, *req.InstanceID, *req.Key)
	if errors.Is(err, ErrInstanceNotFound) {
		// An unknown instance has no value: the answer is null, not a
		// failure (as Rust's activity answers).
		ok, err = false, nil
	}
	if err != nil {
		return "", fmt.Errorf("get_kv_value client error: %v", err)
	}
	if !ok {
		return "null", nil
	}
	return jsonString(v), nil
}
