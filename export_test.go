package cdb

// DisableSessionTokens makes p send no session tokens, as the provider did
// before it carried them: tests use it to show that the cosmostest-lagging
// backend catches a missing token.
func DisableSessionTokens(p *Provider) {
	p.st.DisableSessionTokens()
}

// SessionTokenFor returns the session token p would send on a read of
// instance's partition ("" if none), so white-box helpers that read through
// the SDK get read-your-writes on a lagging replica too.
func SessionTokenFor(p *Provider, instance string) string {
	if t := p.st.SessionToken(instance); t != nil {
		return *t
	}
	return ""
}

// ObserveSessionToken hands p the session token of a write made behind its
// back (a test's direct edit), as if p had made it: p's later reads of the
// partition then see that write even on a lagging replica.
func ObserveSessionToken(p *Provider, instance, token string) {
	p.st.ObserveSessionToken(instance, token)
}

// DocIDKinds returns every kind of document id the provider writes for
// instance, with s as the user string of the kinds that carry one (KV keys,
// session ids) and fixed values for the rest: the ids the hostile-id tests
// push through every point and batch operation.
func DocIDKinds(instance, s string) map[string]string {
	const turn = "t00000000000000000000000000000000"
	return map[string]string{
		"instance":  instanceDocID(instance),
		"history":   historyDocID(instance, 1<<63, 1<<63),
		"session":   sessionDocID(instance, s),
		"kv":        kvDocID(instance, s),
		"kv_delta":  kvDeltaDocID(instance, s),
		"kv_undo":   kvUndoDocID(instance, s),
		"worker":    workerItemID(instance, 1, 2),
		"orch":      docID(user(instance), fixed("orch"), fixed(turn), num(7)),
		"done":      docID(user(instance), fixed("done"), fixed(workerItemID(instance, 1, 2))),
		"journal":   journalDocID(instance, turn, 3),
		"execution": execSummaryDocID(instance, 1<<63),
		"outbox":    docID(fixed("outbox"), user(instance), fixed(turn), num(1)),
		"outboxKey": docID(user(instance), num(1), fixed(turn), num(1)),
		"intent":    docID(fixed("intent"), user(instance), num(1), fixed(turn), num(1)),
		// Lease documents: the user's lease group and process id.
		"lease_slot":   slotLeaseID(s, 255),
		"lease_member": memberID(s, s),
	}
}

// MaxExecSummaries is how many execution summaries the instance document
// keeps (documents.go).
const MaxExecSummaries = maxExecSummaries

// TooLargePause is how long a process leaves alone an instance whose
// document the service refuses to make larger (fetch.go).
const TooLargePause = tooLargePause
