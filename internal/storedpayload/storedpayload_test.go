package storedpayload

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// TestOfFindsEveryPayloadField: Of reads the stored form of each payload-carrying kind, carried-forward events
// included, and nothing that is not a payload.
func TestOfFindsEveryPayloadField(t *testing.T) {
	status := "st"
	for _, c := range []struct {
		kind duroxide.EventKind
		want []string
	}{
		{duroxide.OrchestrationStarted{Name: "o", Version: "1.0.0", Input: "in",
			CarryForwardEvents: []duroxide.CarryForwardEvent{{Name: "e", Data: "carried"}}, InitialCustomStatus: &status}, []string{"carried", "in", "st"}},
		{duroxide.OrchestrationCompleted{Output: "out"}, []string{"out"}},
		{duroxide.ActivityScheduled{Name: "a", Input: "ain"}, []string{"ain"}},
		{duroxide.ActivityCompleted{Result: "res"}, []string{"res"}},
		{duroxide.ExternalEvent{Name: "e", Data: "dat"}, []string{"dat"}},
		{duroxide.KeyValueSet{Key: "k", Value: "val"}, []string{"val"}},
		{duroxide.CustomStatusUpdated{Status: &status}, []string{"st"}},
		{duroxide.ActivityCancelRequested{Reason: "dropped_future"}, nil},
	} {
		got, err := Of(duroxide.Event{EventID: 2, InstanceID: "i", ExecutionID: 1, Kind: c.kind})
		require.NoError(t, err)
		slices.Sort(got)
		require.Equal(t, c.want, got, "%T", c.kind)
	}
}
