package payload_test

import (
	"context"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// A provider whose payloads are compressed, then encrypted: the runtime
// and the Client see plain payloads, the store holds envelopes.
func ExampleWrap() {
	ctx := context.Background()
	aes, err := payload.AESGCM(payload.Key{ID: "2026-12", Secret: make([]byte, 32)}) // your key, from a secret store
	if err != nil {
		panic(err)
	}
	store := memprovider.New()
	p, err := payload.Wrap(store, payload.Gzip(), aes)
	if err != nil {
		panic(err)
	}
	reg := durable.NewRegistry()
	if err := reg.AddOrchestration("Hello", func(_ *durable.OrchestrationContext, in string) (string, error) {
		return "hello " + in, nil
	}); err != nil {
		panic(err)
	}
	rt, err := durable.Start(ctx, p, reg, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(ctx)
	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "greet", "Hello", "world"); err != nil {
		panic(err)
	}
	st, err := c.WaitForOrchestration(ctx, "greet", durable.WaitOptions{})
	if err != nil {
		panic(err)
	}
	info, err := store.Admin().InstanceInfo(ctx, "greet")
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Output)
	fmt.Println(payload.IsEncoded(*info.Output))
	// Output:
	// hello world
	// true
}

// The codecs the CLI and the dashboard read through, from the
// environment an operator sets.
func ExampleCodecsFromEnv() {
	env := map[string]string{
		payload.EnvCodec:     "gzip,aesgcm",
		payload.EnvCodecKeys: "k2=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,k1=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
	}
	codecs, err := payload.CodecsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		panic(err)
	}
	for _, c := range codecs {
		fmt.Println(c.Name())
	}
	// Output:
	// gzip
	// aesgcm
}

// What an operator tool shows for a payload whose codec it was not
// given: a placeholder, never the ciphertext or an error.
func ExampleWrapForDisplay() {
	ctx := context.Background()
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		panic(err)
	}
	store := memprovider.New()
	p, err := payload.Wrap(store, aes)
	if err != nil {
		panic(err)
	}
	reg := durable.NewRegistry()
	if err := reg.AddOrchestration("Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }); err != nil {
		panic(err)
	}
	rt, err := durable.Start(ctx, p, reg, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(ctx)
	if err := durable.NewClient(p).StartOrchestration(ctx, "order-1", "Echo", "card 4242"); err != nil {
		panic(err)
	}
	if _, err := durable.NewClient(p).WaitForOrchestration(ctx, "order-1", durable.WaitOptions{}); err != nil {
		panic(err)
	}
	operator, err := payload.WrapForDisplay(store) // no codec configured
	if err != nil {
		panic(err)
	}
	st, err := durable.NewClient(operator).Status(ctx, "order-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(st.State, st.Output)
	// Output:
	// Completed <encoded payload (aesgcm): codec not configured: set DUROXIDE_CODEC>
}
