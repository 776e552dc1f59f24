package cdb

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Numbers in documents.
//
// Cosmos DB's query engine treats every JSON number as an IEEE-754 double:
// integers above 2^53 lose precision in filters and comparisons (and the
// stored value a query returns is rounded). Every numeric field the
// provider stores, and whether it is compared in a query:
//
//	field                              range                     compared in a query
//	createdAt, updatedAt, startedAt,   Unix ms (~1.8e12; a       lockedUntil, visibleAt, createdAt,
//	completedAt, lockedUntil,          delay of 290 years adds   completedAt, lastActivity against
//	visibleAt, enqueuedAt, deleted,    9.2e12): < 2^44           "now"-based parameters
//	lastAttemptAt, lastActivity
//	enqueueOrder                       Unix µs (~1.8e15) < 2^51  no (sorted in Go)
//	executionId, currentExecutionId    contract u64              executionId = @exec: limited to
//	                                                             maxExactInt (validateExecutionID)
//	eventId                            contract u64              no: history is ordered in Go from
//	                                                             the event JSON (eventData), and ids
//	                                                             are strings in document ids
//	pinnedDuroxideVersion.{major,      contract u64 each         lexicographic range in the fetch
//	minor,patch}                                                 lock condition: limited to maxExactInt
//	attemptCount                       u32                       no
//	customStatusVersion                u64, +1 per update        no
//	dispatchSlot                       0..255                    IN (...) list of small integers
//
// pinnedVersionPacked (major*1e6+minor*1e3+patch) is no longer written:
// it was not injective (1.1000.0 packed like 2.0.0) and overflowed for
// large components; the condition compares the components instead.

// maxExactInt is the largest integer every number up to which a double
// represents exactly: 2^53.
const maxExactInt = 1 << 53

// validateExecutionID refuses an execution id the query engine could
// confuse with its neighbour.
func validateExecutionID(op string, exec uint64) error {
	if exec > maxExactInt {
		return duroxide.Permanent(op, "execution id %d is above 2^53: Cosmos DB compares numbers as doubles and could not tell it from %d", exec, exec+1)
	}
	return nil
}

// validateVersion refuses a version whose components cannot be compared
// exactly in a query.
func validateVersion(op, what string, v duroxide.SemVer) error {
	if v.Major > maxExactInt || v.Minor > maxExactInt || v.Patch > maxExactInt {
		return duroxide.Permanent(op, "%s %d.%d.%d has a component above 2^53, which Cosmos DB cannot compare exactly", what, v.Major, v.Minor, v.Patch)
	}
	return nil
}

// versionAtLeast and versionAtMost are the lexicographic comparisons of
// the stored pinned version with a bound, for the lock condition (which
// cannot take parameters; only validated integers are spliced in).
//
// They are written as one flat disjunction (AND binds tighter than OR)
// rather than nested groups: the PEG parser behind @vercel/cosmosdb-server
// backtracks exponentially in the nesting depth, and the nested form took
// over two minutes to parse there (the real service parses either at once).
func versionAtLeast(v duroxide.SemVer) string {
	return versionCompare(">", ">=", v)
}

func versionAtMost(v duroxide.SemVer) string {
	return versionCompare("<", "<=", v)
}

func versionCompare(strict, last string, v duroxide.SemVer) string {
	const p = "c.pinnedDuroxideVersion"
	return fmt.Sprintf("(%[1]s.major %[2]s %[4]d OR %[1]s.major = %[4]d AND %[1]s.minor %[2]s %[5]d OR %[1]s.major = %[4]d AND %[1]s.minor = %[5]d AND %[1]s.patch %[3]s %[6]d)",
		p, strict, last, v.Major, v.Minor, v.Patch)
}
