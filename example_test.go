package cdb_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// Connect with an account key. Here the account is cosmostest, the
// in-process fake of Cosmos DB; for a real account pass its endpoint
// ("https://<account>.documents.azure.com:443/") and key. New creates the
// database and container if they are missing, and Close releases the
// client.
func ExampleNew() {
	srv, err := cosmostest.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	p, err := cdb.New(ctx, cdb.Config{
		Endpoint:  srv.Endpoint(),
		Key:       srv.Key(),
		Database:  "app",
		Container: "orchestrations",
	}, nil) // nil Options: the defaults
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	ids, err := p.Admin().ListInstances(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name(), "with", len(ids), "instances")
	// Output:
	// cosmosdb with 0 instances
}

// Configure from the environment: COSMOS_CONNECTION_STRING, or
// COSMOS_ENDPOINT with COSMOS_KEY, or COSMOS_ENDPOINT alone for
// DefaultAzureCredential (Azure CLI login, managed identity, workload
// identity, ...), plus COSMOS_DATABASE, COSMOS_CONTAINER and
// COSMOS_AUDIENCE. The environment says how to reach the account; how the
// provider behaves is Options, passed to New beside it.
func ExampleConfigFromEnv() {
	cfg, err := cdb.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // e.g. COSMOS_ENDPOINT (or COSMOS_CONNECTION_STRING) is not set
		return
	}
	if cfg.Credential != nil {
		// Entra ID cannot create containers: provision it beforehand and
		// skip the startup check if you want no startup request at all.
		cfg.SkipBootstrap = true
	}
	p, err := cdb.New(context.Background(), cfg, &cdb.Options{Logger: slog.Default()})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	// Hand p to the duroxide runtime as its duroxide.Provider.
}

// Segments may come in any order and keys are case-insensitive. The
// emulator's DisableServerCertificateValidation is honoured, and errors
// never echo the key.
func ExampleParseConnectionString() {
	cs, err := cdb.ParseConnectionString("AccountKey=" + cosmostest.EmulatorKey +
		";accountendpoint=https://localhost:8081/;DisableServerCertificateValidation=True;")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cs.Endpoint, cs.DisableServerCertificateValidation, cs.Key == cosmostest.EmulatorKey)

	_, err = cdb.ParseConnectionString("AccountEndpoint=https://localhost:8081/;AccountKey=not base64!")
	fmt.Println(err)

	// A Config takes the string as it is.
	_ = cdb.Config{ConnectionString: "AccountEndpoint=https://localhost:8081/;AccountKey=" + cosmostest.EmulatorKey}
	// Output:
	// https://localhost:8081/ true true
	// cdb: invalid configuration: connection string AccountKey is not valid base64
}

// Split the 256 dispatch slots over the dispatchers of one process, so
// they poll disjoint parts of the queue. Each fetch names its dispatcher
// with WithDispatcher; instances map to slots with DispatchSlot.
func ExampleNewMemoryLeases() {
	leases, err := cdb.NewMemoryLeases(4)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	owner := map[uint8]uint64{} // slot -> dispatcher
	for _, dispatcher := range []uint64{7, 9, 10, 11} {
		slots, err := leases.AcquireSlots(ctx, dispatcher)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("dispatcher %d: %d slots %v...\n", dispatcher, len(slots), slots[:3])
		for _, s := range slots {
			owner[s] = dispatcher
		}
	}
	_, err = leases.AcquireSlots(ctx, 12)
	fmt.Println(err)

	slot := cdb.DispatchSlot("order-1")
	fmt.Printf("order-1: slot %d, polled by dispatcher %d\n", slot, owner[slot])

	// The provider asks the lease provider on every fetch made with a
	// context naming the dispatcher.
	_ = cdb.Options{Leases: leases}
	_ = cdb.WithDispatcher(ctx, 7)
	// Output:
	// dispatcher 7: 64 slots [0 4 8]...
	// dispatcher 9: 64 slots [1 5 9]...
	// dispatcher 10: 64 slots [2 6 10]...
	// dispatcher 11: 64 slots [3 7 11]...
	// cdb: all 4 dispatcher shares are taken
	// order-1: slot 171, polled by dispatcher 11
}

// One orchestration turn in miniature, playing the runtime's part: a
// client enqueues StartOrchestration, a dispatcher fetches it with a peek
// lock, runs the orchestrator, and acks the new history and metadata in
// one atomic commit. examples/walkthrough walks through a whole
// orchestration with an activity.
func ExampleProvider_AckOrchestrationItem() {
	srv, err := cosmostest.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	name, version := "Ship", "1.0.0"
	err = p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{
		Instance: "order-1", Orchestration: name, Input: `{"qty":2}`, Version: &version, ExecutionID: 1,
	}, 0)
	if err != nil {
		log.Fatal(err)
	}

	item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
	if err != nil || item == nil {
		log.Fatal("nothing fetched: ", err)
	}
	fmt.Println("fetched", item.Instance, item.Messages[0].Variant(), "attempt", item.AttemptCount)

	event := func(id uint64, kind duroxide.EventKind) duroxide.Event {
		return duroxide.Event{EventID: id, InstanceID: item.Instance, ExecutionID: 1, TimestampMs: 1767225600000, DuroxideVersion: "0.1.29", Kind: kind}
	}
	status, output := duroxide.StatusCompleted, `"shipped"`
	err = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			event(1, duroxide.OrchestrationStarted{Name: name, Version: version, Input: `{"qty":2}`}),
			event(2, duroxide.OrchestrationCompleted{Output: output}),
		},
		Metadata: duroxide.ExecutionMetadata{OrchestrationName: &name, OrchestrationVersion: &version, Status: &status, Output: &output},
	})
	if err != nil {
		log.Fatal(err)
	}

	history, _ := p.Read(ctx, "order-1")
	for _, e := range history {
		fmt.Println(e.EventID, e.Kind.EventType())
	}
	info, _ := p.InstanceInfo(ctx, "order-1")
	fmt.Println(info.OrchestrationName, info.Status, *info.Output)
	// Output:
	// fetched order-1 StartOrchestration attempt 1
	// 1 OrchestrationStarted
	// 2 OrchestrationCompleted
	// Ship Completed "shipped"
}
