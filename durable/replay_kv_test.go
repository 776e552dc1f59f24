package durable

// Port of duroxide 0.1.29 tests/replay_engine/kv.rs: KV action→event
// conversion, replay determinism of KV events, new KV events after replay
// and KV snapshot seeding.

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// kvGetOr is Rust's ctx.get_kv_value(key).unwrap_or(def).
func kvGetOr(ctx *OrchestrationContext, key, def string) string {
	if v, ok := ctx.KVValue(key); ok {
		return v
	}
	return def
}

// kvCounter reads key (default def) as a number, as Rust's
// val.parse::<u32>().unwrap() does; a bad value fails the turn.
func kvCounter(ctx *OrchestrationContext, key, def string) (uint64, error) {
	v := kvGetOr(ctx, key, def)
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", v, err)
	}
	return n, nil
}

// hSetKeyValue sets key=value and returns "done".
func hSetKeyValue(key, value string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue(key, value)
		return "done", nil
	}
}

// hSetThenGet sets key=value and returns what reading it back gives.
func hSetThenGet(key, value string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue(key, value)
		return kvGetOr(ctx, key, ""), nil
	}
}

// hClearAllValues clears every key and returns "cleared".
func hClearAllValues(ctx *OrchestrationContext, _ string) (string, error) {
	ctx.ClearAllKVValues()
	return "cleared", nil
}

// hClearValue clears key and returns "cleared".
func hClearValue(key string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.ClearKVValue(key)
		return "cleared", nil
	}
}

// hSetClearSet sets A, clears all, sets B and reports both.
func hSetClearSet(ctx *OrchestrationContext, _ string) (string, error) {
	ctx.SetKVValue("A", "1")
	ctx.ClearAllKVValues()
	ctx.SetKVValue("B", "2")
	return fmt.Sprintf("A=%s,B=%s", kvGetOr(ctx, "A", "none"), kvGetOr(ctx, "B", "none")), nil
}

// hSetThenClearSingle sets A and B, clears only A and reports both.
func hSetThenClearSingle(ctx *OrchestrationContext, _ string) (string, error) {
	ctx.SetKVValue("A", "1")
	ctx.SetKVValue("B", "2")
	ctx.ClearKVValue("A")
	return fmt.Sprintf("A=%s,B=%s", kvGetOr(ctx, "A", "none"), kvGetOr(ctx, "B", "none")), nil
}

// hSetKVThenActivity sets key=value, then awaits an activity.
func hSetKVThenActivity(key, value, activity, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue(key, value)
		return CallActivity[string](ctx, activity, input).Await()
	}
}

// hAllKVOps does set, clear one, clear all, set, then reads A.
func hAllKVOps(ctx *OrchestrationContext, _ string) (string, error) {
	ctx.SetKVValue("X", "Y")
	ctx.ClearKVValue("Z")
	ctx.ClearAllKVValues()
	ctx.SetKVValue("A", "1")
	return kvGetOr(ctx, "A", ""), nil
}

// hReadSnapshot returns key's value or "missing".
func hReadSnapshot(key string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return kvGetOr(ctx, key, "missing"), nil
	}
}

// hReadThenOverwriteSnapshot overwrites key and reads it back.
func hReadThenOverwriteSnapshot(key, newValue string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue(key, newValue)
		return kvGetOr(ctx, key, "missing"), nil
	}
}

// kvDelta returns the KV events of the history delta in order.
func kvDelta(e *replayEngine) []duroxide.Event {
	var out []duroxide.Event
	for _, ev := range e.historyDelta() {
		switch ev.Kind.(type) {
		case duroxide.KeyValueSet, duroxide.KeyValueCleared, duroxide.KeyValuesCleared:
			out = append(out, ev)
		}
	}
	return out
}

