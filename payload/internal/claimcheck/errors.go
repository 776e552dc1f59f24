package claimcheck

import "errors"

// The sentinels are re-exported by payload/blobstore and payload/filestore,
// so errors.Is matches the same meaning whichever store reported it.
var (
	// ErrBadReference: Decode was given bytes that are neither an inline
	// payload nor a reference this package wrote (or a reference naming an
	// object outside the store's names).
	ErrBadReference = errors.New("payload reference is malformed")
	// ErrPayloadMissing: the object a reference names is not in the store
	// (deleted with its instance, pruned, or removed by hand).
	ErrPayloadMissing = errors.New("externally stored payload is missing")
	// ErrPayloadCorrupt: the object a reference names does not hold the
	// bytes the reference was written for (its size or SHA-256 differ).
	ErrPayloadCorrupt = errors.New("externally stored payload does not match its reference")
	// ErrConfig: a store's options are invalid.
	ErrConfig = errors.New("payload store configuration is invalid")
)
