package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
)

// clearAccountEnv makes run use cosmostest whatever the environment says.
func clearAccountEnv(t *testing.T) {
	for _, k := range []string{"COSMOS_ENDPOINT", "COSMOS_KEY", "COSMOS_CONNECTION_STRING", "COSMOS_DATABASE", "COSMOS_CONTAINER", "COSMOS_AUDIENCE"} {
		t.Setenv(k, "")
	}
}

func TestWalkthroughOnCosmostest(t *testing.T) {
	clearAccountEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		"in-process cosmostest in memory",
		"container duroxide/duroxide ready",
		"enqueued StartOrchestration of Greet 1.0.0",
		"fetched 1 message (StartOrchestration), 0 history events, lock attempt 1",
		"worker item ActivityExecute SayHello #2",
		"fetched ActivityExecute SayHello #2",
		`ran SayHello("world") = "Hello, world!"`,
		"fetched 1 message (ActivityCompleted), 2 history events, lock attempt 1",
		`status Completed, output "Hello, world!"`,
		"read 4 events",
		`#4 OrchestrationCompleted output "Hello, world!"`,
		"p.RequestStats()",
		"total",
		`completed with output "Hello, world!"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestWalkthroughBadConfigurationFails(t *testing.T) {
	clearAccountEnv(t)
	t.Setenv("COSMOS_CONNECTION_STRING", "AccountEndpoint=https://example.documents.azure.com:443/;")
	var out bytes.Buffer
	err := run(t.Context(), &out)
	if !errors.Is(err, cdb.ErrConfig) || !strings.Contains(err.Error(), "AccountKey") {
		t.Fatalf("run = %v, want a configuration error about the missing AccountKey", err)
	}
}

// With COSMOS_ENDPOINT and COSMOS_KEY the example uses that account (here
// a cosmostest server standing in for one); a second run reuses the
// container and starts a new instance.
func TestWalkthroughOnConfiguredAccount(t *testing.T) {
	clearAccountEnv(t)
	srv := cosmostest.New(t, nil)
	t.Setenv("COSMOS_ENDPOINT", srv.Endpoint())
	t.Setenv("COSMOS_KEY", srv.Key())
	t.Setenv("COSMOS_CONTAINER", "walkthrough")
	for i := range 2 {
		var out bytes.Buffer
		if err := run(t.Context(), &out); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		if !strings.Contains(out.String(), srv.Endpoint()+", auth: key") || !strings.Contains(out.String(), "container duroxide/walkthrough ready") {
			t.Errorf("run %d does not say where it ran:\n%s", i, out.String())
		}
		if i == 1 && strings.Contains(out.String(), "create_container") {
			t.Errorf("the second run created the container again:\n%s", out.String())
		}
	}
}
