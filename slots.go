package cdb

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
)

// NumSlots is the size of the dispatch-slot keyspace.
const NumSlots = 256

// DispatchSlot returns the dispatch slot (0–255) of an instance, stored on
// every queue document so dispatchers can split the keyspace.
//
// It is Rust's std DefaultHasher (SipHash-1-3 with zero keys) over the
// string as Rust's Hash for str feeds it — the bytes followed by 0xFF —
// modulo 256, which is what the seed specification's dispatch_slot does.
// Test vectors were generated with rustc, so Go and Rust dispatchers agree
// on slots when sharing a container.
func DispatchSlot(instanceID string) uint8 {
	return uint8(sipHash13(append([]byte(instanceID), 0xff)) % NumSlots)
}

// sipHash13 is SipHash-1-3 with k0 = k1 = 0.
func sipHash13(msg []byte) uint64 {
	v0 := uint64(0x736f6d6570736575)
	v1 := uint64(0x646f72616e646f6d)
	v2 := uint64(0x6c7967656e657261)
	v3 := uint64(0x7465646279746573)
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := binary.LittleEndian.Uint64(msg)
		v3 ^= m
		round()
		v0 ^= m
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}

// LeaseProvider assigns dispatch slots to dispatchers, so that concurrent
// dispatchers poll disjoint parts of the queue instead of racing for the
// same documents. The provider asks for the slots of the dispatcher named
// in the fetch's context (see WithDispatcher).
//
// MemoryLeases splits the slots among the dispatchers of one process;
// Leases splits them among processes sharing a container.
type LeaseProvider interface {
	// AcquireSlots returns the slots dispatcherID may poll. It must be
	// cheap: it is called on every fetch.
	AcquireSlots(ctx context.Context, dispatcherID uint64) ([]uint8, error)
	// ReleaseSlots gives the dispatcher's slots back.
	ReleaseSlots(ctx context.Context, dispatcherID uint64) error
}

type dispatcherKey struct{}

// WithDispatcher names the dispatcher making a fetch, for LeaseProvider.
// Without it a fetch polls every slot.
func WithDispatcher(ctx context.Context, dispatcherID uint64) context.Context {
	return context.WithValue(ctx, dispatcherKey{}, dispatcherID)
}

func dispatcherFrom(ctx context.Context) (uint64, bool) {
	id, ok := ctx.Value(dispatcherKey{}).(uint64)
	return id, ok
}

// MemoryLeases distributes the 256 slots evenly over a fixed number of
// dispatchers in one process: the i-th distinct dispatcher to ask gets
// every slot s with s % n == i. Assignments are cached per dispatcher.
type MemoryLeases struct {
	n      int
	mu     sync.Mutex
	assign map[uint64]int
	free   []int
}

// NewMemoryLeases returns a lease provider for n concurrent dispatchers.
func NewMemoryLeases(n int) (*MemoryLeases, error) {
	if n < 1 || n > NumSlots {
		return nil, fmt.Errorf("cdb: dispatcher count must be between 1 and %d, got %d", NumSlots, n)
	}
	m := &MemoryLeases{n: n, assign: map[uint64]int{}}
	for i := n - 1; i >= 0; i-- {
		m.free = append(m.free, i)
	}
	return m, nil
}

// AcquireSlots returns the dispatcher's slots, assigning a share on first
// use. A dispatcher beyond the configured count gets an error rather than
// silently overlapping another's slots.
func (m *MemoryLeases) AcquireSlots(_ context.Context, dispatcherID uint64) ([]uint8, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx, ok := m.assign[dispatcherID]
	if !ok {
		if len(m.free) == 0 {
			return nil, fmt.Errorf("cdb: all %d dispatcher shares are taken", m.n)
		}
		idx = m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
		m.assign[dispatcherID] = idx
	}
	slots := make([]uint8, 0, NumSlots/m.n+1)
	for s := idx; s < NumSlots; s += m.n {
		slots = append(slots, uint8(s))
	}
	return slots, nil
}

// ReleaseSlots frees the dispatcher's share for another dispatcher.
func (m *MemoryLeases) ReleaseSlots(_ context.Context, dispatcherID uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx, ok := m.assign[dispatcherID]; ok {
		delete(m.assign, dispatcherID)
		m.free = append(m.free, idx)
	}
	return nil
}
