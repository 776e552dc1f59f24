package payload

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
)

const aesName = "aesgcm"

// Key is one AES key of an encryption codec, named by ID in every
// payload it encrypts so the payload finds its key after a rotation.
// Its String, GoString and LogValue never show Secret.
type Key struct {
	// ID names the key; at most 255 bytes, unique within the codec.
	ID string
	// Secret is 16, 24 or 32 bytes (AES-128, -192, -256).
	Secret []byte
}

// String names the key without its secret.
func (k Key) String() string { return fmt.Sprintf("payload.Key{ID: %q, Secret: <redacted>}", k.ID) }

// GoString is String, so %#v does not print the secret either.
func (k Key) GoString() string { return k.String() }

// LogValue keeps the secret out of structured logs.
func (k Key) LogValue() slog.Value { return slog.GroupValue(slog.String("id", k.ID)) }

// AESGCM returns the encryption codec, named "aesgcm": payloads are
// encrypted with AES-GCM under the first key, and decrypt under any of
// keys, matched by the key ID stored with each payload. To rotate, put
// the new key first and keep the old ones for as long as data encrypted
// with them is kept.
//
// Encryption is deterministic, as Wrap needs (a retried start is
// recognised by its encoded bytes): the nonce is an HMAC-SHA256 of the
// plaintext under a key derived from the secret, so equal payloads
// encrypt alike (an observer of the store learns that two payloads are
// equal, and nothing else), and distinct ones never share a nonce.
func AESGCM(keys ...Key) (Codec, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: aesgcm: no key", ErrInvalidCodec)
	}
	c := &aesCodec{byID: map[string]*aesKey{}}
	for i, k := range keys {
		if k.ID == "" || len(k.ID) > 255 {
			return nil, fmt.Errorf("%w: aesgcm: key %d: ID must be 1 to 255 bytes", ErrInvalidCodec, i)
		}
		if _, dup := c.byID[k.ID]; dup {
			return nil, fmt.Errorf("%w: aesgcm: key ID %q given twice", ErrInvalidCodec, k.ID)
		}
		ak, err := newAESKey(k)
		if err != nil {
			return nil, err
		}
		c.byID[k.ID] = ak
		if i == 0 {
			c.current = ak
		}
	}
	return c, nil
}

type aesCodec struct {
	current *aesKey
	byID    map[string]*aesKey
}

type aesKey struct {
	id     string
	aead   cipher.AEAD
	macKey []byte
}

// newAESKey derives the encryption and nonce keys from the secret, so
// the secret itself keys neither.
func newAESKey(k Key) (*aesKey, error) {
	switch len(k.Secret) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("%w: aesgcm: key %q is %d bytes, want 16, 24 or 32", ErrInvalidCodec, k.ID, len(k.Secret))
	}
	encKey := derive(k.Secret, "duroxide payload encryption")[:len(k.Secret)]
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("%w: aesgcm: key %q: %v", ErrInvalidCodec, k.ID, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: aesgcm: key %q: %v", ErrInvalidCodec, k.ID, err)
	}
	return &aesKey{id: k.ID, aead: aead, macKey: derive(k.Secret, "duroxide payload nonce")}, nil
}

func derive(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func (c *aesCodec) Name() string { return aesName }

// Encode writes: key ID length (1 byte), key ID, nonce, ciphertext and
// tag. The key ID is authenticated as additional data.
func (c *aesCodec) Encode(_ context.Context, _ Scope, data []byte) ([]byte, error) {
	k := c.current
	m := hmac.New(sha256.New, k.macKey)
	m.Write(data)
	nonce := m.Sum(nil)[:k.aead.NonceSize()]
	out := make([]byte, 0, 1+len(k.id)+len(nonce)+len(data)+k.aead.Overhead())
	out = append(out, byte(len(k.id)))
	out = append(out, k.id...)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, data, []byte(k.id)), nil
}

func (c *aesCodec) Decode(_ context.Context, _ Scope, data []byte) ([]byte, error) {
	if len(data) < 1 || len(data) < 1+int(data[0]) {
		return nil, fmt.Errorf("%w: aesgcm: truncated", ErrCorrupt)
	}
	id := string(data[1 : 1+int(data[0])])
	k, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: key ID %q", ErrUnknownKey, id)
	}
	rest := data[1+len(id):]
	if len(rest) < k.aead.NonceSize()+k.aead.Overhead() {
		return nil, fmt.Errorf("%w: aesgcm: truncated", ErrCorrupt)
	}
	nonce, sealed := rest[:k.aead.NonceSize()], rest[k.aead.NonceSize():]
	out, err := k.aead.Open(nil, nonce, sealed, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("%w: aesgcm: key %q: authentication failed", ErrCorrupt, id)
	}
	return out, nil
}
