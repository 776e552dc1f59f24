package walkthrough

import (
	"fmt"
	"os"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
)

// Account is where an example runs: a Cosmos DB account from the
// environment, or cosmostest in-process.
type Account struct {
	// Config is for cdb.New.
	Config cdb.Config
	// Description says where Config points and how it authenticates.
	Description string
	// InProcess is true when Config points at an in-process cosmostest
	// server, which is the example's alone.
	InProcess bool

	server *cosmostest.Server
}

// OpenAccount uses the account that COSMOS_ENDPOINT (with COSMOS_KEY, or
// DefaultAzureCredential without it) or COSMOS_CONNECTION_STRING names,
// through cdb.ConfigFromEnv; with neither set it starts cosmostest, the
// in-process fake of Cosmos DB, so the examples run with nothing but Go.
// Close releases the server.
func OpenAccount() (*Account, error) {
	if os.Getenv("COSMOS_ENDPOINT") != "" || os.Getenv("COSMOS_CONNECTION_STRING") != "" {
		cfg, err := cdb.ConfigFromEnv()
		if err != nil {
			return nil, err
		}
		auth := "key"
		switch {
		case cfg.ConnectionString != "":
			auth = "connection string"
		case cfg.Credential != nil:
			auth = "DefaultAzureCredential (no COSMOS_KEY)"
		}
		where := cfg.Endpoint
		if where == "" {
			where = "COSMOS_CONNECTION_STRING's account"
		}
		return &Account{Config: cfg, Description: where + ", auth: " + auth}, nil
	}
	srv, err := cosmostest.NewServer(nil)
	if err != nil {
		return nil, fmt.Errorf("starting cosmostest: %w", err)
	}
	return &Account{
		Config:      cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()},
		Description: "cosmostest (in-process fake) at " + srv.Endpoint() + "; set COSMOS_ENDPOINT to use an account",
		InProcess:   true,
		server:      srv,
	}, nil
}

// Close stops the in-process server, if any.
func (a *Account) Close() {
	if a.server != nil {
		a.server.Close()
	}
}

// ContainerName returns "database/container" with the defaults applied.
func (a *Account) ContainerName() string {
	return or(a.Config.Database, cdb.DefaultDatabase) + "/" + or(a.Config.Container, cdb.DefaultContainer)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
