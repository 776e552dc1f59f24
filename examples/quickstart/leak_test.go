package main

import (
	"os"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

// asMainEnv makes the test binary run the example's main instead of its
// tests, so a test can run the example as a person does: a process, its
// output and its exit code.
const asMainEnv = "QUICKSTART_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	leaktest.VerifyTestMain(m)
}
