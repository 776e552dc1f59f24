package localcosmos

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// AuthMode selects which Authorization headers the server accepts.
type AuthMode int

const (
	// AuthKey accepts only master-key signatures (type=master), verified
	// exactly as the service does. This is the default.
	AuthKey AuthMode = iota
	// AuthToken accepts only Entra ID tokens (type=aad) of the kind the
	// Cosmos DB emulator accepts (see [Server.TokenCredential]); master-key
	// requests get 401 "Local Authorization is disabled", as on an account
	// with local auth disabled. Control-plane writes get 403 substatus 5300.
	AuthToken
	// AuthKeyOrToken accepts both. Token requests are still refused
	// control-plane writes.
	AuthKeyOrToken
)

// String returns the mode's name.
func (m AuthMode) String() string {
	switch m {
	case AuthKey:
		return "AuthKey"
	case AuthToken:
		return "AuthToken"
	case AuthKeyOrToken:
		return "AuthKeyOrToken"
	}
	return "AuthMode(" + strconv.Itoa(int(m)) + ")"
}

// EmulatorKey is the well-known master key of the Azure Cosmos DB emulator,
// the default key of a [Server].
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// emulatorKeyID is the JWT header kid the emulator accepts for self-signed tokens.
const emulatorKeyID = "CosmosEmulatorPrimaryMaster"

// maxClockSkew is how far x-ms-date may be from the server's wall clock.
const maxClockSkew = 15 * time.Minute

// tokenLifetime is the lifetime of tokens from [Server.TokenCredential].
const tokenLifetime = 2 * time.Hour

// authenticate checks the Authorization header of req. It reports whether
// the request was authorized with a token (rather than a master key).
func (s *Server) authenticate(req *request) (token bool, e *apiError) {
	h := req.r.Header.Get("Authorization")
	if h == "" {
		return false, newError(http.StatusUnauthorized, msgAuthMissing)
	}
	decoded := h
	if strings.Contains(h, "%") {
		d, err := url.QueryUnescape(h)
		if err != nil {
			return false, newError(http.StatusUnauthorized, "The input authorization token can't serve the request. Please check that the expected payload is built as per the protocol, and check the key being used.")
		}
		decoded = d
	}
	fields := map[string]string{}
	for _, part := range strings.Split(decoded, "&") {
		k, v, _ := strings.Cut(part, "=")
		fields[strings.ToLower(strings.TrimSpace(k))] = v
	}
	switch strings.ToLower(fields["type"]) {
	case "master":
		if s.opts.Auth == AuthToken {
			return false, newError(http.StatusUnauthorized, msgLocalAuthDisabled)
		}
		return false, s.verifyMasterKey(req, fields)
	case "aad":
		if s.opts.Auth == AuthKey {
			return true, newError(http.StatusUnauthorized, "Request blocked by Auth cosmostest : AAD tokens are not accepted by this server; it was started with cosmostest.AuthKey.")
		}
		return true, s.verifyToken(fields["sig"])
	default:
		return false, newError(http.StatusUnauthorized, "The input authorization token can't serve the request. The authorization type %q is not supported.", fields["type"])
	}
}

