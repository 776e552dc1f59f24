package durabletest

import (
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// poisonMessageTests ports tests/poison_message_tests.rs. Rust's
// PoisonInjectingProvider is FaultyProvider's attempt-count injection.
func poisonMessageTests() []sample {
	return []sample{
		{name: "orchestration_attempt_count_increments_on_abandon", run: orchestrationAttemptCountIncrementsOnAbandon},
		{name: "worker_attempt_count_increments_on_lock_expiry", run: workerAttemptCountIncrementsOnLockExpiry},
		{name: "poison_message_type_orchestration", run: poisonMessageTypeOrchestration},
		{name: "poison_message_type_activity", run: poisonMessageTypeActivity},
		{name: "runtime_options_default_max_attempts", run: runtimeOptionsDefaultMaxAttempts},
		{name: "runtime_options_configurable_max_attempts", run: runtimeOptionsConfigurableMaxAttempts},
		{name: "e2e_orchestration_item_poison_fails_orchestration", run: e2eOrchestrationItemPoisonFailsOrchestration},
		{name: "e2e_activity_item_poison_fails_orchestration", run: e2eActivityItemPoisonFailsOrchestration},
		{name: "e2e_sub_orchestration_poison_fails_parent", run: e2eSubOrchestrationPoisonFailsParent},
		{name: "e2e_one_poisoned_activity_among_many", run: e2eOnePoisonedActivityAmongMany},
		{name: "e2e_custom_max_attempts_respected", run: e2eCustomMaxAttemptsRespected},
		{name: "e2e_activity_poisons_suborchestration_poisons_parent", run: e2eActivityPoisonsSuborchestrationPoisonsParent},
		{name: "e2e_poison_message_creates_instance_if_missing", run: e2ePoisonMessageCreatesInstanceIfMissing},
	}
}

func orchestrationAttemptCountIncrementsOnAbandon(e *env) {
	v := "1.0.0"
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{
		Instance: "attempt-test-1", Orchestration: "TestOrch", Input: "{}", Version: &v, ExecutionID: 1,
	}, 0))
	for want := uint32(1); want <= 3; want++ {
		item, err := e.p.FetchOrchestrationItem(e.ctx, 5*time.Second, 0, nil)
		require.NoError(e.t, err)
		require.NotNil(e.t, item, "item should be present")
		require.Equal(e.t, want, item.AttemptCount, "fetch %d should have attempt_count = %d", want, want)
		if want < 3 {
			require.NoError(e.t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, false))
		}
	}
}

// Rust sleeps 1.1 s past a 1 s lock; here the second fetch is retried
// until the lock has expired.
func workerAttemptCountIncrementsOnLockExpiry(e *env) {
	const lock = time.Second
	require.NoError(e.t, e.p.EnqueueForWorker(e.ctx, duroxide.ActivityExecuteItem{
		Instance: "attempt-test-2", ExecutionID: 1, ID: 1, Name: "TestActivity", Input: "{}",
	}))
	first, err := e.p.FetchWorkItem(e.ctx, lock, 0, nil, duroxide.TagFilter{})
	require.NoError(e.t, err)
	require.NotNil(e.t, first, "item should be present")
	require.Equal(e.t, uint32(1), first.AttemptCount, "First fetch should have attempt_count = 1")
	var second *duroxide.LockedWorkItem
	require.True(e.t, eventually(func() bool {
		second, err = e.p.FetchWorkItem(e.ctx, lock, 0, nil, duroxide.TagFilter{})
		require.NoError(e.t, err)
		return second != nil
	}), "item should be present after lock expiry")
	require.Equal(e.t, uint32(2), second.AttemptCount, "Second fetch should have attempt_count = 2")
	require.NoError(e.t, e.p.AckWorkItem(e.ctx, second.LockToken, duroxide.ActivityCompletedItem{
		Instance: "attempt-test-2", ExecutionID: 1, ID: 1, Result: "done",
	}))
}

// Rust also asserts category() == "poison" and !is_retryable(); Go's
// ErrorDetails has neither method: the variant is the category.
func poisonMessageTypeOrchestration(e *env) {
	d := duroxide.PoisonError{AttemptCount: 11, MaxAttempts: 10, Message: "{}",
		MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonOrchestration, Instance: "test-instance", ExecutionID: 1}}
	require.Equal(e.t, "Poison", d.Variant())
	msg := (&durable.OrchestrationFailedError{Details: d}).Error()
	for _, w := range []string{"orchestration", "test-instance", "11", "10"} {
		require.Contains(e.t, msg, w)
	}
}

