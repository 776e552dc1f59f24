package duroxide_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

func TestParseInstanceStateAndOrder(t *testing.T) {
	for _, s := range duroxide.InstanceStates() {
		got, err := duroxide.ParseInstanceState(" " + string(s) + " ")
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	got, err := duroxide.ParseInstanceState("Failed")
	require.NoError(t, err)
	require.Equal(t, duroxide.InstanceFailed, got)
	for _, bad := range []string{"", "canceled", "Running'", "ContinuedAsNew"} {
		_, err := duroxide.ParseInstanceState(bad)
		require.ErrorIs(t, err, duroxide.ErrInvalidInput, bad)
	}
	for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderCreatedAsc, duroxide.OrderAny} {
		got, err := duroxide.ParseSearchOrder(o.String())
		require.NoError(t, err)
		require.Equal(t, o, got)
	}
	_, err = duroxide.ParseSearchOrder("newest")
	require.ErrorIs(t, err, duroxide.ErrInvalidInput)
}

// TestStateOfClassifiesStoredFields: cancelled is a failure whose output is
// the runtime's cancellation text; blocked applies to running instances
// only.
func TestStateOfClassifiesStoredFields(t *testing.T) {
	out := func(s string) *string { return &s }
	require.Equal(t, duroxide.InstanceCanceled, duroxide.StateOf(duroxide.StatusFailed, out("canceled: by operator"), false, false))
	require.Equal(t, duroxide.InstanceFailed, duroxide.StateOf(duroxide.StatusFailed, out("cancelled: not the runtime's text"), false, false))
	require.Equal(t, duroxide.InstanceFailed, duroxide.StateOf(duroxide.StatusFailed, nil, false, false))
	require.Equal(t, duroxide.InstanceCompleted, duroxide.StateOf(duroxide.StatusCompleted, out("canceled: output"), true, false))
	require.Equal(t, duroxide.InstanceBlocked, duroxide.StateOf(duroxide.StatusRunning, nil, true, false))
	require.Equal(t, duroxide.InstanceRunning, duroxide.StateOf(duroxide.StatusContinuedAsNew, nil, false, false))
	require.Equal(t, duroxide.InstanceSuspended, duroxide.StateOf(duroxide.StatusRunning, nil, true, true))
	require.Equal(t, duroxide.InstanceFailed, duroxide.StateOf(duroxide.StatusFailed, nil, false, true), "an ended instance is not suspended")
}

// TestContinuationTokenIsBoundToItsCriteria: a token resumes only the
// search that made it; page size may change.
func TestContinuationTokenIsBoundToItsCriteria(t *testing.T) {
	q := duroxide.InstanceQuery{Name: "A", States: []duroxide.InstanceState{duroxide.InstanceFailed, duroxide.InstanceCanceled}, CreatedFrom: time.UnixMilli(1000)}
	tok := q.EncodeCursor(duroxide.SearchCursor{CreatedAt: 5, ID: "it's"})
	same := q
	same.PageSize, same.CountTotal, same.ContinuationToken = 7, true, tok
	same.States = []duroxide.InstanceState{duroxide.InstanceCanceled, duroxide.InstanceFailed, duroxide.InstanceFailed}
	c, ok, err := same.DecodeCursor("test")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, duroxide.SearchCursor{CreatedAt: 5, ID: "it's"}, c)
	for _, other := range []duroxide.InstanceQuery{
		{Name: "B"}, {Name: "A"}, {Name: "A", States: q.States}, {Name: "A", States: q.States, CreatedFrom: q.CreatedFrom, OrderBy: duroxide.OrderAny},
	} {
		other.ContinuationToken = tok
		_, _, err := other.DecodeCursor("test")
		require.ErrorIs(t, err, duroxide.ErrInvalidInput, "%+v", other)
	}
}
