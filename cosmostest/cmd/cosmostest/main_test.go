package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"
)

// started is a running command: what it printed, and how to stop it.
type started struct {
	env  map[string]string
	stop func() error
}

// start runs the command in-process on free ports and reads its banner.
func start(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0"}, args...), pw, io.Discard)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	env := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(env) < 3 && sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		require.True(t, ok, "banner line %q", sc.Text())
		env[k] = v
	}
	require.NoError(t, sc.Err())
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var stopped bool
	var stopErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-done
		}
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return &started{env: env, stop: stop}
}

func (s *started) control(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimRight(s.env["COSMOSTEST_CONTROL"], "/")+path, rd)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func (s *started) addFault(t *testing.T, spec map[string]any) uint64 {
	t.Helper()
	code, body := s.control(t, http.MethodPost, "/faults", spec)
	require.Equal(t, http.StatusCreated, code, string(body))
	var res struct{ ID uint64 }
	require.NoError(t, json.Unmarshal(body, &res))
	return res.ID
}

func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func TestServeAndControl(t *testing.T) {
	s := start(t)
	endpoint, key := s.env["COSMOS_ENDPOINT"], s.env["COSMOS_KEY"]
	require.True(t, strings.HasPrefix(endpoint, "http://127.0.0.1:"), endpoint)
	require.NotEmpty(t, key)
	require.True(t, strings.HasPrefix(s.env["COSMOSTEST_CONTROL"], "http://127.0.0.1:"))

	// A client that shows every fault as it is (no SDK retries).
	cred, err := azcosmos.NewKeyCredential(key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	defer client.Close()
	ctx := t.Context()
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("c")
	require.NoError(t, err)
	pk := azcosmos.NewPartitionKeyString("p")
	create := func(id string) error {
		_, err := c.CreateItem(ctx, pk, []byte(fmt.Sprintf(`{"id":%q,"pk":"p"}`, id)), nil)
		return err
	}
	exists := func(id string) bool {
		_, err := c.ReadItem(ctx, pk, id, nil)
		if statusOf(err) == http.StatusNotFound {
			return false
		}
		require.NoError(t, err)
		return true
	}
	require.NoError(t, create("plain"))

	// 503 on writes, once: refused and not applied.
	s.addFault(t, map[string]any{"writesOnly": true, "status": 503, "times": 1})
	require.Equal(t, http.StatusServiceUnavailable, statusOf(create("refused")))
	require.False(t, exists("refused"))
	require.NoError(t, create("after-503"))

	// Applied, then answered with an error: the write took effect.
	s.addFault(t, map[string]any{"op": "CreateItem", "status": 408, "applyFirst": true, "times": 1})
	require.Equal(t, http.StatusRequestTimeout, statusOf(create("ambiguous")))
	require.True(t, exists("ambiguous"))

	// Dropped connections, after and before the write is applied.
	s.addFault(t, map[string]any{"writesOnly": true, "drop": "after", "times": 1})
	err = create("dropped-after")
	require.Error(t, err)
	require.Zero(t, statusOf(err), "a transport error, not a status: %v", err)
	require.True(t, exists("dropped-after"))
	s.addFault(t, map[string]any{"writesOnly": true, "drop": "before", "times": 1})
	require.Error(t, create("dropped-before"))
	require.False(t, exists("dropped-before"))

	// A standing write fault leaves reads alone, is listed, and goes away
	// when removed.
	id := s.addFault(t, map[string]any{"writesOnly": true, "status": 503})
	require.True(t, exists("plain"))
	require.Equal(t, http.StatusServiceUnavailable, statusOf(create("blocked")))
	code, body := s.control(t, http.MethodGet, "/faults", nil)
	require.Equal(t, http.StatusOK, code)
	var listed []struct {
		ID   uint64
		Left int
	}
	require.NoError(t, json.Unmarshal(body, &listed))
	require.Equal(t, []struct {
		ID   uint64
		Left int
	}{{id, -1}}, listed, "the used-up faults are gone, the standing one is unlimited")
	code, _ = s.control(t, http.MethodDelete, fmt.Sprintf("/faults/%d", id), nil)
	require.Equal(t, http.StatusNoContent, code)
	require.NoError(t, create("unblocked"))
	code, _ = s.control(t, http.MethodDelete, fmt.Sprintf("/faults/%d", id), nil)
	require.Equal(t, http.StatusNotFound, code)

	// A throttling storm ends by itself.
	s.addFault(t, map[string]any{"status": 429, "durationMs": 100, "headers": map[string]string{"x-ms-retry-after-ms": "5"}})
	_, err = c.ReadItem(ctx, pk, "plain", nil)
	require.Equal(t, http.StatusTooManyRequests, statusOf(err))
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err = c.ReadItem(ctx, pk, "plain", nil); err == nil {
			break
		}
		require.Equal(t, http.StatusTooManyRequests, statusOf(err))
		require.True(t, time.Now().Before(deadline), "the storm did not end")
		time.Sleep(20 * time.Millisecond)
	}

	// Added latency delays every request by at least its minimum.
	code, body = s.control(t, http.MethodPut, "/latency", map[string]any{"minMs": 40, "maxMs": 60})
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, `{"minMs":40,"maxMs":60}`, string(body))
	began := time.Now()
	require.True(t, exists("plain"))
	require.GreaterOrEqual(t, time.Since(began), 40*time.Millisecond)
	code, _ = s.control(t, http.MethodPut, "/latency", map[string]any{"minMs": 0, "maxMs": 0})
	require.Equal(t, http.StatusOK, code)

	// Bad requests are refused with a reason.
	for _, bad := range []map[string]any{
		{"op": "NoSuchOp", "status": 503},
		{"status": 200},
		{"writesOnly": true},
		{"status": 503, "drop": "after"},
		{"applyFirst": true, "drop": "after"},
		{"status": 503, "probability": 2},
		{"status": 503, "typo": true},
	} {
		code, body := s.control(t, http.MethodPost, "/faults", bad)
		require.Equal(t, http.StatusBadRequest, code, "%v", bad)
		require.Contains(t, string(body), `"error"`)
	}

	code, body = s.control(t, http.MethodGet, "/stats", nil)
	require.Equal(t, http.StatusOK, code)
	var stats map[string]int
	require.NoError(t, json.Unmarshal(body, &stats))
	require.Positive(t, stats["CreateItem"])

	// Interrupting stops both endpoints.
	require.NoError(t, s.stop())
	for _, u := range []string{endpoint, s.env["COSMOSTEST_CONTROL"]} {
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		_, err = net.DialTimeout("tcp", parsed.Host, time.Second)
		require.Error(t, err, "%s still accepts connections", u)
	}
}

