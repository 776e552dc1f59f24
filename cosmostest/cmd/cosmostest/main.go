// Command cosmostest serves a local Cosmos DB (package localcosmos, through
// package cosmostest for its control endpoint) on a fixed address, so
// several processes can share one emulator:
//
//	go run ./cosmostest/cmd/cosmostest -addr 127.0.0.1:8081
//
// Start with `go run ./cosmostest/cmd/cosmostest -h`.
//
// It prints the endpoint, the key and the control endpoint as environment
// assignments (COSMOS_ENDPOINT, COSMOS_KEY, COSMOSTEST_CONTROL), one per
// line, then serves until interrupted (SIGINT or SIGTERM). Everything is
// kept in memory and lost when it stops, unless -data names a directory:
// then the account is kept there (a write-ahead log fsynced before every
// acknowledgement, compacted into snapshots) and a restart on the same
// directory, even after a crash, finds every acknowledged write. Only one
// process may serve a directory at a time.
//
// The control endpoint (see cosmostest.Server.ControlHandler) sets faults
// and added latency from another process, for example a 503 on one write in
// ten for five seconds:
//
//	curl -X POST $COSMOSTEST_CONTROL/faults -d '{"writesOnly":true,"status":503,"probability":0.1,"durationMs":5000}'
//
// Flags:
//
//	-addr     address of the Cosmos endpoint (default 127.0.0.1:8081)
//	-control  address of the control endpoint (default 127.0.0.1:0, a free port)
//	-key      master key, base64 (default the emulator's well-known key)
//	-v        log every request to stderr
//	-ranges   physical partitions per container (default 1)
//	-data     directory to keep the account in (default none: memory only)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/duroxide-go/cdb/cosmostest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cosmostest:", err)
		os.Exit(1)
	}
}

// run parses args, starts the server and its control endpoint, prints where
// they are to stdout and serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cosmostest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "address of the Cosmos endpoint")
	controlAddr := fs.String("control", "127.0.0.1:0", "address of the control endpoint")
	key := fs.String("key", cosmostest.EmulatorKey, "account master key (base64)")
	verbose := fs.Bool("v", false, "log every request to stderr")
	ranges := fs.Int("ranges", 1, "physical partitions (partition key ranges) per container; cross-partition queries are served one range per page")
	dataDir := fs.String("data", "", "directory to keep the account in across restarts (default: memory only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := &cosmostest.Options{Addr: *addr, Key: *key, PartitionKeyRanges: *ranges, DataDir: *dataDir}
	if *verbose {
		opts.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	}
	srv, err := cosmostest.NewServer(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *controlAddr)
	if err != nil {
		return fmt.Errorf("control endpoint: %w", err)
	}
	control := &http.Server{Handler: srv.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- control.Serve(ln) }()

	fmt.Fprintf(stdout, "COSMOS_ENDPOINT=%s\nCOSMOS_KEY=%s\nCOSMOSTEST_CONTROL=http://%s/\n", srv.Endpoint(), srv.Key(), ln.Addr())
	fmt.Fprintln(stderr, "cosmostest: serving; interrupt to stop")

	select {
	case <-ctx.Done():
	case err = <-served:
		return fmt.Errorf("control endpoint: %w", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := control.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
