package cdb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
)

// Secrets (account keys, tokens, connection strings) fed through every
// error path — a wrong key, a malformed key, bad connection strings, an
// expired or forged token, failing and throttled requests during a run —
// appear in no log record (provider and runtime, debug level), no error
// string and no span (names, attributes, events, statuses).
func TestSecretsNeverReachLogsErrorsOrSpans(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
	key := srv.Key()
	wrongKey := "c2VjcmV0LXdyb25nLWtleS10aGF0LW11c3Qtbm90LWxlYWstYW55d2hlcmUh"
	malformed := "not-base64!!secret-malformed-key"
	forged := "type=aad&ver=1.0&sig=secret-forged-token-value"
	secrets := []string{key, key[:16], wrongKey, malformed, "secret-malformed", forged, "secret-forged-token"}

	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spans := &recordingTracerProvider{}
	opts := cdb.Options{Logger: logger, TracerProvider: spans, MaintenanceInterval: -1}
	var errs []error
	collect := func(cfg cdb.Config) {
		p, err := cdb.New(t.Context(), cfg, &opts)
		if err == nil {
			_ = p.Close()
			t.Fatalf("config %+v was accepted", cfg.Endpoint)
		}
		errs = append(errs, err)
	}
	base := func() cdb.Config {
		return cdb.Config{Endpoint: srv.Endpoint(), Database: "secrets", Container: "c",
			ClientOptions: noRetries()}
	}

	c := base()
	c.Key = wrongKey
	collect(c)
	c = base()
	c.Key = malformed
	collect(c)
	c = base()
	c.Endpoint, c.ConnectionString = "", "AccountEndpoint="+srv.Endpoint()+";AccountKey="+malformed+";"
	collect(c)
	c = base()
	c.Endpoint, c.ConnectionString = "", "AccountEndpoint=ftp://nowhere;AccountKey="+key+";"
	collect(c)
	c = base()
	c.Endpoint, c.ConnectionString = "", "AccountKey="+key
	collect(c)
	// The connection string (or the key) where the endpoint goes: the
	// portal's connection string in COSMOS_ENDPOINT is a common mistake.
	connStr := "AccountEndpoint=" + srv.Endpoint() + ";AccountKey=" + key + ";"
	c = base()
	c.Endpoint, c.Key = connStr, key
	collect(c)
	c = base()
	c.Endpoint, c.ConnectionString = connStr, connStr
	collect(c)
	c = base()
	c.Endpoint, c.Key = key, key
	collect(c)
	c = base()
	c.Credential = staticToken{token: forged, expires: time.Now().Add(-time.Hour)}
	collect(c)
	c = base()
	c.Credential = staticToken{token: forged, expires: time.Now().Add(time.Hour)}
	collect(c)

	// A run with failing and throttled requests, logged at debug level.
	c = base()
	c.Key = key
	p, err := cdb.New(t.Context(), c, &opts)
	require.NoError(t, err)
	defer p.Close()
	failing := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, Times: 3})
	defer failing()
	throttled := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpQuery, Status: http.StatusTooManyRequests, Times: 3})
	defer throttled()
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterActivity(reg, "Fail", func(durable.ActivityContext, string) (string, error) {
		return "", errors.New("activity failed on purpose")
	}))
	require.NoError(t, durable.RegisterOrchestration(reg, "Secrets", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.TraceInfo("orchestration running")
		return durable.CallActivity[string](ctx, "Fail", in).Await()
	}))
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{Logger: logger, TracerProvider: spans})
	require.NoError(t, err)
	client := durable.NewClient(p, durable.ClientOptions{TracerProvider: spans})
	require.NoError(t, client.StartOrchestration(t.Context(), "secrets-1", "Secrets", "x"))
	st, err := client.WaitForOrchestration(t.Context(), "secrets-1", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateFailed, st.State)
	require.NoError(t, rt.Shutdown(t.Context()))
	_, err = client.WaitForOrchestration(t.Context(), "missing", durable.WaitOptions{Timeout: time.Millisecond})
	errs = append(errs, err)

	require.NotEmpty(t, logs.String(), "the error paths were logged")
	require.NotEmpty(t, spans.String(), "the error paths were traced")
	for _, s := range secrets {
		require.NotContains(t, logs.String(), s, "a secret reached the logs")
		require.NotContains(t, spans.String(), s, "a secret reached a span")
		for _, err := range errs {
			require.NotContains(t, err.Error(), s, "a secret reached an error string")
		}
	}
}

// noRetries keeps the failing configurations fast.
func noRetries() *azcosmos.ClientOptions {
	o := &azcosmos.ClientOptions{}
	o.Retry = policy.RetryOptions{MaxRetries: -1}
	return o
}

// staticToken is a credential that returns token as is (expired or
// forged, for the error paths).
type staticToken struct {
	token   string
	expires time.Time
}

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: s.token, ExpiresOn: s.expires}, nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent log writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recordingTracerProvider is a minimal in-memory TracerProvider built on
// the OpenTelemetry API alone (the SDK stays out of the library's
// go.mod): it writes every span's name, attributes, events, errors and
// status to one text, for grepping.
type recordingTracerProvider struct {
	embedded.TracerProvider
	lockedBuffer
}

func (p *recordingTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{p: p}
}

type recordingTracer struct {
	embedded.Tracer
	p *recordingTracerProvider
}

func (t recordingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	fmt.Fprintf(t.p, "span %s %v\n", name, cfg.Attributes())
	s := &recordingSpan{p: t.p}
	return trace.ContextWithSpan(ctx, s), s
}

type recordingSpan struct {
	noop.Span
	p *recordingTracerProvider
}

func (s *recordingSpan) IsRecording() bool { return true }
func (s *recordingSpan) SetAttributes(kv ...attribute.KeyValue) {
	fmt.Fprintf(s.p, "  attrs %v\n", kv)
}
func (s *recordingSpan) AddEvent(name string, o ...trace.EventOption) {
	cfg := trace.NewEventConfig(o...)
	fmt.Fprintf(s.p, "  event %s %v\n", name, cfg.Attributes())
}
func (s *recordingSpan) RecordError(err error, _ ...trace.EventOption) {
	fmt.Fprintf(s.p, "  error %v\n", err)
}
func (s *recordingSpan) SetStatus(c codes.Code, d string) { fmt.Fprintf(s.p, "  status %v %s\n", c, d) }
func (s *recordingSpan) SetName(n string)                 { fmt.Fprintf(s.p, "  name %s\n", n) }
