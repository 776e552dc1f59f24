package stress

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// sampler measures the process's CPU time and its peak Go memory over a
// run. Every system runs in this process, so the figures are the system's
// plus the harness's (and, for cosmostest, the in-process server's).
type sampler struct {
	cpu0 time.Duration
	peak uint64
	done chan struct{}
	wg   sync.WaitGroup
}

func startSampler() *sampler {
	runtime.GC()
	s := &sampler{cpu0: cpuTime(), done: make(chan struct{})}
	s.peak = memInUse()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				s.peak = max(s.peak, memInUse())
			}
		}
	}()
	return s
}

func (s *sampler) stop() (cpu time.Duration, peak uint64) {
	close(s.done)
	s.wg.Wait()
	return cpuTime() - s.cpu0, max(s.peak, memInUse())
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var memSamples = []metrics.Sample{
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

// memInUse is the memory the Go runtime holds from the OS, less what it
// has released: close to RSS for pure-Go code.
func memInUse() uint64 {
	s := make([]metrics.Sample, len(memSamples))
	copy(s, memSamples)
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
