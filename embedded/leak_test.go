package embedded

import (
	"os"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

func TestMain(m *testing.M) {
	if os.Getenv(serviceEnv) != "" {
		os.Exit(runService(os.Getenv(serviceEnv)))
	}
	leaktest.VerifyTestMain(m)
}
