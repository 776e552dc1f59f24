// Command walkthrough drives one duroxide orchestration through the Cosmos
// DB provider API by hand, step by step, with nothing installed but Go: it
// plays the runtime's part itself (fetch, turn, activity, ack) to show
// what the provider does underneath. For real Go orchestration code on a
// runtime, see examples/quickstart.
//
// Start with main; the steps are in package examples/internal/walkthrough.
//
//	go run ./examples/walkthrough
//
// Without COSMOS_ENDPOINT (or COSMOS_CONNECTION_STRING) embedded.Open
// starts localcosmos, the in-process server that speaks the Cosmos DB
// API, in memory, and it
// uses that. To use a
// real account or the emulator instead, set the variables cdb.ConfigFromEnv
// reads:
//
//	COSMOS_ENDPOINT=https://myacct.documents.azure.com:443/ COSMOS_KEY=... go run ./examples/walkthrough
//	COSMOS_ENDPOINT=https://myacct.documents.azure.com:443/ go run ./examples/walkthrough   # DefaultAzureCredential (az login, managed identity, ...)
//	COSMOS_CONNECTION_STRING='AccountEndpoint=...;AccountKey=...;' go run ./examples/walkthrough
//
// with COSMOS_DATABASE and COSMOS_CONTAINER (both default "duroxide") to
// choose the container, which cdb.New creates if it is missing. The
// example plays the runtime's part itself, so point it at a container no
// duroxide runtime is polling; it leaves one small completed instance
// behind.
//
// It exits 0 when the orchestration completed and its history reads back
// as expected, and 1 with the failing step otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/embedded"
	"github.com/duroxide-go/cdb/examples/internal/walkthrough"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "walkthrough failed:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// run is the whole example; main_test.go runs it too.
func run(ctx context.Context, w io.Writer) error {
	// embedded.Open connects (the account COSMOS_ENDPOINT names, or an
	// in-process store), creates the database and container if they are
	// missing (unless cfg.SkipBootstrap), and starts the maintenance loop
	// (outbox delivery, large-turn roll-forward, deletions) through
	// cdb.New with its default Options. The example plays the runtime's
	// part itself, so its in-process store is a fresh one in memory.
	st, err := embedded.Open(ctx, &embedded.Options{InMemory: true, Log: w})
	if err != nil {
		if errors.Is(err, cdb.ErrBootstrap) {
			return fmt.Errorf("bootstrapping the container: %w", err)
		}
		return fmt.Errorf("connecting: %w", err)
	}
	defer st.Close()
	p := st.Provider
	fmt.Fprintf(w, "provider  %s %s, container %s ready  [%s]\n",
		p.Name(), p.Version(), st.ContainerName(), walkthrough.Delta(nil, p.RequestStats()))

	instance := walkthrough.NewInstanceID("walkthrough")
	if err := walkthrough.Run(ctx, p, w, instance); err != nil {
		return err
	}

	fmt.Fprintln(w, "requests  sent by this provider (p.RequestStats()):")
	walkthrough.PrintStats(w, p.RequestStats())
	fmt.Fprintf(w, "done      %s completed with output %q\n", instance, walkthrough.SayHello(walkthrough.Input))
	return nil
}
