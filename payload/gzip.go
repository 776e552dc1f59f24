package payload

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
)

const gzipName = "gzip"

// Gzip returns the compression codec, named "gzip". Its output is the
// same for the same input (no timestamp or name in the header), which
// Wrap needs: a retried start and a handed-back message are recognised
// by their encoded bytes. Wrap always decodes gzip, configured or not,
// so compression can be turned off without losing what was compressed.
func Gzip() Codec { return gzipCodec{} }

type gzipCodec struct{}

func (gzipCodec) Name() string { return gzipName }

func (gzipCodec) Encode(_ context.Context, _ Scope, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (gzipCodec) Decode(_ context.Context, _ Scope, data []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
	}
	return out, nil
}
