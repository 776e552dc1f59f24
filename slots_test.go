package cdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Vectors from rustc 1.95: DefaultHasher::new(), s.hash(&mut h), h.finish().
func TestDispatchSlotMatchesRust(t *testing.T) {
	cases := []struct {
		in   string
		hash uint64
		slot uint8
	}{
		{"", 3476900567878811119, 239},
		{"a", 8186225505942432243, 243},
		{"order-1", 18026410407016639915, 171},
		{"instance-A", 1214052946075886739, 147},
		{"parent-instance::child-instance", 11033697568665761378, 98},
		{"日本語/#?\\\"", 6479072453895190752, 224},
		{"e2e-test-12345678", 9539513292166555757, 109},
		{"stress-test-42", 11352367268520471666, 114},
	}
	for _, c := range cases {
		require.Equal(t, c.hash, sipHash13(append([]byte(c.in), 0xff)), c.in)
		require.Equal(t, c.slot, DispatchSlot(c.in), c.in)
	}
}

func TestMemoryLeasesPartitionSlots(t *testing.T) {
	ctx := t.Context()
	m, err := NewMemoryLeases(3)
	require.NoError(t, err)
	seen := map[uint8]uint64{}
	for id := uint64(10); id < 13; id++ {
		slots, err := m.AcquireSlots(ctx, id)
		require.NoError(t, err)
		again, _ := m.AcquireSlots(ctx, id)
		require.Equal(t, slots, again, "assignment is cached")
		for _, s := range slots {
			_, dup := seen[s]
			require.False(t, dup, "slot %d assigned twice", s)
			seen[s] = id
		}
	}
	require.Len(t, seen, NumSlots)
	_, err = m.AcquireSlots(ctx, 99)
	require.Error(t, err, "a fourth dispatcher must not overlap")
	require.NoError(t, m.ReleaseSlots(ctx, 11))
	slots, err := m.AcquireSlots(ctx, 99)
	require.NoError(t, err)
	require.Equal(t, seen[slots[0]], uint64(11), "the freed share is reused")
	_, err = NewMemoryLeases(0)
	require.Error(t, err)
}
