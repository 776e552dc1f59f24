package cdb

import (
	"encoding/base64"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
)

// Lock tokens carry the location of what they lock, so any process — not
// only the one that fetched — can find it with a point read:
//
//	orchestration: "o." + base64url(instanceId) + "." + uuid
//	work item:     "w." + base64url(instanceId) + "." + base64url(itemId) + "." + uuid
//
// The uuid makes every lock distinct; the stored lockToken field must
// match the whole token for the lock to be valid.

var b64 = base64.RawURLEncoding

func newOrchToken(instance string) string {
	return "o." + b64.EncodeToString([]byte(instance)) + "." + uuid.NewString()
}

func newWorkToken(instance, itemID string) string {
	return workToken(instance, itemID, uuid.New())
}

func workToken(instance, itemID string, id uuid.UUID) string {
	return "w." + b64.EncodeToString([]byte(instance)) + "." + b64.EncodeToString([]byte(itemID)) + "." + id.String()
}

func errInvalidToken(op string) error {
	return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token")
}

func errLockExpired(op string) error {
	return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the lock expired or was taken by another dispatcher")
}

func parseOrchToken(op, token string) (instance string, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != "o" {
		return "", errInvalidToken(op)
	}
	if _, perr := uuid.Parse(parts[2]); perr != nil {
		return "", errInvalidToken(op)
	}
	inst, derr := b64.DecodeString(parts[1])
	if derr != nil || len(inst) == 0 {
		return "", errInvalidToken(op)
	}
	return string(inst), nil
}

func parseWorkToken(op, token string) (instance, itemID string, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != "w" {
		return "", "", errInvalidToken(op)
	}
	if _, perr := uuid.Parse(parts[3]); perr != nil {
		return "", "", errInvalidToken(op)
	}
	inst, derr1 := b64.DecodeString(parts[1])
	id, derr2 := b64.DecodeString(parts[2])
	if derr1 != nil || derr2 != nil || len(inst) == 0 || len(id) == 0 {
		return "", "", errInvalidToken(op)
	}
	return string(inst), string(id), nil
}

// orchLock is what this process remembers about an orchestration lock it
// holds, so ack, abandon and renew need no read. A lock fetched by another
// process is reconstructed with a read (see Provider.orchLockFor).
type orchLock struct {
	instance    string
	token       string
	doc         instanceDoc // the instance document as of the lock
	etag        azcore.ETag // its ETag: every write is conditioned on it
	lockedUntil time.Time
	messages    []*queueDoc // the locked messages, in order
	// KV state loaded with the turn: the kv documents and the current
	// execution's kv_delta documents, needed to apply KeyValuesCleared and
	// to merge the delta without another read, and the kv_undo documents
	// of a failed execution (kvbaseline.go).
	kvStore   map[string]duroxide.KVEntry
	deltaKeys []string
	delta     []kvDoc
	undo      []kvDoc
	// staleMarkers are orch_received markers of the instance old enough
	// to be removed by the turn's batch (see receivedRetention).
	staleMarkers []string
	// base is the history and KV state the turn was handed, from the load
	// query or the turn cache (turncache.go); nil when unknown.
	base *turnState

	// mu serialises acks, abandons and renewals of this lock in this
	// process: two concurrent acks of one token must not both succeed.
	mu sync.Mutex
	// ambiguous is set when a commit failed with an unknown outcome
	// (timeout, reset): only then may a retried ack treat "the instance
	// already records this token as its last ack" as success.
	ambiguous bool
	// finished is set once the lock was acked or abandoned.
	finished bool
	// staging is set once a large turn of this lock began staging
	// without committing: its staged documents are another plan's, which
	// the next attempt removes first (large.go).
	staging bool
}

// locks is a token-keyed cache of held locks.
type locks[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (l *locks[T]) get(token string) (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[token]
	return v, ok
}

func (l *locks[T]) put(token string, v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]T{}
	}
	l.m[token] = v
}

func (l *locks[T]) drop(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, token)
}

// prune removes entries for which expired returns true; called
// opportunistically so abandoned tokens do not accumulate.
func (l *locks[T]) prune(expired func(T) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range l.m {
		if expired(v) {
			delete(l.m, k)
		}
	}
}

func turnOf(token string) string { return token[strings.LastIndexByte(token, '.')+1:] }