func (s *Server) verifyMasterKey(req *request, fields map[string]string) *apiError {
	date := req.r.Header.Get("x-ms-date")
	if date == "" {
		date = req.r.Header.Get("Date")
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return newError(http.StatusUnauthorized, msgDateInvalid)
	}
	payload := strings.ToLower(req.r.Method) + "\n" + strings.ToLower(req.resType) + "\n" + req.resLink + "\n" + strings.ToLower(date) + "\n" + "" + "\n"
	mac := hmac.New(sha256.New, s.keyBytes)
	mac.Write([]byte(payload))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if fields["ver"] != "1.0" || !hmac.Equal([]byte(want), []byte(fields["sig"])) {
		return newError(http.StatusUnauthorized,
			"The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-mac-signature. Server used the following payload to sign: '%s'", payload)
	}
	now := time.Now()
	if t.After(now.Add(maxClockSkew)) || t.Before(now.Add(-maxClockSkew)) {
		return newError(http.StatusForbidden,
			"The authorization token is not valid at the current time. Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			t.UTC().Format(http.TimeFormat), t.Add(maxClockSkew).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat))
	}
	return nil
}

func (s *Server) verifyToken(tok string) *apiError {
	invalid := func(why string) *apiError {
		return newError(http.StatusUnauthorized, "Request blocked by Auth cosmostest : The AAD token is invalid: %s. Learn more: https://aka.ms/cosmos-native-rbac.", why)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return invalid("not a JWT")
	}
	var header struct {
		Kid string `json:"kid"`
		Alg string `json:"alg"`
	}
	if err := decodeJWTPart(parts[0], &header); err != nil {
		return invalid("malformed header")
	}
	if header.Kid != emulatorKeyID {
		return invalid("unknown signing key")
	}
	var claims struct {
		Exp *float64 `json:"exp"`
		Nbf *float64 `json:"nbf"`
	}
	if err := decodeJWTPart(parts[1], &claims); err != nil {
		return invalid("malformed payload")
	}
	if strings.TrimRight(parts[2], "=") != base64.RawURLEncoding.EncodeToString([]byte(s.key)) {
		return invalid("signature verification failed")
	}
	now := time.Now()
	if claims.Exp == nil {
		return invalid("no expiry")
	}
	if exp := time.Unix(int64(*claims.Exp), 0); !now.Before(exp) {
		return newError(http.StatusUnauthorized, "Request blocked by Auth cosmostest : The AAD token has expired (expiry %s, current server time %s). Learn more: https://aka.ms/cosmos-native-rbac.",
			exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if claims.Nbf != nil && time.Unix(int64(*claims.Nbf), 0).After(now.Add(5*time.Minute)) {
		return invalid("token not yet valid")
	}
	return nil
}

func decodeJWTPart(p string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// isControlPlane reports whether an operation is one a data-plane Entra ID
// token may not perform.
func isControlPlane(op Op) bool {
	switch op {
	case OpCreateDatabase, OpDeleteDatabase, OpCreateContainer, OpReplaceContainer, OpDeleteContainer, OpReplaceOffer:
		return true
	}
	return false
}

// errControlPlane is the service's answer to a control-plane write with an
// Entra ID token.
func errControlPlane(r *http.Request) *apiError {
	return newSubError(http.StatusForbidden, subAADControlPlane,
		"Request blocked by Auth cosmostest : The given request [%s %s] cannot be authorized by AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac.",
		r.Method, r.URL.EscapedPath())
}

// TokenCredential returns a credential issuing emulator-style Entra ID
// tokens: self-signed JWTs with header kid "CosmosEmulatorPrimaryMaster",
// valid for two hours, like the emulatorTokenCredential of the azcosmos
// tests. A server in [AuthToken] or [AuthKeyOrToken] mode accepts them; use
// it with azcosmos.NewClient(s.Endpoint(), s.TokenCredential(), opts).
func (s *Server) TokenCredential() azcore.TokenCredential {
	return tokenCredential{key: s.key}
}

type tokenCredential struct{ key string }

// GetToken implements azcore.TokenCredential.
func (c tokenCredential) GetToken(_ context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	now := time.Now()
	exp := now.Add(tokenLifetime)
	return azcore.AccessToken{Token: emulatorToken(c.key, now, exp), ExpiresOn: exp}, nil
}

// emulatorToken builds a token like the emulator's self-signed ones.
func emulatorToken(key string, nbf, exp time.Time) string {
	header := `{"typ":"JWT","alg":"RS256","x5t":"` + emulatorKeyID + `","kid":"` + emulatorKeyID + `"}`
	payload := fmt.Sprintf(`{"appid":"localhost","aio":"","appidacr":"1","idp":"https://localhost:8081/","oid":"96313034-4739-43cb-93cd-74193adbe5b6","rh":"","sub":"localhost","tid":"EmulatorFederation","uti":"","ver":"1.0","scp":"user_impersonation","groups":[],"nbf":%d,"exp":%d,"iat":%d,"iss":"https://sts.fake-issuer.net/7b1999a1-dfd7-440e-8204-00170979b984","aud":"https://localhost.localhost"}`,
		nbf.Unix(), exp.Unix(), nbf.Unix())
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString([]byte(key))
}
