package localcosmos

// Op names a kind of request the server handles. It is used to count
// requests ([Server.Counts], [Server.Stats]), and tells an [Interceptor]
// what a request is (cosmostest's faults target operations by it).
type Op string

// The operations the server distinguishes.
const (
	OpReadAccount            Op = "ReadAccount"            // GET /
	OpCreateDatabase         Op = "CreateDatabase"         // POST /dbs
	OpQueryDatabases         Op = "QueryDatabases"         // POST /dbs (query)
	OpReadDatabase           Op = "ReadDatabase"           // GET /dbs/{db}
	OpDeleteDatabase         Op = "DeleteDatabase"         // DELETE /dbs/{db}
	OpCreateContainer        Op = "CreateContainer"        // POST /dbs/{db}/colls
	OpQueryContainers        Op = "QueryContainers"        // POST /dbs/{db}/colls (query)
	OpReadContainer          Op = "ReadContainer"          // GET /dbs/{db}/colls/{c}
	OpReplaceContainer       Op = "ReplaceContainer"       // PUT /dbs/{db}/colls/{c}
	OpDeleteContainer        Op = "DeleteContainer"        // DELETE /dbs/{db}/colls/{c}
	OpReadPartitionKeyRanges Op = "ReadPartitionKeyRanges" // GET /dbs/{db}/colls/{c}/pkranges
	OpCreateItem             Op = "CreateItem"             // POST /dbs/{db}/colls/{c}/docs
	OpUpsertItem             Op = "UpsertItem"             // POST .../docs with x-ms-documentdb-is-upsert
	OpReadItem               Op = "ReadItem"               // GET .../docs/{id}
	OpReplaceItem            Op = "ReplaceItem"            // PUT .../docs/{id}
	OpDeleteItem             Op = "DeleteItem"             // DELETE .../docs/{id}
	OpPatchItem              Op = "PatchItem"              // PATCH .../docs/{id}
	OpQuery                  Op = "Query"                  // POST .../docs with x-ms-documentdb-query
	OpBatch                  Op = "Batch"                  // POST .../docs with x-ms-cosmos-is-batch-request
	OpQueryOffers            Op = "QueryOffers"            // POST /offers (query)
	OpReadOffer              Op = "ReadOffer"              // GET /offers/{rid}
	OpReplaceOffer           Op = "ReplaceOffer"           // PUT /offers/{rid}
	OpUnsupported            Op = "Unsupported"            // anything else (answered 400)
)

// Stats are the totals for one [Op] since the server started or since the
// last [Server.ResetCounts].
type Stats struct {
	// Requests is the number of requests received, including those answered
	// by an injected fault or an error.
	Requests int
	// LowPriorityRequests is how many of Requests were sent with priority
	// level Low ([RequestPriority]); the others are High.
	LowPriorityRequests int
	// DocumentsReturned is the number of documents in response bodies: 1 for
	// a point read (or a write that returns content), the page size for a
	// query, the number of results carrying a body for a batch.
	DocumentsReturned int
	// ResponseBytes is the number of response body bytes written.
	ResponseBytes int64
	// RequestCharge is the sum of the x-ms-request-charge headers sent.
	RequestCharge float64
}

// Counts returns a snapshot of the number of requests received per
// operation. Faulted, rejected and failed requests are counted too.
func (s *Server) Counts() map[Op]int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	m := make(map[Op]int, len(s.stats))
	for op, st := range s.stats {
		if st.Requests > 0 {
			m[op] = st.Requests
		}
	}
	return m
}

// Stats returns the totals for one operation.
func (s *Server) Stats(op Op) Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if st := s.stats[op]; st != nil {
		return *st
	}
	return Stats{}
}

// ResetCounts sets all counters reported by [Server.Counts] and
// [Server.Stats] to zero.
func (s *Server) ResetCounts() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.stats = map[Op]*Stats{}
}

func (s *Server) countRequest(op Op, p Priority) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	st := s.statsFor(op)
	st.Requests++
	if p == PriorityLow {
		st.LowPriorityRequests++
	}
}

func (s *Server) countResponse(op Op, docs int, bytes int, charge float64) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	st := s.statsFor(op)
	st.DocumentsReturned += docs
	st.ResponseBytes += int64(bytes)
	st.RequestCharge += charge
}

func (s *Server) statsFor(op Op) *Stats {
	st := s.stats[op]
	if st == nil {
		st = &Stats{}
		s.stats[op] = st
	}
	return st
}
