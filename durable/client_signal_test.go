package durable

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// clientWriterOnly hides every optional capability of its provider but
// ClientWriter: SignalWithStart's two-write fallback.
type clientWriterOnly struct {
	duroxide.Provider
	duroxide.ClientWriter
}

func TestSignalWithStartFallsBackToStartThenEnqueue(t *testing.T) {
	mp := newMemProvider()
	p := clientWriterOnly{mp, mp}
	c := NewClient(p)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	starts := 0
	for i := range 6 {
		wg.Go(func() {
			started, err := c.SignalWithStart(ctx, "fb", "O", "in", Signal{Queue: "q", Data: fmt.Sprint(i)})
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if started {
				starts++
			}
		})
	}
	wg.Wait()
	require.GreaterOrEqual(t, starts, 1)
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, in string) (string, error) {
		got := []string{}
		for range 6 {
			v, err := DequeueEvent[string](ctx, "q").Await()
			if err != nil {
				return "", err
			}
			got = append(got, v)
		}
		sort.Strings(got)
		return in + ":" + strings.Join(got, ","), nil
	}))
	rt, err := Start(ctx, p, reg, &Options{MinPollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(ctx)) }()
	st, err := c.WaitForOrchestration(ctx, "fb", WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "in:0,1,2,3,4,5", st.Output)
}

func TestSignalWithStartRefusesAProviderWithoutClientWriter(t *testing.T) {
	c := NewClient(struct{ duroxide.Provider }{newMemProvider()})
	_, err := c.SignalWithStart(context.Background(), "x", "O", "in", Signal{Queue: "q"})
	require.ErrorIs(t, err, ErrSignalWithStartNotSupported)
}
