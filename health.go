package cdb

import (
	"context"
	"errors"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// healthProbeID names a document the provider never writes: escaped ids
// (ids.go) never have '~' followed by '~'. Reading it costs one point read
// of 1 RU and can only answer 404 from a working container.
const healthProbeID = "~~health-probe"

// subStatusOwnerResourceNotFound is the substatus of a 404 whose container
// or database does not exist, as opposed to a missing item.
const subStatusOwnerResourceNotFound = 1003

// Ping checks that the provider can reach its container with its
// credentials: one point read (1 RU) of a document that does not exist.
// It returns nil when the service answers as a working container does,
// and otherwise the classified error (duroxide.ErrRetryable for network
// trouble and throttling, permanent for a missing container or a refused
// credential), so a readiness probe can call it on every check.
func (p *Provider) Ping(ctx context.Context) error {
	const op = "ping"
	_, _, err := p.st.Read(ctx, healthProbeID, healthProbeID)
	var ce *RequestError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && errors.Is(ce, cosmos.ErrNotFound) && ce.SubStatus != subStatusOwnerResourceNotFound:
		return nil
	}
	return duroxide.Wrap(op, err)
}
