package duroxide

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// nasty exercises every escaping rule: control characters, quote,
// backslash, HTML-sensitive characters, JS line separators, non-ASCII.
const nasty = "\x00\x01\b\t\n\v\f\r\x1f \"\\/<>&'\x7f\u0080\u00a0é\u2028\u2029\ufeff漢字😀\U0010ffff"

// nastyJSON is how serde_json writes nasty.
const nastyJSON = `"\u0000\u0001\b\t\n\u000b\f\r\u001f \"\\/<>&'` + "\x7f\u0080\u00a0é\u2028\u2029\ufeff漢字😀\U0010ffff" + `"`

var sampleDetails = []ErrorDetails{
	InfrastructureError{Operation: "ack", Message: nasty, Retryable: true},
	InfrastructureError{},
	ConfigurationError{Kind: ConfigNondeterminism, Resource: "R", Message: ptr("m")},
	ConfigurationError{Kind: ConfigNondeterminism},
	ApplicationError{Kind: AppErrorKind{Type: AppActivityFailed}, Message: "boom", Retryable: true},
	ApplicationError{Kind: AppErrorKind{Type: AppOrchestrationFailed}},
	ApplicationError{Kind: AppErrorKind{Type: AppPanicked}, Message: nasty},
	ApplicationError{Kind: AppErrorKind{Type: AppCancelled, Reason: nasty}},
	ApplicationError{Kind: AppErrorKind{Type: AppCancelled}},
	PoisonError{AttemptCount: math.MaxUint32, MessageType: PoisonMessageType{Kind: PoisonOrchestration, Instance: "i", ExecutionID: math.MaxUint64}, Message: "[]"},
	PoisonError{AttemptCount: 11, MaxAttempts: 10, MessageType: PoisonMessageType{Kind: PoisonActivity, Instance: "i", ExecutionID: 1, ActivityName: "A", ActivityID: math.MaxUint64}, Message: nasty},
	PoisonError{AttemptCount: 3, MaxAttempts: 2, MessageType: PoisonMessageType{Kind: PoisonFailedDeserialization, Instance: "i", Error: "unknown variant"}},
}

// sampleKinds holds every event kind, several with each optional field
// both nil and set.
func sampleKinds() []EventKind {
	kinds := []EventKind{
		OrchestrationStarted{Name: "N", Version: "1.0.0", Input: nasty},
		OrchestrationStarted{ParentInstance: ptr("p"), ParentID: ptr(uint64(math.MaxUint64)), ParentExecutionID: ptr(uint64(0)), CarryForwardEvents: []CarryForwardEvent{}, InitialCustomStatus: ptr("")},
		OrchestrationStarted{Name: "N", CarryForwardEvents: []CarryForwardEvent{{"a", "b"}, {nasty, ""}}},
		OrchestrationCompleted{Output: nasty},
		ActivityScheduled{Name: "A", Input: "{}"},
		ActivityScheduled{Name: "A", SessionID: ptr(""), Tag: ptr("gpu")},
		ActivityCompleted{Result: nasty},
		ActivityCancelRequested{Reason: "r"},
		TimerCreated{FireAtMs: math.MaxUint64},
		TimerFired{},
		ExternalSubscribed{Name: "e"},
		ExternalEvent{Name: "e", Data: nasty},
		OrchestrationChained{Name: "n", Instance: "i", Input: "x"},
		SubOrchestrationScheduled{Name: "n", Instance: "i::sub::2", Input: "x"},
		SubOrchestrationCompleted{Result: "r"},
		SubOrchestrationCancelRequested{Reason: "r"},
		OrchestrationContinuedAsNew{Input: "next"},
		OrchestrationCancelRequested{Reason: "user"},
		ExternalSubscribedCancelled{Reason: "lost"},
		ExternalSubscribedPersistent{Name: "q"},
		ExternalEventPersistent{Name: "q", Data: nasty},
		ExternalSubscribedPersistentCancelled{Reason: "lost"},
		CustomStatusUpdated{},
		CustomStatusUpdated{Status: ptr(nasty)},
		KeyValueSet{Key: "k", Value: nasty},
		KeyValueSet{LastUpdatedAtMs: math.MaxUint64},
		KeyValueCleared{Key: "k"},
		KeyValuesCleared{},
	}
	for _, d := range sampleDetails {
		kinds = append(kinds, OrchestrationFailed{Details: d}, ActivityFailed{Details: d}, SubOrchestrationFailed{Details: d})
	}
	return kinds
}

