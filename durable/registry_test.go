package durable

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestRegistryVersionsMustIncrease(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.AddOrchestration("O", hImmediateOK("v1")))
	require.NoError(t, r.AddOrchestrationVersion("O", "2.0.0", hImmediateOK("v2")))
	var re *RegistrationError
	err := r.AddOrchestrationVersion("O", "1.5.0", hImmediateOK("x"))
	require.ErrorAs(t, err, &re)
	require.Contains(t, err.Error(), "non-monotonic version: 1.5.0 is not later than existing latest 2.0.0")
	require.ErrorAs(t, r.AddOrchestrationVersion("O", "2.0.0", hImmediateOK("x")), &re)
	require.ErrorAs(t, r.AddOrchestrationVersion("O", "two", hImmediateOK("x")), &re)
	require.ErrorAs(t, r.AddOrchestration("", hImmediateOK("x")), &re)
	require.ErrorAs(t, r.AddOrchestration("P", nil), &re)
	require.Equal(t, []string{"1.0.0", "2.0.0"}, r.Versions("O"))
}

func TestRegistryPolicyLatestAndExact(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.AddOrchestration("O", hImmediateOK("v1")))
	require.NoError(t, r.AddOrchestrationVersion("O", "2.0.0", hImmediateOK("v2")))
	v, _, ok := r.resolveOrchestration("O")
	require.True(t, ok)
	require.Equal(t, "2.0.0", v)
	require.NoError(t, r.SetVersionPolicy("O", Exact("1.0.0")))
	v, _, ok = r.resolveOrchestration("O")
	require.True(t, ok)
	require.Equal(t, "1.0.0", v)
	require.NoError(t, r.SetVersionPolicy("O", Exact("3.0.0")))
	_, _, ok = r.resolveOrchestration("O")
	require.False(t, ok, "an exact policy naming an unregistered version resolves nothing")
	require.NoError(t, r.SetVersionPolicy("O", Latest))
	v, _, _ = r.resolveOrchestration("O")
	require.Equal(t, "2.0.0", v)
	var re *RegistrationError
	require.ErrorAs(t, r.SetVersionPolicy("O", Exact("nope")), &re)

	v, _, ok = r.resolveOrchestrationExact("O", "1.0.0")
	require.True(t, ok)
	require.Equal(t, "1.0.0", v)
	_, _, ok = r.resolveOrchestrationExact("O", "not-semver")
	require.False(t, ok)
	_, _, ok = r.resolveOrchestration("Missing")
	require.False(t, ok)
}

func TestRegistryActivities(t *testing.T) {
	r := NewRegistry()
	fn := func(ActivityContext, string) (string, error) { return "", nil }
	require.NoError(t, r.AddActivity("A", fn))
	var re *RegistrationError
	require.ErrorAs(t, r.AddActivity("A", fn), &re)
	err := r.AddActivity(ReservedActivityPrefix+"mine", fn)
	require.ErrorAs(t, err, &re)
	require.Contains(t, err.Error(), "reserved prefix")
	_, ok := r.resolveActivity("A")
	require.True(t, ok)
	for _, name := range []string{SyscallNewGUID, SyscallUTCNowMs, SyscallKVValue, SyscallPatch} {
		_, ok := r.resolveActivity(name)
		require.True(t, ok, "system activity %s is always served", name)
	}
}

type typedPoint struct {
	X int `json:"x"`
}

func TestRegistryTypedUsesTheCodec(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, RegisterActivity(r, "Double", func(_ ActivityContext, p typedPoint) (typedPoint, error) {
		return typedPoint{X: 2 * p.X}, nil
	}))
	require.NoError(t, RegisterActivity(r, "Shout", func(_ ActivityContext, s string) (string, error) { return s + "!", nil }))
	require.NoError(t, RegisterActivity(r, "Fail", func(_ ActivityContext, s string) (string, error) { return "", errors.New("bad " + s) }))
	call := func(name, in string) (string, error) {
		fn, ok := r.resolveActivity(name)
		require.True(t, ok)
		return fn(ActivityContext{}, in)
	}
	out, err := call("Double", `{"x":21}`)
	require.NoError(t, err)
	require.Equal(t, `{"x":42}`, out)
	out, err = call("Shout", "hi") // a string travels raw, not as "\"hi\""
	require.NoError(t, err)
	require.Equal(t, "hi!", out)
	_, err = call("Fail", "x")
	require.EqualError(t, err, "bad x")
	_, err = call("Double", "not json")
	require.Error(t, err)
}

func TestOptionsDefaultsAreRusts(t *testing.T) {
	o := (*Options)(nil).withDefaults()
	require.Equal(t, 100*time.Millisecond, o.MinPollInterval)
	require.Equal(t, 30*time.Second, o.LongPollTimeout)
	require.Equal(t, 2, o.OrchestrationConcurrency)
	require.Equal(t, 2, o.WorkerConcurrency)
	require.Equal(t, 5*time.Second, o.OrchestratorLockTimeout)
	require.Equal(t, 2*time.Second, o.OrchestratorLockRenewalBuffer)
	require.Equal(t, 30*time.Second, o.WorkerLockTimeout)
	require.Equal(t, 5*time.Second, o.WorkerLockRenewalBuffer)
	require.Equal(t, uint32(10), o.MaxAttempts)
	require.Equal(t, Backoff{Base: time.Second, Max: time.Minute}, o.UnregisteredBackoff)
	require.Equal(t, 10*time.Second, o.ActivityCancellationGracePeriod)
	require.Equal(t, 30*time.Second, o.SessionLockTimeout)
	require.Equal(t, 5*time.Second, o.SessionLockRenewalBuffer)
	require.Equal(t, 5*time.Minute, o.SessionIdleTimeout)
	require.Equal(t, 5*time.Minute, o.SessionCleanupInterval)
	require.Equal(t, 10, o.MaxSessionsPerRuntime)
	require.Nil(t, o.SupportedReplayVersions)
	require.NoError(t, o.validate())

	none := (&Options{OrchestrationConcurrency: NoSlots}).withDefaults()
	require.Equal(t, 0, none.OrchestrationConcurrency)
}

