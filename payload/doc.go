// Package payload encodes every payload a provider stores: inputs,
// outputs, event data, queue messages, KV values and custom status.
// Codecs compose (compression, then encryption, then external storage of
// large payloads in payload/blobstore) and are applied by a provider
// wrapper, so histories are readable by the runtime, the CLI and the
// dashboard only through the same codecs, and a store holding payloads
// written before a codec was configured still replays.
package payload