func sampleItems() []WorkItem {
	items := []WorkItem{
		StartOrchestrationItem{Instance: nasty, Orchestration: "O", ExecutionID: 1},
		StartOrchestrationItem{Instance: "c", Orchestration: "O", Input: "x", Version: ptr("1.0.0"), ParentInstance: ptr("p"), ParentID: ptr(uint64(2)), ParentExecutionID: ptr(uint64(math.MaxUint64)), ExecutionID: math.MaxUint64},
		ActivityExecuteItem{Instance: "i", ExecutionID: math.MaxUint64, ID: math.MaxUint64, Name: "A", Input: nasty},
		ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, SessionID: ptr("s"), Tag: ptr("")},
		ActivityCompletedItem{Instance: "i", ExecutionID: 1, ID: 2, Result: nasty},
		TimerFiredItem{Instance: "i", ExecutionID: 1, ID: 4, FireAtMs: math.MaxUint64},
		TimerFiredItem{Instance: "i", ExecutionID: 1, ID: ExecutionTimeoutTimerID, FireAtMs: 5, TimeoutMs: ptr(uint64(1000))},
		StartOrchestrationItem{Instance: "t", Orchestration: "O", ExecutionID: 1, ExecutionTimeoutMs: ptr(uint64(1)), InstanceTimeoutMs: ptr(uint64(math.MaxUint64))},
		ExternalRaisedItem{Instance: "i", Name: "n", Data: nasty},
		SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: math.MaxUint64, Result: ""},
		CancelInstanceItem{Instance: "i", Reason: nasty},
		CancelInstanceItem{Instance: "i", Reason: "r", ExecutionID: ptr(uint64(math.MaxUint64))},
		CancelInstanceItem{Instance: "i", Reason: "r", ParentExecutionID: ptr(uint64(2))},
		ContinueAsNewItem{Instance: "i", Orchestration: "O", CarryForwardEvents: []CarryForwardEvent{}},
		ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "n", Version: ptr("2"), ParentInstance: ptr("p"), ParentID: ptr(uint64(3)), ParentExecutionID: ptr(uint64(4)), CarryForwardEvents: []CarryForwardEvent{{nasty, "d"}, {"", ""}}, InitialCustomStatus: ptr(nasty)},
		ContinueAsNewItem{Instance: "i", Orchestration: "O", CarryForwardEvents: []CarryForwardEvent{}, RestartOf: ptr(uint64(2))},
		QueueMessageItem{Instance: "i", Name: "q", Data: nasty},
		RewindInstanceItem{Instance: nasty, ExecutionID: math.MaxUint64, Reason: nasty},
		RewindInstanceItem{Instance: "c", ExecutionID: 0, ParentExecutionID: ptr(uint64(7))},
		RedriveInstanceItem{Instance: "i", ExecutionID: 3, Reason: nasty},
		SuspendInstanceItem{Instance: nasty, Reason: nasty},
		ResumeInstanceItem{Instance: "i"},
	}
	for _, d := range sampleDetails {
		items = append(items, ActivityFailedItem{Instance: "i", ExecutionID: 1, ID: 2, Details: d}, SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 5, Details: d})
	}
	return items
}

func TestSamplesCoverEveryVariant(t *testing.T) {
	tags := map[string]bool{}
	for _, k := range sampleKinds() {
		tags[k.EventType()] = true
	}
	if len(tags) != 26 {
		t.Errorf("sample event kinds cover %d tags, want 26", len(tags))
	}
	variants := map[string]bool{}
	for _, w := range sampleItems() {
		variants[w.Variant()] = true
	}
	// duroxide's 11 variants plus the Go-only RewindInstance,
	// RedriveInstance, SuspendInstance and ResumeInstance.
	if len(variants) != 15 {
		t.Errorf("sample work items cover %d variants, want 15", len(variants))
	}
	if len(workItemLayouts) != 15 {
		t.Errorf("workItemLayouts has %d variants", len(workItemLayouts))
	}
}

func TestEventRoundTripAllKinds(t *testing.T) {
	for i, k := range sampleKinds() {
		e := Event{
			EventID:         uint64(i + 1),
			InstanceID:      "inst",
			ExecutionID:     math.MaxUint64,
			TimestampMs:     1760000000000,
			DuroxideVersion: "0.1.31",
			Kind:            k,
		}
		if i%2 == 1 {
			e.SourceEventID = ptr(uint64(math.MaxUint64))
		}
		data, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("%T: %v", k, err)
		}
		if !json.Valid(data) {
			t.Fatalf("%T: invalid JSON %s", k, data)
		}
		got, err := UnmarshalEvent(data)
		if err != nil {
			t.Fatalf("%T: decode %s: %v", k, data, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%T: round trip\n got %#v\nwant %#v", k, got, e)
		}
		// The type tag follows the common fields, in serde's order.
		prefix := `{"event_id":`
		if !bytes.HasPrefix(data, []byte(prefix)) || !bytes.Contains(data, []byte(`"duroxide_version":"0.1.31","type":"`+k.EventType()+`"`)) {
			t.Errorf("%T: unexpected layout %s", k, data)
		}
		// A pointer to the kind encodes identically.
		pe := e
		pe.Kind = reflect.New(reflect.TypeOf(k)).Interface().(EventKind)
		reflect.ValueOf(pe.Kind).Elem().Set(reflect.ValueOf(k))
		pdata, err := pe.MarshalJSON()
		if err != nil || !bytes.Equal(pdata, data) {
			t.Errorf("%T via pointer: %s, %v", k, pdata, err)
		}
	}
}