func TestBadFlags(t *testing.T) {
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0", "-key", "not base64!"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "base64")
	err = run(t.Context(), []string{"stray"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "unexpected arguments")
}

// The command, and so package cosmostest, must not link package testing.
func TestNoTestingDependency(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/duroxide-go/cdb/cosmostest")
	require.False(t, slices.Contains(deps, "testing"), "the command links package testing")
}

func TestDataFlagKeepsAccountAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	write := func(s *started, id string) {
		cred, err := azcosmos.NewKeyCredential(s.env["COSMOS_KEY"])
		require.NoError(t, err)
		client, err := azcosmos.NewClientWithKey(s.env["COSMOS_ENDPOINT"], cred, nil)
		require.NoError(t, err)
		defer client.Close()
		if _, err := client.CreateDatabase(t.Context(), azcosmos.DatabaseProperties{ID: "db"}, nil); statusOf(err) != http.StatusConflict {
			require.NoError(t, err)
			db, _ := client.NewDatabase("db")
			_, err = db.CreateContainer(t.Context(), azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
			require.NoError(t, err)
		}
		c, _ := client.NewContainer("db", "c")
		pk := azcosmos.NewPartitionKeyString("p")
		_, err = c.CreateItem(t.Context(), pk, []byte(fmt.Sprintf(`{"id":%q,"pk":"p"}`, id)), nil)
		require.NoError(t, err)
		for _, want := range []string{"first", id} {
			_, err = c.ReadItem(t.Context(), pk, want, nil)
			require.NoError(t, err, "read %s", want)
		}
	}
	s := start(t, "-data", dir)
	write(s, "first")
	// A second process on the same directory is refused.
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0", "-data", dir}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "is in use by another process")
	require.NoError(t, s.stop())
	write(start(t, "-data", dir), "second")
}