func init() {
	registerReplaySuite("kv",
		// 2.1 Action/event conversion.
		replayCase{"action_to_event_kv_variants", func(t *testing.T) { // RE-KV-01
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			r := executeTurn(e, hAllKVOps)
			assertTurnCompleted(t, r, "1")

			kv := kvDelta(e)
			if len(kv) != 4 {
				t.Fatalf("should have 4 KV events in delta, got %d: %v", len(kv), kv)
			}
			for _, ev := range kv {
				if ev.SourceEventID != nil {
					t.Fatalf("KV events should not have source_event_id: %v", ev)
				}
			}
			if k, ok := kv[0].Kind.(duroxide.KeyValueSet); !ok || k.Key != "X" || k.Value != "Y" {
				t.Fatalf("kv[0] = %#v, want KeyValueSet{X,Y}", kv[0].Kind)
			}
			if k, ok := kv[1].Kind.(duroxide.KeyValueCleared); !ok || k.Key != "Z" {
				t.Fatalf("kv[1] = %#v, want KeyValueCleared{Z}", kv[1].Kind)
			}
			if _, ok := kv[2].Kind.(duroxide.KeyValuesCleared); !ok {
				t.Fatalf("kv[2] = %#v, want KeyValuesCleared", kv[2].Kind)
			}
			if k, ok := kv[3].Kind.(duroxide.KeyValueSet); !ok || k.Key != "A" || k.Value != "1" {
				t.Fatalf("kv[3] = %#v, want KeyValueSet{A,1}", kv[3].Kind)
			}
		}},

		// 2.2 Replay determinism.
		replayCase{"replay_set_value_reconstructs_state", func(t *testing.T) { // RE-KV-02
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVSet(2, "A", "1", 0)})
			assertTurnCompleted(t, executeTurn(e, hSetThenGet("A", "1")), "1")
		}},
		replayCase{"replay_multiple_sets_last_wins", func(t *testing.T) { // RE-KV-03
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVSet(2, "A", "1", 0), evKVSet(3, "A", "2", 0)})
			setTwice := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.SetKVValue("A", "1")
				ctx.SetKVValue("A", "2")
				return kvGetOr(ctx, "A", ""), nil
			}
			assertTurnCompleted(t, executeTurn(e, setTwice), "2")
		}},
		replayCase{"replay_clear_then_set", func(t *testing.T) { // RE-KV-04
			e := newTestEngine([]duroxide.Event{
				evStarted(1), evKVSet(2, "A", "1", 0), evKVAllCleared(3), evKVSet(4, "B", "2", 0),
			})
			assertTurnCompleted(t, executeTurn(e, hSetClearSet), "A=none,B=2")
		}},
		replayCase{"replay_clear_single_key", func(t *testing.T) { // RE-KV-04a
			e := newTestEngine([]duroxide.Event{
				evStarted(1), evKVSet(2, "A", "1", 0), evKVSet(3, "B", "2", 0), evKVCleared(4, "A"),
			})
			assertTurnCompleted(t, executeTurn(e, hSetThenClearSingle), "A=none,B=2")
		}},
		replayCase{"replay_set_value_matches_action", func(t *testing.T) { // RE-KV-05
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVSet(2, "A", "1", 0)})
			assertTurnCompleted(t, executeTurn(e, hSetKeyValue("A", "1")), "done")
		}},
		replayCase{"replay_set_value_mismatch_nondeterminism", func(t *testing.T) { // RE-KV-06
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "A", "1", 0),
				evActivityScheduled(3, "Task", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			// The code schedules an activity instead of setting the key.
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("Task", "input")))
		}},
		replayCase{"replay_clear_all_values_matches_action", func(t *testing.T) { // RE-KV-07
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVAllCleared(2)})
			assertTurnCompleted(t, executeTurn(e, hClearAllValues), "cleared")
		}},
		replayCase{"replay_clear_value_matches_action", func(t *testing.T) { // RE-KV-07a
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVCleared(2, "A")})
			assertTurnCompleted(t, executeTurn(e, hClearValue("A")), "cleared")
		}},
		replayCase{"replay_clear_value_mismatch_nondeterminism", func(t *testing.T) { // RE-KV-07b
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVCleared(2, "A"),
				evActivityScheduled(3, "Task", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("Task", "input")))
		}},
		replayCase{"replay_kv_interleaved_with_activities", func(t *testing.T) { // RE-KV-08
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "progress", "started", 0),
				evActivityScheduled(3, "DoWork", "work-input"),
				evActivityCompleted(4, 3, "work-result"),
			})
			r := executeTurn(e, hSetKVThenActivity("progress", "started", "DoWork", "work-input"))
			assertTurnCompleted(t, r, "work-result")
		}},
		replayCase{"replay_kv_no_token_binding", func(t *testing.T) { // RE-KV-09
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVSet(2, "k", "v", 0)})
			// A KV set does not suspend the orchestration.
			assertTurnCompleted(t, executeTurn(e, hSetKeyValue("k", "v")), "done")
		}},

		// 2.3 New events and snapshot seeding.
		replayCase{"new_kv_events_after_replay", func(t *testing.T) { // RE-KV-10
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hAllKVOps), "1")
			if kv := kvDelta(e); len(kv) < 3 {
				t.Fatalf("should have at least set, clear_value, clear_all in delta, got %v", kv)
			}
		}},
		replayCase{"kv_state_seeded_from_snapshot", func(t *testing.T) { // RE-KV-11
			e := newTestEngine([]duroxide.Event{evStarted(1)}).withKVSnapshot(map[string]duroxide.KVEntry{
				"X": {Value: "from_prev_exec", LastUpdatedAtMs: 100},
			})
			assertTurnCompleted(t, executeTurn(e, hReadSnapshot("X")), "from_prev_exec")
		}},
		replayCase{"kv_state_snapshot_overridden_by_code", func(t *testing.T) { // RE-KV-12
			e := newTestEngine([]duroxide.Event{evStarted(1)}).withKVSnapshot(map[string]duroxide.KVEntry{
				"X": {Value: "old", LastUpdatedAtMs: 100},
			})
			assertTurnCompleted(t, executeTurn(e, hReadThenOverwriteSnapshot("X", "new")), "new")
		}},

		// 2.4 In-turn, cross-turn and cross-execution reads.
		replayCase{"kv_get_value_same_turn", func(t *testing.T) { // RE-KV-13
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hSetThenGet("mykey", "myval")), "myval")
		}},
		replayCase{"kv_get_value_previous_turn", func(t *testing.T) { // RE-KV-14
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "progress", "step_1", 100),
				evActivityScheduled(3, "Work", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			previousTurnRead := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.SetKVValue("progress", "step_1") // replayed
				if _, err := CallActivity[string](ctx, "Work", "input").Await(); err != nil {
					return "", err
				}
				return kvGetOr(ctx, "progress", "missing"), nil
			}
			assertTurnCompleted(t, executeTurn(e, previousTurnRead), "step_1")
		}},
		replayCase{"kv_get_value_previous_execution", func(t *testing.T) { // RE-KV-15
			e := newTestEngine([]duroxide.Event{evStarted(1)}).withKVSnapshot(map[string]duroxide.KVEntry{
				"status": {Value: "from_exec_1", LastUpdatedAtMs: 500},
				"config": {Value: "old_config", LastUpdatedAtMs: 400},
			})
			readMultiple := func(ctx *OrchestrationContext, _ string) (string, error) {
				return fmt.Sprintf("status=%s,config=%s,absent=%s",
					kvGetOr(ctx, "status", "missing"),
					kvGetOr(ctx, "config", "missing"),
					kvGetOr(ctx, "nonexistent", "missing")), nil
			}
			assertTurnCompleted(t, executeTurn(e, readMultiple), "status=from_exec_1,config=old_config,absent=missing")
		}},

		// 2.5 Nondeterminism on key or value mismatch. The code suspends on
		// an activity so the replay loop reaches and checks the KV event.
		replayCase{"kv_set_key_mismatch_nondeterminism", func(t *testing.T) { // RE-KV-16
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "B", "1", 0),
				evActivityScheduled(3, "Task", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSetKVThenActivity("A", "1", "Task", "input")))
		}},
		replayCase{"kv_set_value_mismatch_nondeterminism", func(t *testing.T) { // RE-KV-17
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "A", "old", 0),
				evActivityScheduled(3, "Task", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSetKVThenActivity("A", "new", "Task", "input")))
		}},
		replayCase{"kv_clear_key_mismatch_nondeterminism", func(t *testing.T) { // RE-KV-18
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVCleared(2, "B"),
				evActivityScheduled(3, "Task", "input"),
				evActivityCompleted(4, 3, "result"),
			})
			clearThenActivity := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.ClearKVValue("A")
				return CallActivity[string](ctx, "Task", "input").Await()
			}
			assertTurnNondeterminism(t, executeTurn(e, clearThenActivity))
		}},
		replayCase{"kv_set_timestamp_mismatch_ok", func(t *testing.T) { // RE-KV-19
			// The code's timestamp (now) differs from 999; timestamps are not compared.
			e := newTestEngine([]duroxide.Event{evStarted(1), evKVSet(2, "A", "1", 999)})
			assertTurnCompleted(t, executeTurn(e, hSetKeyValue("A", "1")), "done")
		}},
		replayCase{"kv_read_modify_write_across_turns_replay", func(t *testing.T) { // RE-KV-20
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "counter", "1", 100), // turn 1
				evActivityScheduled(3, "Noop", ""),
				evActivityCompleted(4, 3, "ok"), // turn 2: pure read, no event
				evActivityScheduled(5, "Noop", ""),
				evActivityCompleted(6, 5, "ok"), // turn 3 runs new code
			}).withKVSnapshot(map[string]duroxide.KVEntry{
				"counter": {Value: "1", LastUpdatedAtMs: 100},
			})
			readModifyWrite := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.SetKVValue("counter", "1")
				if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
					return "", err
				}
				if v := kvGetOr(ctx, "counter", "missing"); v != "1" {
					return "", fmt.Errorf("assertion failed: counter = %q, want \"1\"", v)
				}
				if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
					return "", err
				}
				n, err := kvCounter(ctx, "counter", "missing")
				if err != nil {
					return "", err
				}
				ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
				return strconv.FormatUint(n+1, 10), nil
			}
			assertTurnCompleted(t, executeTurn(e, readModifyWrite), "2")
		}},
		replayCase{"kv_read_modify_write_every_turn_snapshot_poisons_replay", func(t *testing.T) { // RE-KV-21
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "counter", "1", 100),
				evActivityScheduled(3, "Noop", ""),
				evActivityCompleted(4, 3, "ok"),
				evKVSet(5, "counter", "2", 200),
				evActivityScheduled(6, "Noop", ""),
				evActivityCompleted(7, 6, "ok"),
				evKVSet(8, "counter", "3", 300),
				evActivityScheduled(9, "Noop", ""),
				evActivityCompleted(10, 9, "ok"),
			}) // empty snapshot: the current execution's values come from history
			rmwEveryTurn := func(ctx *OrchestrationContext, _ string) (string, error) {
				for range 4 {
					n, err := kvCounter(ctx, "counter", "0")
					if err != nil {
						return "", err
					}
					ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
					if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
						return "", err
					}
				}
				return kvGetOr(ctx, "counter", "0"), nil
			}
			// Replay goes 0→1→2→3; turn 4's activity is new and pending.
			assertTurnContinue(t, executeTurn(e, rmwEveryTurn))
		}},
		replayCase{"kv_read_modify_write_with_can_snapshot", func(t *testing.T) { // RE-KV-22
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVSet(2, "counter", "6", 100),
				evActivityScheduled(3, "Noop", ""),
				evActivityCompleted(4, 3, "ok"),
			}).withKVSnapshot(map[string]duroxide.KVEntry{
				"counter": {Value: "5", LastUpdatedAtMs: 50}, // from a prior execution
			})
			rmwCAN := func(ctx *OrchestrationContext, _ string) (string, error) {
				n, err := kvCounter(ctx, "counter", "0")
				if err != nil {
					return "", err
				}
				ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
				if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
					return "", err
				}
				n, err = kvCounter(ctx, "counter", "0")
				if err != nil {
					return "", err
				}
				ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
				return strconv.FormatUint(n+1, 10), nil
			}
			assertTurnCompleted(t, executeTurn(e, rmwCAN), "7")
		}},
		replayCase{"kv_clear_all_then_set_replay", func(t *testing.T) { // RE-KV-23
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVAllCleared(1), // Rust's fixture reuses id 1 here
				evKVSet(2, "x", "new", 100),
				evActivityScheduled(3, "Noop", ""),
				evActivityCompleted(4, 3, "ok"),
			}).withKVSnapshot(map[string]duroxide.KVEntry{
				"old": {Value: "stale", LastUpdatedAtMs: 10},
			})
			clearAllSet := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.ClearAllKVValues()
				ctx.SetKVValue("x", "new")
				if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
					return "", err
				}
				return fmt.Sprintf("x=%s,old=%s", kvGetOr(ctx, "x", "missing"), kvGetOr(ctx, "old", "gone")), nil
			}
			assertTurnCompleted(t, executeTurn(e, clearAllSet), "x=new,old=gone")
		}},
		replayCase{"kv_clear_single_snapshot_key_then_rmw", func(t *testing.T) { // RE-KV-24
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evKVCleared(2, "session"),
				evKVSet(3, "counter", "4", 100),
				evActivityScheduled(4, "Noop", ""),
				evActivityCompleted(5, 4, "ok"),
			}).withKVSnapshot(map[string]duroxide.KVEntry{
				"session": {Value: "abc", LastUpdatedAtMs: 10},
				"counter": {Value: "3", LastUpdatedAtMs: 20},
			})
			clearSingleRMW := func(ctx *OrchestrationContext, _ string) (string, error) {
				ctx.ClearKVValue("session")
				n, err := kvCounter(ctx, "counter", "0")
				if err != nil {
					return "", err
				}
				ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
				if _, err := CallActivity[string](ctx, "Noop", "").Await(); err != nil {
					return "", err
				}
				return fmt.Sprintf("session=%s,counter=%s",
					kvGetOr(ctx, "session", "gone"), kvGetOr(ctx, "counter", "missing")), nil
			}
			assertTurnCompleted(t, executeTurn(e, clearSingleRMW), "session=gone,counter=4")
		}},
	)
}
