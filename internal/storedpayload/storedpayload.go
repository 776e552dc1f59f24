// Package storedpayload lists the payloads of a stored history event from
// its serialized form. The chaos soak's -codec check and the durabletest
// codec suite use it to see that every payload is encoded in the store,
// without trusting the codec's own list of payload-carrying kinds.
package storedpayload

import (
	"encoding/json"

	"github.com/duroxide-go/cdb/duroxide"
)

// payloadFields are the JSON fields of a stored history event that hold a
// payload (duroxide's names; error details and cancel reasons are not
// payloads). Checks read the event's serialized form rather than
// the codec's own list, so a kind the codec forgets is caught.
var payloadFields = map[string]bool{
	"input": true, "output": true, "result": true, "data": true,
	"value": true, "status": true, "initial_custom_status": true,
}

// Of returns the payloads of ev as they are stored, carried-forward
// events' included, in no particular order.
func Of(ev duroxide.Event) ([]string, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out []string
	collectPayloads(v, &out)
	return out, nil
}

func collectPayloads(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, f := range x {
			if s, ok := f.(string); ok && payloadFields[k] {
				*out = append(*out, s)
			} else if k == "carry_forward_events" {
				collectCarried(f, out)
			} else {
				collectPayloads(f, out)
			}
		}
	case []any:
		for _, f := range x {
			collectPayloads(f, out)
		}
	}
}

// collectCarried adds the data of carried-forward events, which duroxide
// stores as [name, data] pairs.
func collectCarried(v any, out *[]string) {
	pairs, _ := v.([]any)
	for _, p := range pairs {
		if pair, ok := p.([]any); ok && len(pair) == 2 {
			if s, ok := pair[1].(string); ok {
				*out = append(*out, s)
			}
		}
	}
}
