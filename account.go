package cdb

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// The account check at startup.
//
// New reads the account's properties (GET on the endpoint root) before
// anything else, for two reasons. azcosmos v1.5.0 has no API for it, and
// its own first request reads the account in the background of whatever
// call comes first, under its own retry schedule, which is why a New with a
// 2 s context could return after 8 s against a dead endpoint: our request
// honours ctx, fails fast and is classified like every other error (a
// refused connection is retryable). And the account's default consistency
// level decides whether the provider can be correct at all:
//
//   - Session (the default): read-your-writes through session tokens, which
//     the provider carries per partition (internal/cosmos/sessiontokens.go).
//   - Strong and Bounded Staleness: reads always see committed writes
//     (within the bound for Bounded Staleness, which the service keeps
//     above the session guarantee in the write region). They cost more: a
//     read is served by two replicas (a quorum), so reads cost twice the RU
//     of Session; Strong also adds cross-region write latency.
//   - Consistent Prefix and Eventual: no read-your-writes, even with session
//     tokens (the service ignores them at these levels). A fetch could load
//     a history that misses the previous turn and the runtime would commit
//     on top of it. New refuses them unless Config.AcceptWeakConsistency.

// Consistency levels as the account properties spell them.
const (
	consistencyStrong           = "Strong"
	consistencyBoundedStaleness = "BoundedStaleness"
	consistencySession          = "Session"
	consistencyConsistentPrefix = "ConsistentPrefix"
	consistencyEventual         = "Eventual"
)

// accountVersion is the REST API version sent on the account read.
const accountVersion = "2020-07-15"

// accountProps is the part of the account properties we use.
type accountProps struct {
	ConsistencyPolicy struct {
		DefaultConsistencyLevel string `json:"defaultConsistencyLevel"`
	} `json:"userConsistencyPolicy"`
}

// checkAccount reads the account and enforces the consistency rules above.
func checkAccount(ctx context.Context, s *cosmos.Store, cfg Config) error {
	var props accountProps
	err := s.Do(ctx, cosmos.Call{Op: OpReadAccount}, func(ctx context.Context) (cosmos.Result, error) {
		body, err := readAccount(ctx, cfg)
		if err == nil {
			err = json.Unmarshal(body, &props)
		}
		return cosmos.Result{Bytes: len(body)}, err
	})
	if err != nil {
		return fmt.Errorf("cdb: reading the account at %s: %w", SafeEndpoint(cfg.Endpoint), err)
	}
	return checkConsistency(props.ConsistencyPolicy.DefaultConsistencyLevel, cfg.AcceptWeakConsistency)
}

// ErrWeakConsistency is wrapped by the error New returns for an account
// whose default consistency cannot give read-your-writes.
var ErrWeakConsistency = fmt.Errorf("%w: the account's default consistency level cannot give read-your-writes", ErrConfig)

func checkConsistency(level string, accept bool) error {
	switch level {
	case consistencyConsistentPrefix, consistencyEventual:
		if accept {
			return nil
		}
		return fmt.Errorf("%w: it is %s. Under %s a read may be served by a replica that has not applied the provider's own latest write, even with a session token, "+
			"so a turn could load a history that misses the previous turn and commit on top of it (silent corruption no ETag catches). "+
			"Set the account's default consistency to Session (recommended), Bounded Staleness or Strong, "+
			"or set Config.AcceptWeakConsistency to accept that risk", ErrWeakConsistency, level, level)
	}
	return nil
}

// readAccount sends GET <endpoint>/ signed like azcosmos signs requests and
// returns the body; a failure is an *azcore.ResponseError or a transport
// error, like the SDK's.
func readAccount(ctx context.Context, cfg Config) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Endpoint, "/")+"/", nil)
	if err != nil {
		return nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", accountVersion)
	req.Header.Set("Accept", "application/json")
	auth, err := accountAuth(ctx, cfg, date)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", auth)
	transport, release := accountTransport(cfg)
	defer release()
	resp, err := transport.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		return nil, &azcore.ResponseError{StatusCode: resp.StatusCode, ErrorCode: http.StatusText(resp.StatusCode), RawResponse: resp}
	}
	return body, nil
}

// accountAuth is the Authorization header: a master-key signature over
// "get\n\n\n<date>\n\n" (empty resource type and link: the account), or an
// Entra ID token for the account's audience.
func accountAuth(ctx context.Context, cfg Config, date string) (string, error) {
	if cfg.Key != "" {
		key, err := base64.StdEncoding.DecodeString(cfg.Key)
		if err != nil {
			return "", configError("account key is not base64")
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("get\n\n\n" + strings.ToLower(date) + "\n\n"))
		sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
		return url.QueryEscape("type=master&ver=1.0&sig=" + sig), nil
	}
	scope := strings.TrimRight(cfg.Audience, "/")
	if scope == "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil {
			return "", configError("the endpoint is not a URL")
		}
		scope = u.Scheme + "://" + u.Hostname() // as azcosmos asks: no port
	}
	tok, err := cfg.Credential.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{scope + "/.default"}})
	if err != nil {
		return "", err
	}
	return url.QueryEscape("type=aad&ver=1.0&sig=" + tok.Token), nil
}

// accountTransport is the caller's transport when ClientOptions set one
// (tests, proxies), else a client like azcosmos' own. release closes the
// connections of a transport made here: it serves one request, and its
// idle keep-alive connection would otherwise hold a socket for the idle
// timeout after every New (a process opening many providers ran out of
// file descriptors).
func accountTransport(cfg Config) (transport policy.Transporter, release func()) {
	if cfg.ClientOptions != nil && cfg.ClientOptions.Transport != nil {
		return cfg.ClientOptions.Transport, func() {}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.InsecureSkipVerify {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // emulator only, see Config
	}
	return &http.Client{Transport: t}, t.CloseIdleConnections
}
