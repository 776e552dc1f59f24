package duroxide

import (
	"encoding/json"
	"testing"
)

var benchEvent = []byte(`{"event_id":3,"source_event_id":2,"instance_id":"order-1","execution_id":1,"timestamp_ms":1760000000500,"duroxide_version":"0.1.29","type":"ActivityFailed","details":{"Application":{"kind":"ActivityFailed","message":"card declined","retryable":false}}}`)

var benchStarted = []byte(`{"event_id":1,"source_event_id":null,"instance_id":"order-1","execution_id":2,"timestamp_ms":1760000009000,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"ProcessOrder","version":"1.0.0","input":"{\"id\":1,\"items\":[\"a\",\"b\"]}","parent_instance":null,"parent_id":null,"carry_forward_events":[["q","carried"]],"initial_custom_status":"step 3"}`)

func BenchmarkUnmarshalEvent(b *testing.B) {
	for _, in := range [][]byte{benchEvent, benchStarted} {
		b.Run(string(in[len(in)-20:]), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := UnmarshalEvent(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMarshalEvent(b *testing.B) {
	e, _ := UnmarshalEvent(benchStarted)
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(len(benchStarted)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendEvent(buf[:0], &e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibGenericDecode is a yardstick: encoding/json decoding the
// same bytes into a map, which is what a naive two-pass decoder starts with.
func BenchmarkStdlibGenericDecode(b *testing.B) {
	b.SetBytes(int64(len(benchStarted)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(benchStarted, &m); err != nil {
			b.Fatal(err)
		}
	}
}
