package main

import (
	"context"
	"time"
)

// fanInput is an instance's input, the same for every system: how many
// activities to fan out, how long each sleeps, and the payload each carries.
type fanInput struct {
	Tasks   int    `json:"tasks"`
	DelayMS int    `json:"delay_ms"`
	Payload string `json:"payload,omitempty"`
}

// taskInput is one activity's input.
type taskInput struct {
	Index   int    `json:"index"`
	DelayMS int    `json:"delay_ms"`
	Payload string `json:"payload,omitempty"`
}

// processTask is the activity body shared by every system: sleep, then echo
// the payload.
func processTask(ctx context.Context, in taskInput) (string, error) {
	if in.DelayMS > 0 {
		t := time.NewTimer(time.Duration(in.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return in.Payload, nil
}
