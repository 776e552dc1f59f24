package payload

import "errors"

// The sentinels of this package, matched with errors.Is. A payload that
// cannot be decoded is never passed on as it is stored: the wrapper
// reports it, and the runtime treats it as a history it cannot read
// (it retries the turn, then poisons it).
var (
	// ErrInvalidCodec: Wrap or a codec constructor was given a
	// configuration it cannot use (no codec, a duplicate or malformed
	// name, a key of the wrong size, a duplicate key ID, a payload store's
	// invalid options).
	ErrInvalidCodec = errors.New("payload: invalid codec configuration")
	// ErrUnknownCodec: a stored payload names a codec the wrapper was not
	// given, so it cannot be decoded (configure the codec again, at least
	// for reading).
	ErrUnknownCodec = errors.New("payload: payload was encoded by a codec that is not configured")
	// ErrUnknownKey: an encrypted payload names a key ID the codec does
	// not hold (a key removed after a rotation while data still used it).
	ErrUnknownKey = errors.New("payload: payload was encrypted with a key that is not configured")
	// ErrCorrupt: a stored payload is not what a codec wrote: a malformed
	// envelope, bad base64, a ciphertext that fails authentication, or
	// compressed data that does not decompress, a malformed claim-check
	// reference, or an externally stored payload whose size or SHA-256 is
	// not the one its reference was written for.
	ErrCorrupt = errors.New("payload: stored payload is corrupt")
	// ErrMissing: the object a claim-check reference names is not in its
	// store (payload/blobstore, payload/filestore): deleted or pruned with
	// its instance, or removed by hand.
	ErrMissing = errors.New("payload: externally stored payload is missing")
)

// ErrUnsupportedProvider: Wrap cannot keep the capabilities of the
// provider it was given (it has some of the client writes and not the
// others), so the runtime would not behave over the wrapper as over it.
var ErrUnsupportedProvider = errors.New("payload: provider's capabilities cannot be kept by the wrapper")
