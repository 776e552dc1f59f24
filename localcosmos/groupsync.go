package localcosmos

import (
	"errors"
	"sync"
)

// Group commit of the write-ahead log.
//
// A write appends its record to the current segment under the store's
// write lock (so records are in the order the changes were made) but does
// not fsync there: it releases the lock and, before its response is
// written, waits until an fsync that started after its append has
// finished. Whoever waits first while no fsync is running issues one for
// everything appended so far, so concurrent writers share one fsync and
// readers are not held behind the write lock for the length of an fsync.
// A read waits the same way for every record appended before it answers,
// so no response ever shows a change that is not yet on disk.

// errSyncClosed is returned to a waiter whose records were not synced
// before the data directory was closed (not expected: closing syncs).
var errSyncClosed = errors.New("data directory closed before the log was synced")

// groupSync tracks which appended records are on disk.
type groupSync struct {
	dir     string // the data directory, for errors
	mu      sync.Mutex
	cond    *sync.Cond
	seg     dataFile // the segment records are appended to; nil when closed
	written uint64   // records appended
	synced  uint64   // records known to be on disk
	syncing bool     // an fsync is running (outside mu)
	err     error    // the first fsync failure; sticky
	sync    func(dataFile) error
}

func newGroupSync(dir string, seg dataFile) *groupSync {
	g := &groupSync{dir: dir, seg: seg, sync: dataFile.SyncData}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// appended counts one record written to the segment (store write lock held).
func (g *groupSync) appended() {
	g.mu.Lock()
	g.written++
	g.mu.Unlock()
}

// wait returns once every record appended before the call is on disk, or
// with the error that stopped the log.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	target := g.written
	for g.synced < target && g.err == nil {
		if g.syncing {
			g.cond.Wait()
			continue
		}
		if g.seg == nil {
			return errSyncClosed
		}
		g.syncOnce()
	}
	return g.err
}

// syncOnce fsyncs the segment for everything appended so far (mu held on
// entry and exit; released during the fsync).
func (g *groupSync) syncOnce() {
	g.syncing = true
	upTo, f := g.written, g.seg
	g.mu.Unlock()
	err := g.sync(f)
	g.mu.Lock()
	g.syncing = false
	if err != nil {
		if g.err == nil {
			g.err = err
		}
	} else if upTo > g.synced {
		g.synced = upTo
	}
	g.cond.Broadcast()
}

// syncAll returns once every record appended to the current segment is on
// disk, or with the error that stopped the log. The store write lock is
// held, so nothing is appended meanwhile.
func (g *groupSync) syncAll() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.syncAllLocked()
	return g.err
}

// syncAllLocked is syncAll with mu held; an fsync in progress is waited
// for, so none is running when it returns.
func (g *groupSync) syncAllLocked() {
	for g.syncing {
		g.cond.Wait()
	}
	for g.synced < g.written && g.err == nil && g.seg != nil {
		g.syncOnce()
	}
}

// switchTo syncs every record appended to the current segment and makes
// seg (nil when closing) the segment later records go to (store write lock
// held). No fsync of the old segment runs afterwards, so it can be closed.
func (g *groupSync) switchTo(seg dataFile) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.syncAllLocked()
	g.seg = seg
	return g.err
}
