// Package replayer checks orchestration code against recorded histories
// before it is deployed: it replays each stored execution through the
// code in a durable.Registry, never running an activity or writing
// anything, and reports every instance the runtime would fail (or, under
// NondeterminismBlock, hold) with the runtime's own text naming the
// mismatching call and event.
//
// Start with [RequireReplays] in a test, or [Replay], with a source from
// [FromProvider] or [FromExportFile].
//
// Histories come from a Source: a provider (FromProvider, all instances or
// filtered by orchestration name, status or id prefix) or a JSON export
// (FromExportFile) that Export writes, so a deploy pipeline can check new
// code against histories exported from production:
//
//	report, err := replayer.Replay(ctx, registry, replayer.FromExportFile("histories.json"))
//	if err != nil { ... }          // the source could not be read
//	if !report.OK() { report.WriteText(os.Stderr) }
//
// In a test, RequireReplays fails the test listing each instance that does
// not replay:
//
//	func TestCodeReplaysProduction(t *testing.T) {
//		replayer.RequireReplays(t, newRegistry(), replayer.FromExportFile("testdata/prod.json"))
//	}
//
// On the command line, package cmd/duroxide/cli provides `duroxide export`
// and `duroxide replay`; replay needs the code, so it runs from a main of
// your own that calls cli.Main with your registry.
//
// # What is checked
//
// Each execution is replayed with the orchestration name and version its
// OrchestrationStarted records (durable.CheckHistory). A terminal event is
// set aside first: the check is that the code makes the recorded calls in
// the recorded order, not that it returns the same output. Calls the code
// makes beyond the recorded history are what a live instance would do next
// and are fine. Code that panics replaying a history that did not end in a
// failure is reported too (StatusPanicked): the runtime would fail the
// instance. By default only each instance's current execution is
// checked (the only one the runtime replays); Filter.AllExecutions checks
// the earlier ones of a continue-as-new chain too. The KV snapshot a turn
// sees is rebuilt from the KV events of the earlier executions still
// stored; values written by pruned executions are missing from it.
//
// # Patches
//
// Each result lists the patches whose old branch the execution took
// (Result.OldPatches: ctx.Patched answered false, as it will on every
// later replay), and Report.OldPatchBranches names the executions not
// ended yet that still need a patch's old branch. When it is empty over
// every running instance, ctx.DeprecatePatch can replace ctx.Patched and
// the old branch can go; replaying the deprecated code against the same
// histories then confirms it (an instance still on the old branch does
// not replay it). WriteText lists those executions too.
//
// Code that continues as new on ctx.ContinueAsNewSuggested replays only
// with the limits its runtime had: pass them in Options.HistoryLimits.
//
// # Export format
//
// An export is one JSON object, versioned by its "format" field:
//
//	{"format": "duroxide-history-export/v1",
//	 "executions": [
//	   {"instance": "order-1", "execution_id": 1,
//	    "orchestration": "ProcessOrder", "version": "1.0.0", "status": "Running",
//	    "kv_snapshot": {"key": {"value": "v", "last_updated_at_ms": 1700000000000}},
//	    "events": [ ...duroxide events, in the byte-compatible JSON of package duroxide... ],
//	    "read_error": "set instead of events when the stored history could not be read"}]}
//
// Readers reject any other format value (ErrExportFormat).
package replayer
