package cdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// TestLockConditionStaysShallow keeps the lock condition's parentheses
// (groups and function calls alike) at most two deep. The third-party
// emulator the suites run against parses with a PEG parser that backtracks
// exponentially in the nesting depth: the nested form of the version range
// (five deep) took over two minutes to parse on a fresh server, stalling
// every request behind it, while the flat form takes well under a second.
func TestLockConditionStaysShallow(t *testing.T) {
	filter := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{
		{Min: duroxide.SemVer{Major: 1, Minor: 2, Patch: 3}, Max: duroxide.SemVer{Major: 4, Minor: 5, Patch: 6}},
	}}
	cond := lockCondition(time.UnixMilli(1), filter)
	depth, deepest := 0, 0
	for _, r := range cond {
		switch r {
		case '(':
			depth++
			deepest = max(deepest, depth)
		case ')':
			depth--
		}
	}
	require.Zero(t, depth, "unbalanced parentheses in %s", cond)
	require.LessOrEqual(t, deepest, 2, "lock condition nests %d deep: %s", deepest, cond)
}
