package localcosmos

import (
	"os"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envKillDir); dir != "" {
		runKillWriter(dir) // the writer process of TestPersistKill; killed, never returns
	}
	leaktest.VerifyTestMain(m)
}
