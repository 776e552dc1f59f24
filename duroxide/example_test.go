package duroxide_test

import (
	"errors"
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Decode an event written by Rust duroxide, inspect it, and write it back
// byte for byte.
func ExampleUnmarshalEvent() {
	rust := []byte(`{"event_id":3,"source_event_id":2,"instance_id":"order-1","execution_id":1,"timestamp_ms":1760000000500,"duroxide_version":"0.1.29","type":"ActivityFailed","details":{"Application":{"kind":"ActivityFailed","message":"card declined","retryable":false}}}`)

	e, err := duroxide.UnmarshalEvent(rust)
	if err != nil {
		panic(err)
	}
	failed := e.Kind.(duroxide.ActivityFailed)
	app := failed.Details.(duroxide.ApplicationError)
	fmt.Println(e.Kind.EventType(), *e.SourceEventID, app.Kind.Type, app.Message)

	out, _ := e.MarshalJSON()
	fmt.Println(string(out) == string(rust))
	// Output:
	// ActivityFailed 2 ActivityFailed card declined
	// true
}

// Events from a newer duroxide with an unknown type are reported, never
// dropped.
func ExampleUnknownVariantError() {
	_, err := duroxide.UnmarshalEvent([]byte(`{"event_id":4,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":0,"duroxide_version":"9.0.0","type":"SomethingNew"}`))
	fmt.Println(errors.Is(err, duroxide.ErrUnknownVariant))
	var uv *duroxide.UnknownVariantError
	if errors.As(err, &uv) {
		fmt.Println(uv.Enum, uv.Variant)
	}
	// Output:
	// true
	// EventKind SomethingNew
}

// Work items are externally tagged; optional fields Rust skips are left out.
func ExampleMarshalWorkItem() {
	tag := "gpu"
	data, err := duroxide.MarshalWorkItem(duroxide.ActivityExecuteItem{
		Instance: "order-1", ExecutionID: 1, ID: 2, Name: "Train", Input: "{}", Tag: &tag,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(data))

	item, _ := duroxide.UnmarshalWorkItem(data)
	fmt.Println(item.Variant(), item.InstanceID(), item.Queue())
	// Output:
	// {"ActivityExecute":{"instance":"order-1","execution_id":1,"id":2,"name":"Train","input":"{}","tag":"gpu"}}
	// ActivityExecute order-1 worker
}

// A worker that runs untagged activities and those tagged "gpu".
func ExampleDefaultAnd() {
	filter, err := duroxide.DefaultAnd("gpu")
	if err != nil {
		panic(err)
	}
	gpu, cpu := "gpu", "cpu"
	fmt.Println(filter.Matches(nil), filter.Matches(&gpu), filter.Matches(&cpu))

	_, err = duroxide.Tags("a", "b", "c", "d", "e", "f")
	fmt.Println(err)
	// Output:
	// true true false
	// duroxide: a tag filter may name at most 5 tags, got 6
}

// Capability filtering uses only the first range; unpinned executions are
// always compatible.
func ExampleDispatcherCapabilityFilter_Matches() {
	f := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{{
		Min: duroxide.MustParseSemVer("0.0.0"),
		Max: duroxide.MustParseSemVer("0.1.29"),
	}}}
	old, newer := duroxide.MustParseSemVer("0.1.20"), duroxide.MustParseSemVer("0.1.31")
	fmt.Println(f.Matches(&old), f.Matches(&newer), f.Matches(nil))
	// Output:
	// true false true
}

// Classify provider errors without inspecting their text.
func ExampleWrap() {
	err := duroxide.Wrap("ack_orchestration_item", duroxide.Permanent("ack", "lock token expired"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, duroxide.ErrPermanent), duroxide.IsRetryable(err))
	// Output:
	// ack_orchestration_item: lock token expired
	// true false
}
