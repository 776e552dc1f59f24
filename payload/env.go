package payload

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// The environment variables CodecsFromEnv reads: the codecs, in the
// order Wrap applies them ("gzip", "aesgcm", "gzip,aesgcm"), and the
// AES keys as id=base64 pairs separated by commas, the encrypting key
// first ("k2=...,k1=..." after a rotation to k2).
const (
	EnvCodec     = "DUROXIDE_CODEC"
	EnvCodecKeys = "DUROXIDE_CODEC_KEYS"
)

// CodecsFromEnv builds the codecs EnvCodec and EnvCodecKeys name, read
// through getenv (os.Getenv): none when EnvCodec is empty. Errors match
// ErrInvalidCodec and never hold a key.
func CodecsFromEnv(getenv func(string) string) ([]Codec, error) {
	spec := strings.TrimSpace(getenv(EnvCodec))
	if spec == "" {
		return nil, nil
	}
	var out []Codec
	for _, name := range strings.Split(spec, ",") {
		switch strings.TrimSpace(name) {
		case gzipName:
			out = append(out, Gzip())
		case aesName:
			keys, err := keysFromEnv(getenv(EnvCodecKeys))
			if err != nil {
				return nil, err
			}
			c, err := AESGCM(keys...)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("%w: %s: unknown codec %q (gzip, aesgcm)", ErrInvalidCodec, EnvCodec, name)
		}
	}
	return out, nil
}

func keysFromEnv(spec string) ([]Key, error) {
	var keys []Key
	for i, pair := range strings.Split(spec, ",") {
		id, b64key, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("%w: %s: entry %d is not id=base64", ErrInvalidCodec, EnvCodecKeys, i+1)
		}
		secret, err := base64.StdEncoding.DecodeString(b64key)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: key %q is not standard base64", ErrInvalidCodec, EnvCodecKeys, id)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	return keys, nil
}
