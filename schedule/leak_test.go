package schedule

import (
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
