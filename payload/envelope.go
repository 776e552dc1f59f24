package payload

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Prefix begins every payload Wrap encoded. What follows is the names of
// the codecs applied, in the order applied and separated by commas, a
// colon, and the result in unpadded base64url:
//
//	dxpc1:gzip,aesgcm:<base64url>
//
// A stored payload without the prefix was written before a codec was
// configured and is read as it is, so old and new data replay side by
// side. The prefix is not valid JSON, so no JSON payload written without
// a codec is mistaken for an encoded one.
const Prefix = "dxpc1:"

var b64 = base64.RawURLEncoding

// IsEncoded reports whether s carries the envelope of an encoded payload.
func IsEncoded(s string) bool { return strings.HasPrefix(s, Prefix) }

// chain is the configured codecs, applied in order on the way in and in
// reverse, by the names in the envelope, on the way out.
type chain struct {
	codecs []Codec
	byName map[string]Codec
	names  string // the envelope's name list for what encode writes
	// display, for operator tools (WrapForDisplay), shows a payload that
	// does not decode as its placeholder and refuses to store one.
	display bool
}

// newChain checks the codecs' names: each is non-empty, unique and free
// of the envelope's separators.
func newChain(codecs []Codec, display bool) (*chain, error) {
	if len(codecs) == 0 && !display {
		return nil, fmt.Errorf("%w: no codec given", ErrInvalidCodec)
	}
	c := &chain{codecs: codecs, byName: map[string]Codec{}, display: display}
	names := make([]string, 0, len(codecs))
	for _, k := range codecs {
		if k == nil {
			return nil, fmt.Errorf("%w: nil codec", ErrInvalidCodec)
		}
		n := k.Name()
		if n == "" || strings.ContainsAny(n, ",: ") {
			return nil, fmt.Errorf("%w: codec name %q (non-empty, no comma, colon or space)", ErrInvalidCodec, n)
		}
		if _, dup := c.byName[n]; dup {
			return nil, fmt.Errorf("%w: codec name %q given twice", ErrInvalidCodec, n)
		}
		c.byName[n] = k
		names = append(names, n)
	}
	// gzip decodes without configuration, so a store that stopped
	// compressing still reads what it compressed before.
	if _, ok := c.byName[gzipName]; !ok {
		c.byName[gzipName] = Gzip()
	}
	c.names = strings.Join(names, ",")
	return c, nil
}

// encode returns s encoded by every codec, in its envelope. The empty
// payload stays empty: it discloses nothing and is common (no input).
func (c *chain) encode(ctx context.Context, scope Scope, s string) (string, error) {
	if c.display && strings.Contains(s, placeholderStart) {
		// A placeholder read back (a restart of an instance whose input
		// did not decode) must not replace the payload it stands for.
		return "", fmt.Errorf("%w: refusing to store the placeholder of a payload that did not decode (%s)", ErrUnknownCodec, scope)
	}
	if s == "" || len(c.codecs) == 0 {
		return s, nil
	}
	data := []byte(s)
	for _, k := range c.codecs {
		var err error
		if data, err = k.Encode(ctx, scope, data); err != nil {
			return "", fmt.Errorf("payload: %s: encode for %s: %w", k.Name(), scope, err)
		}
	}
	return Prefix + c.names + ":" + b64.EncodeToString(data), nil
}

// decode reverses encode; a payload without the envelope is returned
// unchanged.
func (c *chain) decode(ctx context.Context, scope Scope, s string) (string, error) {
	out, err := decodeWith(ctx, c.byName, scope, s)
	if err != nil && c.display {
		return Placeholder(s, err), nil
	}
	return out, err
}

// placeholderStart begins every Placeholder.
const placeholderStart = "<encoded payload"

// Placeholder is what operator tools show for the encoded payload s that
// they cannot decode (err says why): the codecs it names, and how to
// configure them. It holds nothing of the payload itself.
func Placeholder(s string, err error) string {
	names, _, _ := strings.Cut(strings.TrimPrefix(s, Prefix), ":")
	why := "not decodable"
	switch {
	case errors.Is(err, ErrUnknownCodec):
		why = "codec not configured: set " + EnvCodec
	case errors.Is(err, ErrUnknownKey):
		why = "key not configured: add it to " + EnvCodecKeys
	case errors.Is(err, ErrCorrupt):
		why = "corrupt or wrong key"
	}
	return fmt.Sprintf("%s (%s): %s>", placeholderStart, names, why)
}

// decodeWith decodes s with the codecs named in its envelope.
func decodeWith(ctx context.Context, byName map[string]Codec, scope Scope, s string) (string, error) {
	if !IsEncoded(s) {
		return s, nil
	}
	names, body, ok := strings.Cut(s[len(Prefix):], ":")
	if !ok || names == "" {
		return "", fmt.Errorf("%w: envelope of %s has no codec list", ErrCorrupt, scope)
	}
	data, err := b64.DecodeString(body)
	if err != nil {
		return "", fmt.Errorf("%w: envelope of %s: %v", ErrCorrupt, scope, err)
	}
	list := strings.Split(names, ",")
	for i := len(list) - 1; i >= 0; i-- {
		k, ok := byName[list[i]]
		if !ok {
			return "", fmt.Errorf("%w: %q (payload of %s)", ErrUnknownCodec, list[i], scope)
		}
		if data, err = k.Decode(ctx, scope, data); err != nil {
			return "", fmt.Errorf("payload: %s: decode for %s: %w", k.Name(), scope, err)
		}
	}
	return string(data), nil
}

// String names the scope in errors and logs.
func (s Scope) String() string {
	if s.ExecutionID == 0 {
		return fmt.Sprintf("instance %q", s.Instance)
	}
	return fmt.Sprintf("instance %q execution %d", s.Instance, s.ExecutionID)
}
