package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// workerSet holds the worker processes, by id.
type workerSet struct {
	mu      sync.Mutex
	command []string // program and leading arguments
	env     []string
	// skews is each worker's clock skew, kept across restarts.
	skews  map[string]time.Duration
	dir    string
	procs  map[string]*exec.Cmd
	exited map[*exec.Cmd]chan struct{}
}

// start (re)starts worker id; its stdout and stderr go to a file in dir.
func (w *workerSet) start(id string) error {
	out, err := os.OpenFile(filepath.Join(w.dir, "worker-"+id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	args := append(append([]string{}, w.command[1:]...), "-worker", "-id", id)
	cmd := exec.Command(w.command[0], args...)
	cmd.Env = append(append(os.Environ(), w.env...), envWorkerID+"="+id, envClockSkew+"="+w.skews[id].String())
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting worker %s: %w", id, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	w.mu.Lock()
	w.procs[id] = cmd
	w.exited[cmd] = done
	w.mu.Unlock()
	return nil
}

// kill SIGKILLs worker id and waits for it to exit.
func (w *workerSet) kill(id string) {
	w.mu.Lock()
	cmd := w.procs[id]
	done := w.exited[cmd]
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// running reports whether worker id's process is alive.
func (w *workerSet) running(id string) bool {
	w.mu.Lock()
	done := w.exited[w.procs[id]]
	w.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// stopAll asks every worker to stop (SIGTERM: the runtime shuts down) and
// kills those still running after grace.
func (w *workerSet) stopAll(grace time.Duration) {
	w.mu.Lock()
	var all []*exec.Cmd
	var dones []chan struct{}
	for _, cmd := range w.procs {
		all = append(all, cmd)
		dones = append(dones, w.exited[cmd])
	}
	w.mu.Unlock()
	for _, cmd := range all {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
	for i, done := range dones {
		select {
		case <-done:
		case <-deadline:
			_ = all[i].Process.Kill()
			<-done
		}
	}
}
