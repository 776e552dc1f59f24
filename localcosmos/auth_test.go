package localcosmos

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestAuthWrongKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	other := base64.StdEncoding.EncodeToString([]byte("some other key of sufficient length!"))
	cred, err := azcosmos.NewKeyCredential(other)
	wantOK(t, err, "credential")
	c, err := azcosmos.NewClientWithKey(f.s.Endpoint(), cred, noRetryOptions())
	wantOK(t, err, "client")
	defer c.Close()
	ct, _ := c.NewContainer(testDB, testColl)
	_, err = ct.ReadItem(testCtx(t), pkOf("i"), "x", nil)
	wantStatus(t, err, http.StatusUnauthorized, "wrong key")
	var re *azcore.ResponseError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "Unauthorized") || !strings.Contains(err.Error(), "Server used the following payload to sign") {
		t.Fatalf("wrong key error: %v", err)
	}
}

func TestAuthRawRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`}

	req := signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, hdr)
	if st, _, _ := do(t, req); st != http.StatusOK {
		t.Fatalf("signed read: %d", st)
	}

	req = signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, hdr)
	req.Header.Del("Authorization")
	if st, _, body := do(t, req); st != http.StatusUnauthorized || body["code"] != "Unauthorized" {
		t.Fatalf("no authorization: %d %v", st, body)
	}

	// A signature over another resource link is refused.
	req = signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, hdr)
	req.Header.Set("Authorization", masterAuth(f.s.Key(), "GET", "docs", "dbs/db/colls/items/docs/b", req.Header.Get("x-ms-date")))
	if st, _, _ := do(t, req); st != http.StatusUnauthorized {
		t.Fatalf("signature for another link: %d", st)
	}

	// x-ms-date more than 15 minutes off: 403, like the service.
	old := time.Now().Add(-20 * time.Minute).UTC().Format(http.TimeFormat)
	req = signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`, "x-ms-date": old})
	if st, _, body := do(t, req); st != http.StatusForbidden || !strings.Contains(body["message"].(string), "not valid at the current time") {
		t.Fatalf("old date: %d %v", st, body)
	}
	req = signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`, "x-ms-date": "yesterday"})
	if st, _, _ := do(t, req); st != http.StatusUnauthorized {
		t.Fatalf("bad date: %d", st)
	}
}

func TestAuthTokenMode(t *testing.T) {
	t.Parallel()
	s := startServer(t, &Options{Auth: AuthToken})
	ctx := testCtx(t)

	// Control-plane writes with a token: 403/5300; key auth is disabled.
	tc := s.Client()
	_, err := tc.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: testDB}, nil)
	wantStatus(t, err, http.StatusForbidden, "create database with token")
	if substatus(err) != "5300" || !strings.Contains(err.Error(), "cannot be authorized by AAD token in data plane") ||
		!strings.Contains(err.Error(), "[POST /dbs]") {
		t.Fatalf("create database with token: substatus %q, %v", substatus(err), err)
	}
	cred, _ := azcosmos.NewKeyCredential(s.Key())
	kc, err := azcosmos.NewClientWithKey(s.Endpoint(), cred, noRetryOptions())
	wantOK(t, err, "key client")
	defer kc.Close()
	_, err = kc.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: testDB}, nil)
	wantStatus(t, err, http.StatusUnauthorized, "key auth on a token-only server")
	if !strings.Contains(err.Error(), "Local Authorization is disabled") {
		t.Fatalf("key auth on a token-only server: %v", err)
	}
}

func TestAuthKeyOrToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{Auth: AuthKeyOrToken})
	ctx := testCtx(t)
	tc, err := azcosmos.NewClient(f.s.Endpoint(), f.s.TokenCredential(), noRetryOptions())
	wantOK(t, err, "token client")
	defer tc.Close()

	// Data plane and metadata reads work with a token.
	ct, _ := tc.NewContainer(testDB, testColl)
	_, err = ct.CreateItem(ctx, pkOf("i1"), item("a", "i1"), nil)
	wantOK(t, err, "create item with token")
	_, err = ct.ReadItem(ctx, pkOf("i1"), "a", nil)
	wantOK(t, err, "read item with token")
	_, err = ct.Read(ctx, nil)
	wantOK(t, err, "read container with token")
	db, _ := tc.NewDatabase(testDB)
	_, err = db.Read(ctx, nil)
	wantOK(t, err, "read database with token")

	// Control-plane writes do not.
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c2", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/p"}}}, nil)
	wantStatus(t, err, http.StatusForbidden, "create container with token")
	_, err = ct.Delete(ctx, nil)
	wantStatus(t, err, http.StatusForbidden, "delete container with token")
	_, err = db.Delete(ctx, nil)
	wantStatus(t, err, http.StatusForbidden, "delete database with token")
	if substatus(err) != "5300" {
		t.Fatalf("delete database with token: substatus %q", substatus(err))
	}
	// The key client still can.
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c2", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/p"}}}, nil)
	wantOK(t, err, "create container with key")
}

// staticToken is a credential returning a fixed token.
type staticToken string

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestAuthTokenRejected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{Auth: AuthKeyOrToken})
	now := time.Now()
	enc := base64.RawURLEncoding
	good := emulatorToken(f.s.Key(), now, now.Add(time.Hour))
	parts := strings.Split(good, ".")
	cases := map[string]string{
		"garbled":       "not-a-jwt",
		"expired":       emulatorToken(f.s.Key(), now.Add(-3*time.Hour), now.Add(-time.Hour)),
		"wrong-kid":     enc.EncodeToString([]byte(`{"typ":"JWT","alg":"RS256","kid":"someone-else"}`)) + "." + parts[1] + "." + parts[2],
		"wrong-sig":     parts[0] + "." + parts[1] + "." + enc.EncodeToString([]byte("other")),
		"bad-payload":   parts[0] + "." + enc.EncodeToString([]byte("{")) + "." + parts[2],
		"no-expiry":     parts[0] + "." + enc.EncodeToString([]byte(`{"nbf":1}`)) + "." + parts[2],
		"not-yet-valid": emulatorToken(f.s.Key(), now.Add(time.Hour), now.Add(2*time.Hour)),
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := azcosmos.NewClient(f.s.Endpoint(), staticToken(tok), noRetryOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ct, _ := c.NewContainer(testDB, testColl)
			_, err = ct.ReadItem(testCtx(t), pkOf("i"), "x", nil)
			wantStatus(t, err, http.StatusUnauthorized, name)
		})
	}
	t.Run("good", func(t *testing.T) {
		c, _ := azcosmos.NewClient(f.s.Endpoint(), staticToken(good), noRetryOptions())
		defer c.Close()
		ct, _ := c.NewContainer(testDB, testColl)
		_, err := ct.ReadItem(testCtx(t), pkOf("i"), "x", nil)
		wantStatus(t, err, http.StatusNotFound, "good token")
	})
}

func TestAuthKeyModeRejectsTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c, _ := azcosmos.NewClient(f.s.Endpoint(), f.s.TokenCredential(), noRetryOptions())
	defer c.Close()
	ct, _ := c.NewContainer(testDB, testColl)
	_, err := ct.ReadItem(testCtx(t), pkOf("i"), "x", nil)
	wantStatus(t, err, http.StatusUnauthorized, "token on a key-only server")
}

func TestCustomKey(t *testing.T) {
	t.Parallel()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
	f := newFixture(t, &Options{Key: key})
	if f.s.Key() != key {
		t.Fatal("Key() does not return the configured key")
	}
	f.create(t, "a", "i1")
	if _, err := NewServer(&Options{Key: "not base64!"}); err == nil {
		t.Fatal("NewServer accepted a key that is not base64")
	}
}
