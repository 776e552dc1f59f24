package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
)

// The server accepts both keys (to provision, as an operator would) and
// emulator-style Entra ID tokens, and refuses control-plane writes made
// with a token, as Cosmos DB does.
func newServer(t *testing.T) *cosmostest.Server {
	return cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
}

func provision(t *testing.T, s *cosmostest.Server, db, container string) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Client().CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := s.Client().NewDatabase(db)
	policy := cdb.IndexingPolicy()
	_, err := d.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{cdb.PartitionKeyPath}, Version: 2},
		IndexingPolicy:         &policy,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestProvisionedContainer(t *testing.T) {
	for _, skip := range []bool{false, true} {
		s := newServer(t)
		provision(t, s, "app", "orchestrations")
		var out bytes.Buffer
		err := run(ctx(t), &out, settings{Endpoint: s.Endpoint(), Database: "app", Container: "orchestrations", SkipBootstrap: skip}, s.TokenCredential())
		if err != nil {
			t.Fatalf("skip=%v: %v\n%s", skip, err, out.String())
		}
		for _, want := range []string{"container app/orchestrations", `status Completed, output "Hello, world!"`, "read 4 events", "total"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("skip=%v: output lacks %q:\n%s", skip, want, out.String())
			}
		}
		if skip && strings.Contains(out.String(), "read_container") {
			t.Errorf("SkipBootstrap still read the container:\n%s", out.String())
		}
	}
}

func TestMissingContainerExplains(t *testing.T) {
	s := newServer(t)
	var out bytes.Buffer
	err := run(ctx(t), &out, settings{Endpoint: s.Endpoint()}, s.TokenCredential())
	if !errors.Is(err, cdb.ErrBootstrap) {
		t.Fatalf("run = %v, want cdb.ErrBootstrap", err)
	}
	for _, want := range []string{"5300", "cannot create databases or containers", "--partition-key-path /instanceId"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// With the check skipped, the first operation finds the container missing.
	err = run(ctx(t), &out, settings{Endpoint: s.Endpoint(), SkipBootstrap: true}, s.TokenCredential())
	if err == nil || !strings.Contains(err.Error(), "cannot create databases or containers") {
		t.Fatalf("run with SkipBootstrap = %v, want the provisioning hint", err)
	}
}

func TestSettings(t *testing.T) {
	env := map[string]string{
		"COSMOS_ENDPOINT": "https://acct.documents.azure.com:443/", "COSMOS_AUDIENCE": "https://cosmos.azure.com",
		"AZURE_CLIENT_ID": "11111111-2222-3333-4444-555555555555", "COSMOS_SKIP_BOOTSTRAP": "true",
	}
	s, err := settingsFromEnv(func(k string) string { return env[k] })
	if err != nil || !s.SkipBootstrap || s.Audience != "https://cosmos.azure.com" || s.ClientID == "" {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	if _, how, err := credential(s); err != nil || !strings.Contains(how, "client id 11111111") {
		t.Fatalf("credential: %q, %v", how, err)
	}
	env["AZURE_FEDERATED_TOKEN_FILE"] = "/var/run/secrets/azure/tokens/azure-identity-token"
	s, _ = settingsFromEnv(func(k string) string { return env[k] })
	t.Setenv("AZURE_TENANT_ID", "00000000-0000-0000-0000-000000000001")
	if _, how, err := credential(s); err != nil || how != "WorkloadIdentityCredential" {
		t.Fatalf("credential with a token file: %q, %v", how, err)
	}

	env["COSMOS_SKIP_BOOTSTRAP"] = "maybe"
	if _, err := settingsFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("COSMOS_SKIP_BOOTSTRAP=maybe accepted")
	}

	var u bytes.Buffer
	usage(&u)
	if !strings.Contains(u.String(), "COSMOS_ENDPOINT") || !strings.Contains(u.String(), "Built-in Data Contributor") {
		t.Errorf("usage:\n%s", u.String())
	}
}

// failingCredential fails as ManagedIdentityCredential does off Azure.
type failingCredential struct{}

func (failingCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, noIdentity{}
}

// noIdentity is not retried by azcore, as azidentity's errors are not.
type noIdentity struct{}

func (noIdentity) Error() string {
	return "ManagedIdentityCredential: no response from the IMDS endpoint"
}
func (noIdentity) NonRetriable() {}

func TestNoIdentityExplains(t *testing.T) {
	s := newServer(t)
	err := run(ctx(t), &bytes.Buffer{}, settings{Endpoint: s.Endpoint()}, failingCredential{})
	if err == nil || !strings.Contains(err.Error(), "could not get a token") {
		t.Fatalf("run = %v, want the identity hint", err)
	}
}
