package cosmostest

import "github.com/duroxide-go/cdb/localcosmos"

// The server core's names, so that tests written against cosmostest keep
// naming them here.

// Op names a kind of request the server handles. It is used to count
// requests ([Server.Counts], [Server.Stats]) and to target faults ([Fault]).
type Op = localcosmos.Op

// The operations the server distinguishes.
const (
	OpReadAccount            = localcosmos.OpReadAccount            // GET /
	OpCreateDatabase         = localcosmos.OpCreateDatabase         // POST /dbs
	OpQueryDatabases         = localcosmos.OpQueryDatabases         // POST /dbs (query)
	OpReadDatabase           = localcosmos.OpReadDatabase           // GET /dbs/{db}
	OpDeleteDatabase         = localcosmos.OpDeleteDatabase         // DELETE /dbs/{db}
	OpCreateContainer        = localcosmos.OpCreateContainer        // POST /dbs/{db}/colls
	OpQueryContainers        = localcosmos.OpQueryContainers        // POST /dbs/{db}/colls (query)
	OpReadContainer          = localcosmos.OpReadContainer          // GET /dbs/{db}/colls/{c}
	OpReplaceContainer       = localcosmos.OpReplaceContainer       // PUT /dbs/{db}/colls/{c}
	OpDeleteContainer        = localcosmos.OpDeleteContainer        // DELETE /dbs/{db}/colls/{c}
	OpReadPartitionKeyRanges = localcosmos.OpReadPartitionKeyRanges // GET /dbs/{db}/colls/{c}/pkranges
	OpCreateItem             = localcosmos.OpCreateItem             // POST /dbs/{db}/colls/{c}/docs
	OpUpsertItem             = localcosmos.OpUpsertItem             // POST .../docs with x-ms-documentdb-is-upsert
	OpReadItem               = localcosmos.OpReadItem               // GET .../docs/{id}
	OpReplaceItem            = localcosmos.OpReplaceItem            // PUT .../docs/{id}
	OpDeleteItem             = localcosmos.OpDeleteItem             // DELETE .../docs/{id}
	OpPatchItem              = localcosmos.OpPatchItem              // PATCH .../docs/{id}
	OpQuery                  = localcosmos.OpQuery                  // POST .../docs with x-ms-documentdb-query
	OpBatch                  = localcosmos.OpBatch                  // POST .../docs with x-ms-cosmos-is-batch-request
	OpQueryOffers            = localcosmos.OpQueryOffers            // POST /offers (query)
	OpReadOffer              = localcosmos.OpReadOffer              // GET /offers/{rid}
	OpReplaceOffer           = localcosmos.OpReplaceOffer           // PUT /offers/{rid}
	OpUnsupported            = localcosmos.OpUnsupported            // anything else (answered 400)
)

// Stats are the totals for one [Op] since the server started or since the
// last ResetCounts.
type Stats = localcosmos.Stats

// Priority is a request's priority level under priority-based execution
// ([localcosmos.RequestPriority]); [Fault].Priority targets it.
type Priority = localcosmos.Priority

// The priority levels (see [localcosmos.Priority]).
const (
	PriorityHigh = localcosmos.PriorityHigh // High, or no level named
	PriorityLow  = localcosmos.PriorityLow  // Low
)

// AuthMode selects which authorization a server accepts.
type AuthMode = localcosmos.AuthMode

// The authorization modes (see [localcosmos.AuthMode]).
const (
	AuthKey        = localcosmos.AuthKey        // master-key signatures only (the default)
	AuthToken      = localcosmos.AuthToken      // Entra ID tokens only
	AuthKeyOrToken = localcosmos.AuthKeyOrToken // either
)

// EmulatorKey is the well-known master key of the Cosmos DB emulator, the
// default key of a [Server].
const EmulatorKey = localcosmos.EmulatorKey

// ErrDataCorrupt is matched (errors.Is) by NewServer's error when the data
// directory holds damaged files.
var ErrDataCorrupt = localcosmos.ErrDataCorrupt

// ErrDataDirInUse is matched (errors.Is) by NewServer's error when another
// server, in this process or another, has the data directory open.
var ErrDataDirInUse = localcosmos.ErrDataDirInUse
