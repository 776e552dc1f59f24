package durable

import (
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

// TestMain fails the package if a test leaves goroutines behind: every
// coroutine of every turn must be stopped when the turn ends.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