func TestWorkItemRoundTripAllVariants(t *testing.T) {
	for _, w := range sampleItems() {
		data, err := MarshalWorkItem(w)
		if err != nil {
			t.Fatalf("%T: %v", w, err)
		}
		if !json.Valid(data) || !bytes.HasPrefix(data, []byte(`{"`+w.Variant()+`":{`)) {
			t.Fatalf("%T: bad encoding %s", w, data)
		}
		got, err := UnmarshalWorkItem(data)
		if err != nil {
			t.Fatalf("%T: decode %s: %v", w, data, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%T: round trip\n got %#v\nwant %#v", w, got, w)
		}
		// json.Marshal uses the variant's MarshalJSON; json.Unmarshal into
		// the concrete type uses its UnmarshalJSON.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(w); err != nil || !bytes.Equal(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), data) {
			t.Errorf("%T: json.Encoder gives %s, %v", w, buf.Bytes(), err)
		}
		dst := reflect.New(reflect.TypeOf(w))
		if err := json.Unmarshal(data, dst.Interface()); err != nil {
			t.Errorf("%T: json.Unmarshal: %v", w, err)
		} else if !reflect.DeepEqual(dst.Elem().Interface(), w) {
			t.Errorf("%T: json.Unmarshal gives %#v", w, dst.Elem().Interface())
		}
		// A pointer to the item encodes identically.
		pw := reflect.New(reflect.TypeOf(w))
		pw.Elem().Set(reflect.ValueOf(w))
		if pdata, err := MarshalWorkItem(pw.Interface().(WorkItem)); err != nil || !bytes.Equal(pdata, data) {
			t.Errorf("%T via pointer: %s, %v", w, pdata, err)
		}
	}
}

func TestErrorDetailsRoundTripAllShapes(t *testing.T) {
	for _, d := range sampleDetails {
		data, err := MarshalErrorDetails(d)
		if err != nil {
			t.Fatalf("%#v: %v", d, err)
		}
		got, err := UnmarshalErrorDetails(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Errorf("round trip\n got %#v\nwant %#v", got, d)
		}
		dst := reflect.New(reflect.TypeOf(d))
		if err := json.Unmarshal(data, dst.Interface()); err != nil || !reflect.DeepEqual(dst.Elem().Interface(), d) {
			t.Errorf("json.Unmarshal into %T: %v", d, err)
		}
		if m, err := json.Marshal(d); err != nil || !json.Valid(m) {
			t.Errorf("json.Marshal(%T): %v", d, err)
		}
	}
}

func TestStringEscapingMatchesSerde(t *testing.T) {
	if got := string(appendString(nil, nasty)); got != nastyJSON {
		t.Errorf("appendString(nasty)\n got %s\nwant %s", got, nastyJSON)
	}
	// Every ASCII byte: serde escapes exactly '"', '\\' and < 0x20.
	for c := 0; c < 0x80; c++ {
		got := string(appendString(nil, string(rune(c))))
		var want string
		switch c {
		case '"':
			want = `"\""`
		case '\\':
			want = `"\\"`
		case '\b':
			want = `"\b"`
		case '\f':
			want = `"\f"`
		case '\n':
			want = `"\n"`
		case '\r':
			want = `"\r"`
		case '\t':
			want = `"\t"`
		default:
			if c < 0x20 {
				want = `"\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf]) + `"`
			} else {
				want = `"` + string(rune(c)) + `"`
			}
		}
		if got != want {
			t.Errorf("byte %#x: got %s want %s", c, got, want)
		}
	}
	for _, s := range []string{"", "plain", "<script>&amp;</script>", "\u2028\u2029", "😀", "\u00e9"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("%q: %s decodes to %q, %v", s, got, back, err)
		}
		if bytes.Contains(got, []byte(`\u`)) {
			t.Errorf("%q: unexpected \\u escape in %s", s, got)
		}
	}
}

// Invalid UTF-8 in a Go string is written as U+FFFD per invalid byte, as
// encoding/json does; Rust strings cannot hold it.
func TestInvalidUTF8IsReplaced(t *testing.T) {
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80", "x\xe2\x82y", "\xf4\x90\x80\x80"} {
		got := appendString(nil, s)
		std, _ := json.Marshal(s)
		var a, b string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%q: %s: %v", s, got, err)
		}
		_ = json.Unmarshal(std, &b)
		if a != b {
			t.Errorf("%q: got %q, encoding/json %q", s, a, b)
		}
	}
	e := Event{EventID: 1, InstanceID: "\xff", Kind: ActivityCompleted{Result: "ok\xfe"}}
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.InstanceID != "\uFFFD" || got.Kind.(ActivityCompleted).Result != "ok\uFFFD" {
		t.Errorf("got %#v", got)
	}
}

