package providertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/custom_status.rs (7 tests).
// The status is set through CustomStatusUpdated events in history_delta;
// a "poke" (ExternalRaised) gives the instance another turn.

var customStatusTests = []Test{
	{Name: "test_custom_status_set", Func: testCustomStatusSet},
	{Name: "test_custom_status_clear", Func: testCustomStatusClear},
	{Name: "test_custom_status_none_preserves", Func: testCustomStatusNonePreserves},
	{Name: "test_custom_status_version_increments", Func: testCustomStatusVersionIncrements},
	{Name: "test_custom_status_polling_no_change", Func: testCustomStatusPollingNoChange},
	{Name: "test_custom_status_nonexistent_instance", Func: testCustomStatusNonexistentInstance},
	{Name: "test_custom_status_default_on_new_instance", Func: testCustomStatusDefaultOnNewInstance},
}

// mustCustomStatus reads the custom status and requires a value.
func mustCustomStatus(t *testing.T, p duroxide.Provider, instance string, lastSeen uint64) *duroxide.CustomStatus {
	t.Helper()
	cs, err := p.CustomStatus(t.Context(), instance, lastSeen)
	require.NoError(t, err, "get_custom_status")
	require.NotNil(t, cs, "expected a custom status newer than version %d", lastSeen)
	return cs
}

// setCustomStatus runs one turn whose delta holds a CustomStatusUpdated.
func setCustomStatus(t *testing.T, p duroxide.Provider, instance string, eventID uint64, status *string) {
	t.Helper()
	admPokeAck(t, p, instance, 1, []duroxide.Event{csEvent(instance, 1, eventID, status)}, duroxide.ExecutionMetadata{})
}

func testCustomStatusSet(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "cs-set")
	setCustomStatus(t, p, "cs-set", 100, ptr("progress"))

	cs := mustCustomStatus(t, p, "cs-set", 0)
	assert.Equal(t, ptr("progress"), cs.Status)
	assert.Equal(t, uint64(1), cs.Version)
}

func testCustomStatusClear(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "cs-clear")
	setCustomStatus(t, p, "cs-clear", 100, ptr("temp"))
	assert.Equal(t, ptr("temp"), mustCustomStatus(t, p, "cs-clear", 0).Status)

	setCustomStatus(t, p, "cs-clear", 101, nil)
	cs := mustCustomStatus(t, p, "cs-clear", 0)
	assert.Nil(t, cs.Status, "custom status should be cleared")
	assert.Equal(t, uint64(2), cs.Version, "version should be 2 after set + clear")
}

func testCustomStatusNonePreserves(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "cs-noop")
	setCustomStatus(t, p, "cs-noop", 100, ptr("keep-me"))
	admPokeAck(t, p, "cs-noop", 1, nil, duroxide.ExecutionMetadata{})

	cs := mustCustomStatus(t, p, "cs-noop", 0)
	assert.Equal(t, ptr("keep-me"), cs.Status, "a turn without CustomStatusUpdated must not modify the value")
	assert.Equal(t, uint64(1), cs.Version, "the version must not increment without CustomStatusUpdated")
}

func testCustomStatusVersionIncrements(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "cs-ver")

	setCustomStatus(t, p, "cs-ver", 100, ptr("a"))
	assert.Equal(t, uint64(1), mustCustomStatus(t, p, "cs-ver", 0).Version)

	setCustomStatus(t, p, "cs-ver", 101, ptr("b"))
	assert.Equal(t, uint64(2), mustCustomStatus(t, p, "cs-ver", 0).Version)

	setCustomStatus(t, p, "cs-ver", 102, nil)
	cs := mustCustomStatus(t, p, "cs-ver", 0)
	assert.Equal(t, uint64(3), cs.Version)
	assert.Nil(t, cs.Status)
}

func testCustomStatusPollingNoChange(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	createInstance(t, p, "cs-poll")
	setCustomStatus(t, p, "cs-poll", 100, ptr("v1"))

	cs, err := p.CustomStatus(ctx, "cs-poll", 1)
	require.NoError(t, err)
	assert.Nil(t, cs, "no change since version 1")

	cs, err = p.CustomStatus(ctx, "cs-poll", 0)
	require.NoError(t, err)
	assert.NotNil(t, cs, "version 1 > 0")
}

func testCustomStatusNonexistentInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	cs, err := p.CustomStatus(ctx, "does-not-exist", 0)
	require.NoError(t, err)
	assert.Nil(t, cs)
}

func testCustomStatusDefaultOnNewInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	createInstance(t, p, "cs-default")
	cs, err := p.CustomStatus(ctx, "cs-default", 0)
	require.NoError(t, err)
	assert.Nil(t, cs, "a fresh instance has version 0, which is not > 0")
}
