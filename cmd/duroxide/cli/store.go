package cli

import (
	"context"
	"io"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
)

// OpenEmbedded opens the store embedded.Open opens, as a program using the
// library would: the Cosmos DB account of COSMOS_ENDPOINT (key, or Entra
// ID through DefaultAzureCredential without COSMOS_KEY) or
// COSMOS_CONNECTION_STRING, else the in-process store in DUROXIDE_DATA_DIR
// or .duroxide/default, joining the store a running service serves from
// that directory when it has it open. The line saying which is written to
// log.
func OpenEmbedded(log io.Writer) OpenFunc {
	return func(ctx context.Context) (duroxide.Provider, func() error, error) {
		st, err := embedded.Open(ctx, &embedded.Options{Log: log, JoinRunning: true})
		if err != nil {
			return nil, nil, err
		}
		return st.Provider, st.Close, nil
	}
}
