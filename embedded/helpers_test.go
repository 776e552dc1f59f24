package embedded

import (
	"testing"

	"github.com/duroxide-go/cdb"
)

// The package's test helpers: t.Fatal on the first error, no testify.

// clearEnv makes Open choose by the test's settings only.
func clearEnv(t *testing.T) {
	for _, k := range []string{cdb.EnvEndpoint, cdb.EnvKey, cdb.EnvConnectionString, cdb.EnvDatabase, cdb.EnvContainer, cdb.EnvAudience, EnvDataDir, EnvRequireAccount} {
		t.Setenv(k, "")
	}
}

// open opens a store for t, failing it on an error.
func open(t *testing.T, opts *Options) *Store {
	t.Helper()
	st, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

// must fails t at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