func TestDecodeRejectsInvalidUTF8Input(t *testing.T) {
	base := `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v","type":"ActivityCompleted","result":"R"}`
	for _, bad := range []string{"\xff", "\xc3", "\xed\xa0\x80", "\xc0\xaf"} {
		in := strings.Replace(base, "R", bad, 1)
		if _, err := UnmarshalEvent([]byte(in)); err == nil {
			t.Errorf("accepted invalid UTF-8 %q", bad)
		}
		in = strings.Replace(base, `"type"`, `"x":"`+bad+`","type"`, 1)
		if _, err := UnmarshalEvent([]byte(in)); err == nil {
			t.Errorf("accepted invalid UTF-8 %q in an ignored field", bad)
		}
	}
}

func TestU64Boundaries(t *testing.T) {
	const max = "18446744073709551615"
	in := `{"event_id":` + max + `,"source_event_id":` + max + `,"instance_id":"i","execution_id":` + max + `,"timestamp_ms":` + max + `,"duroxide_version":"v","type":"TimerCreated","fire_at_ms":` + max + `}`
	e, err := UnmarshalEvent([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if e.EventID != math.MaxUint64 || *e.SourceEventID != math.MaxUint64 || e.ExecutionID != math.MaxUint64 ||
		e.TimestampMs != math.MaxUint64 || e.Kind.(TimerCreated).FireAtMs != math.MaxUint64 {
		t.Errorf("got %#v", e)
	}
	if out, _ := e.MarshalJSON(); string(out) != in {
		t.Errorf("re-encoded %s", out)
	}
	for _, v := range []string{"18446744073709551616", "99999999999999999999", "1e3", "1.0", "-1", "-0", "01", `"1"`, "null", "true"} {
		bad := strings.Replace(in, `"fire_at_ms":`+max, `"fire_at_ms":`+v, 1)
		if _, err := UnmarshalEvent([]byte(bad)); err == nil {
			t.Errorf("fire_at_ms %s accepted", v)
		}
	}
}

func TestU32Range(t *testing.T) {
	mk := func(n string) []byte {
		return []byte(`{"Poison":{"attempt_count":` + n + `,"max_attempts":1,"message_type":{"Orchestration":{"instance":"i","execution_id":1}},"message":"m"}}`)
	}
	d, err := UnmarshalErrorDetails(mk("4294967295"))
	if err != nil || d.(PoisonError).AttemptCount != math.MaxUint32 {
		t.Errorf("max u32: %v, %v", d, err)
	}
	_, err = UnmarshalErrorDetails(mk("4294967296"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "Poison.attempt_count" {
		t.Errorf("u32 overflow: %v", err)
	}
}

func TestOptionalFieldsNullVersusOmitted(t *testing.T) {
	const common = `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v",`
	// Omitted "always written" fields decode as nil and are written back
	// as null; "skip" fields given as null decode as nil and are omitted.
	e, err := UnmarshalEvent([]byte(common + `"type":"OrchestrationStarted","name":"n","version":"1","input":"x","parent_execution_id":null,"carry_forward_events":null,"initial_custom_status":null}`))
	if err != nil {
		t.Fatal(err)
	}
	os := e.Kind.(OrchestrationStarted)
	if os.ParentInstance != nil || os.ParentID != nil || os.ParentExecutionID != nil || os.CarryForwardEvents != nil || os.InitialCustomStatus != nil {
		t.Errorf("got %#v", os)
	}
	out, _ := e.MarshalJSON()
	if want := common + `"type":"OrchestrationStarted","name":"n","version":"1","input":"x","parent_instance":null,"parent_id":null}`; string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	// An empty carry_forward_events list is kept (Some(vec![]) in Rust).
	e, err = UnmarshalEvent([]byte(common + `"type":"OrchestrationStarted","name":"n","version":"1","input":"x","carry_forward_events":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cf := e.Kind.(OrchestrationStarted).CarryForwardEvents; cf == nil || len(cf) != 0 {
		t.Errorf("carry_forward_events = %#v", cf)
	}
	if out, _ := e.MarshalJSON(); !bytes.Contains(out, []byte(`"parent_id":null,"carry_forward_events":[]}`)) {
		t.Errorf("got %s", out)
	}
	// CustomStatusUpdated.status: missing and null are both nil; written as null.
	for _, in := range []string{`"type":"CustomStatusUpdated"}`, `"type":"CustomStatusUpdated","status":null}`} {
		e, err := UnmarshalEvent([]byte(common + in))
		if err != nil || e.Kind.(CustomStatusUpdated).Status != nil {
			t.Errorf("%s: %#v %v", in, e, err)
		}
		if out, _ := e.MarshalJSON(); !bytes.HasSuffix(out, []byte(`"type":"CustomStatusUpdated","status":null}`)) {
			t.Errorf("got %s", out)
		}
	}
	// KeyValueSet.last_updated_at_ms defaults to 0 and is always written.
	e, err = UnmarshalEvent([]byte(common + `"type":"KeyValueSet","key":"k","value":"v"}`))
	if err != nil || e.Kind.(KeyValueSet).LastUpdatedAtMs != 0 {
		t.Fatalf("%#v %v", e, err)
	}
	if out, _ := e.MarshalJSON(); !bytes.HasSuffix(out, []byte(`"key":"k","value":"v","last_updated_at_ms":0}`)) {
		t.Errorf("got %s", out)
	}
	// ContinueAsNew.carry_forward_events: missing decodes as empty and is
	// always written.
	w, err := UnmarshalWorkItem([]byte(`{"ContinueAsNew":{"instance":"i","orchestration":"o","input":"x","version":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := MarshalWorkItem(w); string(out) != `{"ContinueAsNew":{"instance":"i","orchestration":"o","input":"x","version":null,"carry_forward_events":[]}}` {
		t.Errorf("got %s", out)
	}
	// StartOrchestration: version/parent_* always written, parent_execution_id skipped.
	out, _ = MarshalWorkItem(StartOrchestrationItem{Instance: "i", Orchestration: "o", ExecutionID: 1})
	if string(out) != `{"StartOrchestration":{"instance":"i","orchestration":"o","input":"","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}` {
		t.Errorf("got %s", out)
	}
	// The Go-only CancelInstance.execution_id and ContinueAsNew.restart_of
	// are skipped when nil, so the items stay what the Rust crate writes.
	out, _ = MarshalWorkItem(CancelInstanceItem{Instance: "i", Reason: "r"})
	if string(out) != `{"CancelInstance":{"instance":"i","reason":"r"}}` {
		t.Errorf("got %s", out)
	}
	out, _ = MarshalWorkItem(CancelInstanceItem{Instance: "i", Reason: "r", ExecutionID: ptr(uint64(3))})
	if string(out) != `{"CancelInstance":{"instance":"i","reason":"r","execution_id":3}}` {
		t.Errorf("got %s", out)
	}
	out, _ = MarshalWorkItem(CancelInstanceItem{Instance: "i", Reason: "r", ParentExecutionID: ptr(uint64(2))})
	if string(out) != `{"CancelInstance":{"instance":"i","reason":"r","parent_execution_id":2}}` {
		t.Errorf("got %s", out)
	}
	out, _ = MarshalWorkItem(ContinueAsNewItem{Instance: "i", Orchestration: "o", Input: "x", RestartOf: ptr(uint64(4))})
	if string(out) != `{"ContinueAsNew":{"instance":"i","orchestration":"o","input":"x","version":null,"carry_forward_events":[],"restart_of":4}}` {
		t.Errorf("got %s", out)
	}
	// The Go-only timeouts of StartOrchestration and TimerFired likewise.
	out, _ = MarshalWorkItem(StartOrchestrationItem{Instance: "i", Orchestration: "o", ExecutionID: 1, ExecutionTimeoutMs: ptr(uint64(7)), InstanceTimeoutMs: ptr(uint64(8))})
	if string(out) != `{"StartOrchestration":{"instance":"i","orchestration":"o","input":"","version":null,"parent_instance":null,"parent_id":null,"execution_id":1,"execution_timeout_ms":7,"instance_timeout_ms":8}}` {
		t.Errorf("got %s", out)
	}
	out, _ = MarshalWorkItem(TimerFiredItem{Instance: "i", ExecutionID: 1, ID: 2, FireAtMs: 3})
	if string(out) != `{"TimerFired":{"instance":"i","execution_id":1,"id":2,"fire_at_ms":3}}` {
		t.Errorf("got %s", out)
	}
	out, _ = MarshalWorkItem(TimerFiredItem{Instance: "i", ExecutionID: 1, ID: 2, FireAtMs: 3, TimeoutMs: ptr(uint64(4))})
	if string(out) != `{"TimerFired":{"instance":"i","execution_id":1,"id":2,"fire_at_ms":3,"timeout_ms":4}}` {
		t.Errorf("got %s", out)
	}
	// ActivityExecute: session_id and tag skipped when nil.
	out, _ = MarshalWorkItem(ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "n", Input: "x"})
	if string(out) != `{"ActivityExecute":{"instance":"i","execution_id":1,"id":2,"name":"n","input":"x"}}` {
		t.Errorf("got %s", out)
	}
	// KeyValuesCleared has only "type".
	out, _ = Event{EventID: 8, Kind: KeyValuesCleared{}}.MarshalJSON()
	if string(out) != `{"event_id":8,"source_event_id":null,"instance_id":"","execution_id":0,"timestamp_ms":0,"duroxide_version":"","type":"KeyValuesCleared"}` {
		t.Errorf("got %s", out)
	}
}

func TestUnknownVariantErrors(t *testing.T) {
	const common = `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v",`
	cases := []struct {
		what, in, enum, variant, field string
		decode                         func([]byte) error
	}{
		{"event", common + `"type":"ExternalEvent2","name":"n","topic":"t","data":"d"}`, "EventKind", "ExternalEvent2", "type", decodeEvent},
		{"event rust name", common + `"type":"QueueSubscribed","name":"n"}`, "EventKind", "QueueSubscribed", "type", decodeEvent},
		{"work item", `{"ExternalRaised2":{"instance":"i","name":"n","topic":"t","data":"d"}}`, "WorkItem", "ExternalRaised2", "", decodeWorkItem},
		{"details", `{"Timeout":{}}`, "ErrorDetails", "Timeout", "", decodeDetails},
		{"nested details", common + `"type":"ActivityFailed","details":{"Timeout":{}}}`, "ErrorDetails", "Timeout", "details", decodeEvent},
		{"app kind", `{"ActivityFailed":{"instance":"i","execution_id":1,"id":2,"details":{"Application":{"kind":"Timeout","message":"m","retryable":false}}}}`, "AppErrorKind", "Timeout", "ActivityFailed.details.Application.kind", decodeWorkItem},
		{"config kind", `{"Configuration":{"kind":"Other","resource":"r","message":null}}`, "ConfigErrorKind", "Other", "Configuration.kind", decodeDetails},
		{"poison type", `{"Poison":{"attempt_count":1,"max_attempts":1,"message_type":{"Timer":{}},"message":"m"}}`, "PoisonMessageType", "Timer", "Poison.message_type", decodeDetails},
	}
	for _, c := range cases {
		err := c.decode([]byte(c.in))
		if !errors.Is(err, ErrUnknownVariant) {
			t.Errorf("%s: error %v is not ErrUnknownVariant", c.what, err)
			continue
		}
		var uv *UnknownVariantError
		if !errors.As(err, &uv) || uv.Enum != c.enum || uv.Variant != c.variant || uv.Field != c.field {
			t.Errorf("%s: got %#v", c.what, uv)
		}
		if !strings.Contains(err.Error(), c.variant) {
			t.Errorf("%s: message %q does not name the variant", c.what, err)
		}
	}
}

func decodeEvent(b []byte) error    { _, err := UnmarshalEvent(b); return err }
func decodeWorkItem(b []byte) error { _, err := UnmarshalWorkItem(b); return err }
func decodeDetails(b []byte) error  { _, err := UnmarshalErrorDetails(b); return err }
func decodeInto(v any) func([]byte) error {
	return func(b []byte) error { return json.Unmarshal(b, v) }
}

func TestDecodeErrors(t *testing.T) {
	const common = `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v",`
	cases := []struct {
		what, in, field, msg string
		decode               func([]byte) error
	}{
		{"missing common", `{"event_id":1,"type":"KeyValuesCleared"}`, "instance_id", "missing field", decodeEvent},
		{"missing type", common + `"result":"x"}`, "type", "missing field", decodeEvent},
		{"missing variant field", common + `"type":"ActivityCompleted"}`, "result", "missing field", decodeEvent},
		{"duplicate", common + `"type":"ActivityCompleted","result":"a","result":"b"}`, "result", "duplicate field", decodeEvent},
		{"wrong type", common + `"type":"TimerFired","fire_at_ms":"5"}`, "fire_at_ms", "invalid type: string, expected u64", decodeEvent},
		{"null string", common + `"type":"ActivityCompleted","result":null}`, "result", "invalid type: null", decodeEvent},
		{"nested", common + `"type":"ActivityFailed","details":{"Application":{"kind":"Panicked","message":"m","retryable":"no"}}}`, "details.Application.retryable", "expected a boolean", decodeEvent},
		{"nil details", common + `"type":"ActivityFailed","details":null}`, "details", "invalid type: null", decodeEvent},
		{"carry shape", common + `"type":"OrchestrationStarted","name":"n","version":"1","input":"x","carry_forward_events":[["a"]]}`, "carry_forward_events", "invalid length 1", decodeEvent},
		{"not object", `[1,2]`, "", "invalid type: sequence", decodeEvent},
		{"null event", `null`, "", "invalid type: null", decodeInto(&Event{})},
		{"trailing", common + `"type":"KeyValuesCleared"} {}`, "", "trailing characters", decodeEvent},
		{"truncated", common + `"type":"KeyValuesCleared"`, "", "expected ',' or '}'", decodeEvent},
		{"empty", ``, "", "EOF", decodeEvent},
		{"control char", common + "\"type\":\"ActivityCompleted\",\"result\":\"a\nb\"}", "", "control character", decodeEvent},
		{"lone surrogate", common + `"type":"ActivityCompleted","result":"\ud800"}`, "", "surrogate", decodeEvent},
		{"two keys", `{"CancelInstance":{"instance":"i","reason":"r"},"QueueMessage":{}}`, "", "single key", decodeWorkItem},
		{"unit work item", `"CancelInstance"`, "", "unit variant", decodeWorkItem},
		{"wrong variant", `{"CancelInstance":{"instance":"i","reason":"r"}}`, "", "expected variant QueueMessage, found CancelInstance", decodeInto(&QueueMessageItem{})},
		{"seq too short", `{"CancelInstance":["i"]}`, "CancelInstance", "invalid length 1", decodeWorkItem},
		{"cancelled unit", `{"Application":{"kind":"Cancelled","message":"m","retryable":false}}`, "Application.kind", "unit variant", decodeDetails},
	}
	for _, c := range cases {
		err := c.decode([]byte(c.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v (%T), want *DecodeError", c.what, err, err)
			continue
		}
		if errors.Is(err, ErrUnknownVariant) {
			t.Errorf("%s: DecodeError matches ErrUnknownVariant", c.what)
		}
		if de.Field != c.field || !strings.Contains(de.Msg, c.msg) {
			t.Errorf("%s: got field %q msg %q, want field %q msg containing %q", c.what, de.Field, de.Msg, c.field, c.msg)
		}
		if de.Offset < 0 || de.Offset > len(c.in) {
			t.Errorf("%s: offset %d out of range", c.what, de.Offset)
		}
	}
}

func TestUnknownFieldsIgnored(t *testing.T) {
	in := `{"future":{"a":[1,{"b":null}],"c":"\u00e9"},"event_id":2,"source_event_id":1,"instance_id":"i","execution_id":1,"timestamp_ms":5,"duroxide_version":"0.2.0","type":"ActivityScheduled","name":"a","input":"x","fire_at_ms":"not a number","priority":7,"tag":"gpu"}`
	e, err := UnmarshalEvent([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{EventID: 2, SourceEventID: ptr(uint64(1)), InstanceID: "i", ExecutionID: 1, TimestampMs: 5, DuroxideVersion: "0.2.0",
		Kind: ActivityScheduled{Name: "a", Input: "x", Tag: ptr("gpu")}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got %#v", e)
	}
	w, err := UnmarshalWorkItem([]byte(`{"StartOrchestration":{"instance":"c","orchestration":"o","input":"x","version":"1","parent_instance":"p","parent_id":2,"parent_execution_id":3,"execution_id":1,"new_in_0_2":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if *w.(StartOrchestrationItem).ParentExecutionID != 3 {
		t.Errorf("got %#v", w)
	}
}

func TestEmptyStrings(t *testing.T) {
	e := Event{Kind: ExternalEvent{}}
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"event_id":0,"source_event_id":null,"instance_id":"","execution_id":0,"timestamp_ms":0,"duroxide_version":"","type":"ExternalEvent","name":"","data":""}`; string(data) != want {
		t.Errorf("got %s", data)
	}
	got, err := UnmarshalEvent(data)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Errorf("got %#v %v", got, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	var nilKind *ActivityCompleted
	var nilItem *CancelInstanceItem
	var nilDetails *ApplicationError
	cases := []struct {
		what string
		run  func() error
		path string
	}{
		{"nil kind", func() error { _, err := Event{EventID: 3}.MarshalJSON(); return err }, "Event 3"},
		{"typed nil kind", func() error { _, err := Event{EventID: 3, Kind: nilKind}.MarshalJSON(); return err }, "Event 3"},
		{"nil details in event", func() error { _, err := Event{EventID: 4, Kind: ActivityFailed{}}.MarshalJSON(); return err }, "Event 4 (ActivityFailed).details"},
		{"nil details in item", func() error { _, err := MarshalWorkItem(SubOrchFailedItem{}); return err }, "SubOrchFailed.details"},
		{"typed nil details", func() error { _, err := MarshalWorkItem(ActivityFailedItem{Details: nilDetails}); return err }, "ActivityFailed.details"},
		{"nil item", func() error { _, err := MarshalWorkItem(nil); return err }, ""},
		{"typed nil item", func() error { _, err := MarshalWorkItem(nilItem); return err }, ""},
		{"nil error details", func() error { _, err := MarshalErrorDetails(nil); return err }, ""},
		{"zero app kind", func() error { _, err := MarshalErrorDetails(ApplicationError{}); return err }, "Application.kind"},
		{"reason on unit kind", func() error {
			_, err := MarshalErrorDetails(ApplicationError{Kind: AppErrorKind{Type: AppPanicked, Reason: "x"}})
			return err
		}, "Application.kind"},
		{"config kind", func() error { _, err := MarshalErrorDetails(ConfigurationError{Kind: "Other"}); return err }, "Configuration.kind"},
		{"poison kind", func() error { _, err := MarshalErrorDetails(PoisonError{}); return err }, "Poison.message_type"},
		{"poison extra field", func() error {
			_, err := MarshalErrorDetails(PoisonError{MessageType: PoisonMessageType{Kind: PoisonOrchestration, ActivityName: "a"}})
			return err
		}, "Poison.message_type"},
		{"json.Marshal", func() error { _, err := json.Marshal(Event{}); return err }, ""},
	}
	for _, c := range cases {
		err := c.run()
		if err == nil {
			t.Errorf("%s: no error", c.what)
			continue
		}
		var ee *EncodeError
		if !errors.As(err, &ee) {
			t.Errorf("%s: %v (%T) is not an *EncodeError", c.what, err, err)
			continue
		}
		if c.what != "json.Marshal" && ee.Path != c.path {
			t.Errorf("%s: path %q, want %q (%v)", c.what, ee.Path, c.path, err)
		}
	}
}

// json.Marshal re-escapes <, >, & and U+2028/9 in Marshaler output; the
// result is still the same JSON value. An Encoder with SetEscapeHTML(false)
// keeps serde's exact bytes.
func TestEncodingJSONInterop(t *testing.T) {
	e := Event{EventID: 1, InstanceID: "<i&>", Kind: ExternalEvent{Name: "\u2028", Data: nasty}}
	exact, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	viaMarshal, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalEvent(viaMarshal)
	if err != nil || !reflect.DeepEqual(back, e) {
		t.Errorf("json.Marshal output decodes to %#v, %v", back, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&e); err != nil {
		t.Fatal(err)
	}
	if got := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, exact) {
		t.Errorf("Encoder(SetEscapeHTML(false))\n got %s\nwant %s", got, exact)
	}
	// Events inside other structures.
	type doc struct {
		History []Event `json:"history"`
	}
	in := doc{History: []Event{e, {EventID: 2, Kind: KeyValuesCleared{}}}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	if err := json.Unmarshal(data, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("doc round trip: %#v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"history":[null]}`), &out); err == nil {
		t.Error("null event in a list accepted")
	}
}

func TestHelperTypesJSON(t *testing.T) {
	cf := CarryForwardEvent{Name: "q", Data: "<d>"}
	b, err := cf.MarshalJSON()
	if err != nil || string(b) != `["q","<d>"]` {
		t.Errorf("CarryForwardEvent: %s %v", b, err)
	}
	var cf2 CarryForwardEvent
	if err := json.Unmarshal(b, &cf2); err != nil || cf2 != cf {
		t.Errorf("CarryForwardEvent back: %#v %v", cf2, err)
	}
	if err := json.Unmarshal([]byte(`["q"]`), &cf2); err == nil {
		t.Error(`["q"] accepted`)
	}
	for _, k := range []AppErrorKind{{Type: AppActivityFailed}, {Type: AppPanicked}, {Type: AppCancelled, Reason: "r"}} {
		b, err := k.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var k2 AppErrorKind
		if err := k2.UnmarshalJSON(b); err != nil || k2 != k {
			t.Errorf("AppErrorKind %s: %#v %v", b, k2, err)
		}
	}
	if b, _ := (AppErrorKind{Type: AppCancelled, Reason: "r"}).MarshalJSON(); string(b) != `{"Cancelled":{"reason":"r"}}` {
		t.Errorf("got %s", b)
	}
	m := PoisonMessageType{Kind: PoisonActivity, Instance: "i", ExecutionID: 1, ActivityName: "A", ActivityID: 2}
	b, err = m.MarshalJSON()
	if err != nil || string(b) != `{"Activity":{"instance":"i","execution_id":1,"activity_name":"A","activity_id":2}}` {
		t.Errorf("PoisonMessageType: %s %v", b, err)
	}
	var m2 PoisonMessageType
	if err := m2.UnmarshalJSON(b); err != nil || m2 != m {
		t.Errorf("PoisonMessageType back: %#v %v", m2, err)
	}
}

// The Poison message field holds serialized JSON of the poisoned item; it is
// an ordinary string and survives nesting.
func TestPoisonMessageHoldsWorkItemJSON(t *testing.T) {
	item, err := MarshalWorkItem(ActivityExecuteItem{Instance: "order-1", ExecutionID: 1, ID: 2, Name: "Charge", Input: `{"amount":"<5>"}`})
	if err != nil {
		t.Fatal(err)
	}
	d := PoisonError{AttemptCount: 11, MaxAttempts: 10, MessageType: PoisonMessageType{Kind: PoisonActivity, Instance: "order-1", ExecutionID: 1, ActivityName: "Charge", ActivityID: 2}, Message: string(item)}
	data, err := MarshalErrorDetails(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalErrorDetails(data)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := UnmarshalWorkItem([]byte(back.(PoisonError).Message))
	if err != nil || inner.(ActivityExecuteItem).Input != `{"amount":"<5>"}` {
		t.Errorf("inner %#v %v", inner, err)
	}
}

func TestDeepNesting(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	const common = `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v","type":"KeyValuesCleared","x":`
	if _, err := UnmarshalEvent([]byte(common + deep(126) + `}`)); err != nil {
		t.Errorf("depth 127: %v", err)
	}
	if _, err := UnmarshalEvent([]byte(common + deep(127) + `}`)); err == nil || !strings.Contains(err.Error(), "recursion limit") {
		t.Errorf("depth 128: %v", err)
	}
	// Work items, like serde, skip ignored values at any depth, without
	// exhausting the stack.
	if _, err := UnmarshalWorkItem([]byte(`{"CancelInstance":{"instance":"i","reason":"r","x":` + deep(1_000_000) + `}}`)); err != nil {
		t.Errorf("deep ignored value: %v", err)
	}
	if _, err := UnmarshalWorkItem([]byte(`{"CancelInstance":{"instance":"i","reason":"r","x":` + strings.Repeat("[", 1_000_000) + `}}`)); err == nil {
		t.Error("unterminated deep value accepted")
	}
}