func poisonMessageTypeActivity(e *env) {
	d := duroxide.PoisonError{AttemptCount: 5, MaxAttempts: 3, Message: "{}",
		MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonActivity, Instance: "test-instance", ExecutionID: 1,
			ActivityName: "TestActivity", ActivityID: 42}}
	require.Equal(e.t, "Poison", d.Variant())
	msg := (&durable.OrchestrationFailedError{Details: d}).Error()
	for _, w := range []string{"activity", "TestActivity", "42"} {
		require.Contains(e.t, msg, w)
	}
}

// The defaults are applied at Start; a zero Options means them.
func runtimeOptionsDefaultMaxAttempts(e *env) {
	require.Equal(e.t, uint32(10), (&durable.Options{}).WithDefaults().MaxAttempts, "Default max_attempts should be 10")
}

func runtimeOptionsConfigurableMaxAttempts(e *env) {
	o := durable.Options{MaxAttempts: 5}
	require.Equal(e.t, uint32(5), o.WithDefaults().MaxAttempts, "max_attempts should be configurable")
}

// fastPoisonOptions is Rust's fast_runtime_options(max_attempts).
func fastPoisonOptions(maxAttempts uint32) *durable.Options {
	return &durable.Options{MaxAttempts: maxAttempts, MinPollInterval: 5 * time.Millisecond}
}

// faulty wraps the env's provider in a FaultyProvider for the test.
func (e *env) faulty() *FaultyProvider {
	fp := NewFaultyProvider(e.p)
	e.p = fp
	e.c = nil
	return fp
}

func e2eOrchestrationItemPoisonFailsOrchestration(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "SimpleOrch", func(*durable.OrchestrationContext, string) (string, error) {
		panic("Orchestration code should not run when detected as poison")
	})
	fp.InjectOrchestrationAttempts(11)
	e.start(r, fastPoisonOptions(10))
	const instance = "poison-orch-test-1"
	e.startOrch(instance, "SimpleOrch", "{}")
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(11), p.AttemptCount)
	require.Equal(e.t, uint32(10), p.MaxAttempts)
	require.Equal(e.t, duroxide.PoisonOrchestration, p.MessageType.Kind)
	require.Equal(e.t, instance, p.MessageType.Instance)
	require.Equal(e.t, uint64(1), p.MessageType.ExecutionID)
	require.NotEmpty(e.t, p.Message, "Message should contain serialized data")
}

func e2eActivityItemPoisonFailsOrchestration(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "OrchWithActivity", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "TestActivity", "{}").Await()
	})
	act(e.t, r, "TestActivity", func(durable.ActivityContext, string) (string, error) { return "activity-result", nil })
	e.start(r, fastPoisonOptions(10))
	fp.InjectActivityAttemptsPersistent(11)
	const instance = "poison-activity-test-1"
	e.startOrch(instance, "OrchWithActivity", "{}")
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(11), p.AttemptCount)
	require.Equal(e.t, uint32(10), p.MaxAttempts)
	require.Equal(e.t, duroxide.PoisonActivity, p.MessageType.Kind, "Expected Activity message type")
	require.Equal(e.t, instance, p.MessageType.Instance)
	require.Equal(e.t, uint64(1), p.MessageType.ExecutionID)
	require.Equal(e.t, "TestActivity", p.MessageType.ActivityName)
	require.Greater(e.t, p.MessageType.ActivityID, uint64(0), "Activity ID should be positive")
}

func e2eSubOrchestrationPoisonFailsParent(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "ParentOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "ChildOrch", "{}").Await()
	})
	orch(e.t, r, "ChildOrch", func(*durable.OrchestrationContext, string) (string, error) { return "child-result", nil })
	e.start(r, fastPoisonOptions(10))
	fp.InjectOrchestrationAttemptsAfterSkip(1, 11)
	const instance = "poison-suborg-test-1"
	e.startOrch(instance, "ParentOrch", "{}")
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(11), p.AttemptCount)
	require.Equal(e.t, uint32(10), p.MaxAttempts)
	require.Equal(e.t, duroxide.PoisonOrchestration, p.MessageType.Kind, "Expected Orchestration message type")
	require.True(e.t, strings.HasPrefix(p.MessageType.Instance, instance), "Child instance should start with parent instance")
	require.Equal(e.t, uint64(1), p.MessageType.ExecutionID)
	require.NotEmpty(e.t, p.Message, "Message should contain serialized data")
}

