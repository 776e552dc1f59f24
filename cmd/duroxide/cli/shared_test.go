package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/embedded"
)

// The stock command opens the store embedded.Open opens; while a service
// runs on the in-process store (its data directory locked), the command
// joins the store that service serves: it lists and shows what the
// service wrote, and an event it raises reaches the service's instance.
func TestCommandWorksOnARunningServicesStore(t *testing.T) {
	for _, k := range []string{"COSMOS_ENDPOINT", "COSMOS_KEY", "COSMOS_CONNECTION_STRING", "COSMOS_DATABASE", "COSMOS_CONTAINER", embedded.EnvRequireAccount} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv(embedded.EnvDataDir, dir)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The service: the store is its, and it runs an instance that waits.
	svc, err := embedded.Open(ctx, &embedded.Options{Log: &bytes.Buffer{}})
	must(t, err)
	defer svc.Close()
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Approval", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		by, err := durable.WaitEvent[string](ctx, "approve").Await()
		return in + " approved by " + by, err
	}))
	rt, err := durable.Start(ctx, svc.Provider, reg, nil)
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.WithoutCancel(ctx))) }()
	c := durable.NewClient(svc.Provider)
	must(t, c.StartOrchestration(ctx, "deploy-7", "Approval", "deploy v7"))
	if _, err := c.WaitForOrchestration(ctx, "deploy-7", durable.WaitOptions{Timeout: 100 * time.Millisecond}); err == nil {
		t.Fatal("the instance must wait for its event")
	}

	command := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		cmd := cli.Command{Stdout: &out, Stderr: &errOut, Open: cli.OpenEmbedded(&errOut)}
		return cmd.Run(ctx, args), out.String(), errOut.String()
	}
	code, out, errOut := command("list")
	if code != cli.ExitOK || !strings.Contains(out, "deploy-7") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "serves from "+dir) {
		t.Errorf("the command does not say it joined the running service's store:\n%s", errOut)
	}
	if code, out, errOut := command("raise", "deploy-7", "approve", "alice"); code != cli.ExitOK {
		t.Fatalf("raise: exit %d\n%s\n%s", code, out, errOut)
	}
	st, err := c.WaitForOrchestration(ctx, "deploy-7", durable.WaitOptions{Timeout: 30 * time.Second})
	must(t, err)
	if st.State != durable.StateCompleted || !strings.Contains(st.Output, "approved by alice") {
		t.Fatalf("the service's instance after the command's raise: %s %q", st.State, st.Output)
	}
	if code, out, errOut := command("show", "deploy-7"); code != cli.ExitOK || !strings.Contains(out, "approved by alice") {
		t.Fatalf("show: exit %d\n%s\n%s", code, out, errOut)
	}
}
