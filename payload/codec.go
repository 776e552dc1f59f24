package payload

import "context"

// Codec transforms the bytes of one payload on its way into the store
// (Encode) and out of it (Decode). A codec is applied by Wrap at the
// provider boundary, so the runtime, the Client and every operation see
// plain payloads while the store holds encoded ones.
//
// Encode and Decode must be safe for concurrent use. Decode must accept
// exactly what Encode produced, under any later configuration the
// operator keeps the codec for (an encryption codec keeps old key IDs
// for decryption after a rotation).
type Codec interface {
	// Name identifies the codec in the envelope of what it encoded, so a
	// payload records the codecs it went through and decodes after the
	// configured list changes. Names are short, stable and unique.
	Name() string
	// Encode returns data encoded for scope.
	Encode(ctx context.Context, scope Scope, data []byte) ([]byte, error)
	// Decode reverses Encode.
	Decode(ctx context.Context, scope Scope, data []byte) ([]byte, error)
}

// Scope says whose payload a codec is encoding or decoding: a codec that
// keeps payloads outside the store names them by it.
type Scope struct {
	// Instance is the orchestration instance the payload belongs to.
	Instance string
	// ExecutionID is the execution whose history or work holds the
	// payload, or 0 when it belongs to no one execution (a KV value, a
	// message sent before the instance started).
	ExecutionID uint64
}

// PayloadDeleter is implemented by a codec that keeps payloads outside
// the store (payload/blobstore): Wrap calls it after the store deleted an
// instance, or pruned executions of it, so nothing is left behind.
type PayloadDeleter interface {
	// DeletePayloads removes what the codec keeps for instance: for the
	// given executions only, or everything when executions is nil.
	DeletePayloads(ctx context.Context, instance string, executions []uint64) error
}