func e2eOnePoisonedActivityAmongMany(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "MultiActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Activity1", "{}").Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Activity2", "{}").Await(); err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "Activity3", "{}").Await()
	})
	for i, res := range []string{"result1", "result2", "result3"} {
		act(e.t, r, []string{"Activity1", "Activity2", "Activity3"}[i], func(durable.ActivityContext, string) (string, error) { return res, nil })
	}
	e.start(r, fastPoisonOptions(5))
	fp.InjectActivityAttemptsPersistent(6)
	const instance = "poison-multi-activity-test"
	e.startOrch(instance, "MultiActivityOrch", "{}")
	require.Equal(e.t, durable.StateFailed, e.wait(instance).State, "Orchestration should fail due to one poisoned activity")
}

func e2eCustomMaxAttemptsRespected(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "CustomMaxOrch", func(*durable.OrchestrationContext, string) (string, error) { return "success", nil })
	fp.InjectOrchestrationAttempts(4)
	e.start(r, fastPoisonOptions(3))
	const instance = "custom-max-attempts-test"
	e.startOrch(instance, "CustomMaxOrch", "{}")
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(4), p.AttemptCount)
	require.Equal(e.t, uint32(3), p.MaxAttempts)
}

func e2eActivityPoisonsSuborchestrationPoisonsParent(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "GrandparentOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "ChildWithActivityOrch", "{}").Await()
	})
	orch(e.t, r, "ChildWithActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "ChildActivity", "{}").Await()
	})
	act(e.t, r, "ChildActivity", func(durable.ActivityContext, string) (string, error) { return "activity-result", nil })
	e.start(r, fastPoisonOptions(10))
	fp.InjectActivityAttemptsPersistent(11)
	const instance = "poison-chain-test"
	e.startOrch(instance, "GrandparentOrch", "{}")
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(11), p.AttemptCount)
	require.Equal(e.t, uint32(10), p.MaxAttempts)
	require.Equal(e.t, duroxide.PoisonActivity, p.MessageType.Kind, "Expected Activity message type")
	require.Equal(e.t, "ChildActivity", p.MessageType.ActivityName)
}

func e2ePoisonMessageCreatesInstanceIfMissing(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "NeverRuns", func(*durable.OrchestrationContext, string) (string, error) {
		panic("This orchestration code should never execute - message is poison")
	})
	fp.InjectOrchestrationAttempts(11)
	e.start(r, fastPoisonOptions(10))
	const instance = "poison-creates-instance-test"
	e.startOrch(instance, "NeverRuns", `{"test":"data"}`)
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, uint32(11), p.AttemptCount, "Should have injected attempt_count")
	require.Equal(e.t, uint32(10), p.MaxAttempts, "Should have max_attempts from options")
	require.Equal(e.t, duroxide.PoisonOrchestration, p.MessageType.Kind)
	require.Equal(e.t, instance, p.MessageType.Instance, "Message type should reference our instance")
	require.Equal(e.t, uint64(1), p.MessageType.ExecutionID)

	info, err := e.client().InstanceInfo(e.ctx, instance)
	require.NoError(e.t, err, "Instance MUST exist after poison handling")
	require.Equal(e.t, instance, info.InstanceID)
	require.Equal(e.t, "NeverRuns", info.OrchestrationName, "Should have correct orchestration name")
	require.Equal(e.t, "Failed", info.Status, "Status should be Failed")

	h := e.executionHistory(instance, 1)
	require.GreaterOrEqual(e.t, len(h), 2, "History should have at least 2 events")
	started, ok := h[0].Kind.(duroxide.OrchestrationStarted)
	require.True(e.t, ok, "First event should be OrchestrationStarted, got %#v", h[0].Kind)
	require.Equal(e.t, "NeverRuns", started.Name, "Started event should have orchestration name")
	require.NotEmpty(e.t, started.Version, "Started event should have version")
	require.Contains(e.t, started.Input, "test", "Started event should have input")
	failed, ok := h[len(h)-1].Kind.(duroxide.OrchestrationFailed)
	require.True(e.t, ok, "Last event should be OrchestrationFailed, got %#v", h[len(h)-1].Kind)
	_, poison := failed.Details.(duroxide.PoisonError)
	require.True(e.t, poison, "Failed event should have Poison details, got %#v", failed.Details)
}