func TestRenewalIntervalAndBackoff(t *testing.T) {
	require.Equal(t, 3*time.Second, renewalInterval(5*time.Second, 2*time.Second), "short locks renew at ceil(timeout/2)")
	require.Equal(t, 25*time.Second, renewalInterval(30*time.Second, 5*time.Second))
	require.Equal(t, time.Second, renewalInterval(time.Second, 0))
	require.Equal(t, time.Second, renewalInterval(15*time.Second, 15*time.Second))
	b := Backoff{Base: time.Second, Max: time.Minute}
	var got []time.Duration
	for a := uint32(0); a <= 8; a++ {
		got = append(got, b.Delay(a))
	}
	require.Equal(t, []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, time.Minute, time.Minute}, got)
}

func TestOptionsValidate(t *testing.T) {
	o := (&Options{SessionIdleTimeout: 10 * time.Second}).withDefaults()
	var oe *OptionsError
	require.ErrorAs(t, o.validate(), &oe)
	require.Equal(t, "SessionIdleTimeout", oe.Field)
	_, err := Start(t.Context(), newMemProvider(), NewRegistry(), &Options{SessionIdleTimeout: 10 * time.Second})
	require.ErrorAs(t, err, &oe)
	_, err = Start(t.Context(), nil, NewRegistry(), nil)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
}

// codecTime has its own JSON encoding, which is trusted.
type codecTime struct{ c chan int }

func (codecTime) MarshalJSON() ([]byte, error) { return []byte(`"t"`), nil }
func (*codecTime) UnmarshalJSON([]byte) error  { return nil }

// codecNode is a recursive type the codec carries.
type codecNode struct {
	Next     *codecNode
	Children map[string]codecNode
}

// A typed registration whose input or output the JSON codec cannot carry
// is refused with ErrUnsupportedType, naming the type and the part of it
// at fault; what encoding/json ignores or encodes itself is accepted.
func TestRegistryRefusesTypesTheCodecCannotCarry(t *testing.T) {
	type withChan struct {
		Name string
		Done chan struct{}
	}
	type hidden struct {
		Name string
		done chan struct{}
		Skip func() `json:"-"`
	}
	refused := map[string]func(*Registry) error{
		"activity input chan": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, chan int) (string, error) { return "", nil })
		},
		"activity output func": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, string) (func(), error) { return nil, nil })
		},
		"activity input complex": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, complex128) (string, error) { return "", nil })
		},
		"activity input unsafe pointer": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, unsafe.Pointer) (string, error) { return "", nil })
		},
		"orchestration input struct field chan": func(r *Registry) error {
			return RegisterOrchestration(r, "O", func(*OrchestrationContext, withChan) (string, error) { return "", nil })
		},
		"orchestration output map of funcs": func(r *Registry) error {
			return RegisterOrchestrationVersion(r, "O", "2.0.0", func(*OrchestrationContext, string) (map[string]func(), error) { return nil, nil })
		},
		"orchestration input struct map key": func(r *Registry) error {
			return RegisterOrchestration(r, "O", func(*OrchestrationContext, map[struct{ A int }]string) (string, error) { return "", nil })
		},
		"orchestration output slice of chan pointers": func(r *Registry) error {
			return RegisterOrchestration(r, "O", func(*OrchestrationContext, string) ([]*chan int, error) { return nil, nil })
		},
	}
	for name, register := range refused {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry()
			err := register(r)
			require.ErrorIs(t, err, ErrUnsupportedType)
			var re *RegistrationError
			require.ErrorAs(t, err, &re)
			require.Contains(t, err.Error(), "cannot be carried by the typed codec (JSON)")
			require.Empty(t, r.activities, "nothing is registered")
			require.Empty(t, r.orchestrations, "nothing is registered")
		})
	}
	r := NewRegistry()
	require.ErrorContains(t, RegisterOrchestration(r, "O", func(*OrchestrationContext, withChan) (string, error) { return "", nil }),
		"its input type durable.withChan cannot be carried by the typed codec (JSON): field Done: chan struct {}")

	accepted := map[string]func(*Registry) error{
		"unexported and skipped fields": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, hidden) (hidden, error) { return hidden{}, nil })
		},
		"own JSON encoding": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, codecTime) (*codecTime, error) { return nil, nil })
		},
		"recursive type": func(r *Registry) error {
			return RegisterActivity(r, "A", func(ActivityContext, codecNode) ([]codecNode, error) { return nil, nil })
		},
		"interface and time": func(r *Registry) error {
			return RegisterOrchestration(r, "O", func(*OrchestrationContext, any) (map[int]time.Time, error) { return nil, nil })
		},
		"bytes and struct": func(r *Registry) error {
			return RegisterOrchestration(r, "O", func(*OrchestrationContext, []byte) (struct{ A, B int }, error) { return struct{ A, B int }{}, nil })
		},
	}
	for name, register := range accepted {
		t.Run(name, func(t *testing.T) { require.NoError(t, register(NewRegistry())) })
	}
}
