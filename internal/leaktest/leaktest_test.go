package leaktest

import (
	"testing"
	"time"
)

// A goroutine left blocked is reported; once it ends, nothing is.
func TestFindReportsALeakedGoroutine(t *testing.T) {
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() {
		close(started)
		<-stop
	}()
	<-started
	err := findSoon(false)
	if err == nil {
		t.Fatal("a blocked goroutine was not reported")
	}
	close(stop)
	if err := findSoon(true); err != nil {
		t.Fatalf("a finished goroutine is still reported: %v", err)
	}
}

// findSoon retries Find for a short while until it reports what is wanted
// (goroutines take a moment to exit).
func findSoon(wantClean bool) error {
	var err error
	for range 100 {
		err = Find()
		if (err == nil) == wantClean {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}
