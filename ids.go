package cdb

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Document ids are built from user strings (instance ids, session ids, KV
// keys) that may contain anything. Cosmos refuses '/', '\', '?' and '#' in
// ids and limits them to 255 characters, and azcosmos splices ids into
// batch JSON without escaping, so '"', '\' and control characters would
// corrupt a batch; '%' is escaped too because gateways and tools have a
// history of decoding it twice. escapeIDPart maps those bytes (and the
// escape byte '~' itself) to "~XX" (two upper-case hex digits) and leaves everything else
// alone, so ordinary ids ("order-1") are identical to the Rust crate's.
// The raw value is always stored in its own field (instanceId, key,
// sessionId); queries never parse ids.

const (
	// maxIDBytes is Cosmos's id limit. We count bytes, not characters, so a
	// multi-byte id can never be refused by the service after we accepted it.
	maxIDBytes = 255
	// maxPartitionKeyBytes is Cosmos's limit for a (large, v2) partition key
	// value; an instance id longer than this cannot be stored at all.
	maxPartitionKeyBytes = limits.MaxPartitionKeyBytes
	// hashedPrefix marks an id part replaced by its hash because the id
	// would exceed maxIDBytes. It cannot be produced by escapeIDPart, whose
	// output never has 'h' after '~'.
	hashedPrefix = "~h"
)

func mustEscape(b byte) bool {
	switch b {
	case '/', '\\', '?', '#', '"', '~', '%', 0x7f:
		return true
	}
	return b < 0x20
}

// mustEscapeAt reports whether byte i of s is escaped: a mustEscape byte,
// or a space that ends s.
func mustEscapeAt(s string, i int) bool {
	return mustEscape(s[i]) || (s[i] == ' ' && i == len(s)-1)
}

// escapeIDPart escapes s for use inside a Cosmos document id. A trailing
// space is escaped too: the gateway accepts an id ending in a space at
// create time and then refuses every point operation on it with 401 (the
// .NET SDK's id-encoding tests, Azure/azure-cosmos-dotnet-v3
// CosmosItemIdEncodingTests), so a KV key "k " or an instance id "i " must
// never end a document id. '/' and '#' are in the same trap (404 and 401
// after a successful create) and '\' is refused at create (400).
func escapeIDPart(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if mustEscapeAt(s, i) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscapeAt(s, i) {
			b.WriteByte('~')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hashIDPart returns a fixed-length stand-in for a part too long to embed.
func hashIDPart(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hashedPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:20]))
}

// docID joins escaped parts with ':' as the Rust crate does
// ("<instanceId>:history:1:5"). user marks which parts are user strings;
// if the id would be too long, the longest user parts are replaced by
// their hashes until it fits.
func docID(parts ...idPart) string {
	esc := make([]string, len(parts))
	total := len(parts) - 1
	for i, p := range parts {
		if p.user {
			esc[i] = escapeIDPart(p.s)
		} else {
			esc[i] = p.s
		}
		total += len(esc[i])
	}
	for total > maxIDBytes {
		longest := -1
		for i, p := range parts {
			if p.user && !strings.HasPrefix(esc[i], hashedPrefix) && (longest < 0 || len(esc[i]) > len(esc[longest])) {
				longest = i
			}
		}
		if longest < 0 {
			break // only fixed parts left; they are short by construction
		}
		h := hashIDPart(parts[longest].s)
		total += len(h) - len(esc[longest])
		esc[longest] = h
	}
	return strings.Join(esc, ":")
}

type idPart struct {
	s    string
	user bool
}

func user(s string) idPart  { return idPart{s: s, user: true} }
func fixed(s string) idPart { return idPart{s: s} }
func num(n uint64) idPart   { return idPart{s: strconv.FormatUint(n, 10)} }

// Document ids, one function per document type (spec §2.2).
func instanceDocID(inst string) string { return docID(user(inst), fixed("instance")) }
func historyDocID(inst string, exec, event uint64) string {
	return docID(user(inst), fixed("history"), num(exec), num(event))
}
func execSummaryDocID(inst string, exec uint64) string {
	return docID(user(inst), fixed("execution"), num(exec))
}
func sessionDocID(inst, session string) string {
	return docID(user(inst), fixed("session"), user(session))
}
func kvDocID(inst, key string) string      { return docID(user(inst), fixed("kv"), user(key)) }
func kvDeltaDocID(inst, key string) string { return docID(user(inst), fixed("kv_delta"), user(key)) }
func kvUndoDocID(inst, key string) string  { return docID(user(inst), fixed("kv_undo"), user(key)) }

// validateInstanceID rejects instance ids that cannot be stored (the
// rules are shared with memprovider: internal/limits).
func validateInstanceID(op, inst string) error { return limits.InstanceID(op, inst) }

// validateUserString rejects strings that cannot be stored in a document
// (KV keys, session ids): only invalid UTF-8.
func validateUserString(op, what, s string) error { return limits.UserString(op, what, s) }

// pendingTurnCondition is the patch condition "the instance still has
// pending turn turn". Patch conditions take no parameters (the REST body
// is {condition, operations}), so the turn id is spliced in; it must be
// what turnOf makes — a UUID — and anything else (a hand-edited or
// corrupt document) is refused rather than spliced into the query.
func pendingTurnCondition(turn string) (string, error) {
	if _, err := uuid.Parse(turn); err != nil || len(turn) != 36 { // the canonical form only
		return "", duroxide.Permanent("roll_forward", "pending turn id %q is not a turn id; refusing to use it in a condition", turn)
	}
	return "FROM c WHERE c.pendingTurn.turn = '" + turn + "'", nil
}

// completionDocID is the id of the completion an ack of work item itemID
// enqueues in the item's own partition: deterministic, so a retried ack
// cannot enqueue it twice and a deletion can remove it with the item.
func completionDocID(inst, itemID string) string {
	return docID(user(inst), fixed("done"), fixed(itemID))
}

// workerItemID is deterministic so cancellation can delete by id and a
// retried ack cannot enqueue an activity twice.
func workerItemID(inst string, exec, activity uint64) string {
	return docID(user(inst), fixed("worker"), num(exec), num(activity))
}
