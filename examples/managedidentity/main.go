// Command managedidentity runs the walkthrough's orchestration against a
// Cosmos DB account, authenticating with Microsoft Entra ID as an Azure
// managed identity (App Service, Functions, Container Apps, VMs, AKS pod
// identity) or, when AZURE_FEDERATED_TOKEN_FILE is set, as an AKS workload
// identity. No key or connection string is involved.
//
// Start with main, which picks the credential from the environment.
//
//	COSMOS_ENDPOINT=https://myacct.documents.azure.com:443/ \
//	COSMOS_DATABASE=duroxide COSMOS_CONTAINER=duroxide \
//	AZURE_CLIENT_ID=<client id of a user-assigned identity; omit for system-assigned> \
//	go run ./examples/managedidentity
//
// Environment:
//
//	COSMOS_ENDPOINT             the account URL (required; without it the command explains and exits 2)
//	COSMOS_DATABASE             database name (default "duroxide")
//	COSMOS_CONTAINER            container name (default "duroxide")
//	COSMOS_AUDIENCE             token audience, e.g. https://cosmos.azure.com when the tenant refuses
//	                            the account-scoped one (AADSTS500011); optional
//	COSMOS_SKIP_BOOTSTRAP       "true" to skip even the startup check of the container
//	AZURE_CLIENT_ID             user-assigned managed identity (or the workload identity's app); optional
//	AZURE_FEDERATED_TOKEN_FILE  set by the AKS workload identity webhook; selects WorkloadIdentityCredential
//	                            (with AZURE_TENANT_ID and AZURE_CLIENT_ID, also set by the webhook)
//
// The identity needs the data-plane role "Cosmos DB Built-in Data
// Contributor" on the account:
//
//	az cosmosdb sql role assignment create -a ACCOUNT -g GROUP --scope / \
//	    --principal-id <identity's object id> --role-definition-id 00000000-0000-0000-0000-000000000002
//
// Entra ID cannot create databases or containers: Cosmos DB answers
// control-plane writes made with a data-plane token with 403 (substatus
// 5300), whatever roles the identity has. So the container must be
// provisioned beforehand — ARM/Bicep/Terraform, the Azure CLI, or the
// quickstart run once with a key — partitioned by /instanceId with the
// indexing policy in indexing.json (cdb.IndexingPolicy()):
//
//	az cosmosdb sql container create -a ACCOUNT -g GROUP -d duroxide -n duroxide \
//	    --partition-key-path /instanceId --idx @indexing.json
//
// At startup cdb.New then only reads the container's properties (which the
// data-plane roles allow) to check that it exists and is partitioned
// correctly; with COSMOS_SKIP_BOOTSTRAP=true it sends no startup request
// at all, and a missing container shows up at the first operation.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/examples/internal/walkthrough"
)

func main() {
	s, err := settingsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "managedidentity:", err)
		os.Exit(2)
	}
	if s.Endpoint == "" {
		usage(os.Stderr)
		os.Exit(2)
	}
	cred, how, err := credential(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "managedidentity: creating the credential:", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	fmt.Printf("account   %s, auth: %s\n", cdb.SafeEndpoint(s.Endpoint), how)
	if err := run(ctx, os.Stdout, s, cred); err != nil {
		fmt.Fprintln(os.Stderr, "managedidentity failed:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// settings is what the command reads from the environment.
type settings struct {
	Endpoint, Database, Container, Audience string
	ClientID                                string // AZURE_CLIENT_ID
	FederatedTokenFile                      string // AZURE_FEDERATED_TOKEN_FILE
	SkipBootstrap                           bool
}

func settingsFromEnv(getenv func(string) string) (settings, error) {
	s := settings{
		Endpoint:           getenv("COSMOS_ENDPOINT"),
		Database:           getenv("COSMOS_DATABASE"),
		Container:          getenv("COSMOS_CONTAINER"),
		Audience:           getenv("COSMOS_AUDIENCE"),
		ClientID:           getenv("AZURE_CLIENT_ID"),
		FederatedTokenFile: getenv("AZURE_FEDERATED_TOKEN_FILE"),
	}
	if v := getenv("COSMOS_SKIP_BOOTSTRAP"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("COSMOS_SKIP_BOOTSTRAP=%q is not a boolean", v)
		}
		s.SkipBootstrap = b
	}
	return s, nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, `managedidentity runs one orchestration against a Cosmos DB account with a
managed identity (or an AKS workload identity). It needs:

  COSMOS_ENDPOINT             https://<account>.documents.azure.com:443/   (not set)
  COSMOS_DATABASE             database (default "duroxide")
  COSMOS_CONTAINER            container, provisioned beforehand with partition key /instanceId
                              (default "duroxide"); Entra ID cannot create containers
  COSMOS_AUDIENCE             optional token audience, e.g. https://cosmos.azure.com
  COSMOS_SKIP_BOOTSTRAP       "true" to skip the startup container check
  AZURE_CLIENT_ID             optional: a user-assigned identity's client id
  AZURE_FEDERATED_TOKEN_FILE  set on AKS by the workload identity webhook

and the identity needs the "Cosmos DB Built-in Data Contributor" role on the
account. To try the provider without an account: go run ./examples/quickstart
`)
}

// credential picks the Entra ID credential: WorkloadIdentityCredential
// when the AKS webhook has projected a token file, else
// ManagedIdentityCredential (user-assigned with AZURE_CLIENT_ID, else the
// system-assigned identity). It returns a description for the output.
func credential(s settings) (azcore.TokenCredential, string, error) {
	if s.FederatedTokenFile != "" {
		// Tenant, client id and token file default to the AZURE_* variables.
		cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientID: s.ClientID, TokenFilePath: s.FederatedTokenFile,
		})
		return cred, "WorkloadIdentityCredential", err
	}
	var opts azidentity.ManagedIdentityCredentialOptions
	how := "ManagedIdentityCredential (system-assigned)"
	if s.ClientID != "" {
		opts.ID = azidentity.ClientID(s.ClientID)
		how = "ManagedIdentityCredential (client id " + s.ClientID + ")"
	}
	cred, err := azidentity.NewManagedIdentityCredential(&opts)
	return cred, how, err
}

// run connects with cred and runs the walk-through; main_test.go runs it
// against cosmostest with the server's token credential.
func run(ctx context.Context, w io.Writer, s settings, cred azcore.TokenCredential) error {
	cfg := cdb.Config{
		Endpoint:      s.Endpoint,
		Credential:    cred,
		Audience:      s.Audience,
		Database:      s.Database,
		Container:     s.Container,
		SkipBootstrap: s.SkipBootstrap,
	}
	db, container := or(s.Database, cdb.DefaultDatabase), or(s.Container, cdb.DefaultContainer)

	// Without SkipBootstrap, cdb.New reads the container: one metadata
	// request that Entra ID principals may send. If the container is
	// missing it then tries to create it, which Cosmos DB refuses to any
	// Entra ID token (403/5300): the error says so and how to provision it.
	p, err := cdb.New(ctx, cfg, nil)
	if err != nil {
		return explain(fmt.Errorf("connecting: %w", err), db, container)
	}
	defer p.Close()
	check := "checked"
	if s.SkipBootstrap {
		check = "not checked (COSMOS_SKIP_BOOTSTRAP)"
	}
	fmt.Fprintf(w, "provider  %s %s, container %s/%s %s  [%s]\n",
		p.Name(), p.Version(), db, container, check, walkthrough.Delta(nil, p.RequestStats()))

	instance := walkthrough.NewInstanceID("managedidentity")
	if err := walkthrough.Run(ctx, p, w, instance); err != nil {
		// With the check skipped, a missing container surfaces here.
		return explain(err, db, container)
	}
	fmt.Fprintln(w, "requests  sent by this provider (p.RequestStats()):")
	walkthrough.PrintStats(w, p.RequestStats())
	return nil
}

// explain adds what to do to the failures this command typically meets:
// no identity to get a token from, and a container that does not exist
// (which Entra ID cannot create: 403 substatus 5300 from the bootstrap,
// or 404 at the first operation with COSMOS_SKIP_BOOTSTRAP).
func explain(err error, db, container string) error {
	var ce *cdb.RequestError
	var authErr *azidentity.AuthenticationFailedError
	switch {
	case errors.As(err, &authErr) || strings.Contains(err.Error(), "IdentityCredential"):
		return fmt.Errorf("%w\n\n%s", err, `The identity could not get a token. Run this on an Azure resource with a managed
identity (set AZURE_CLIENT_ID for a user-assigned one), or on AKS with workload
identity. On a developer machine use the quickstart instead, whose
DefaultAzureCredential picks up "az login":
  COSMOS_ENDPOINT=... go run ./examples/quickstart`)
	case errors.As(err, &ce) && (ce.StatusCode == http.StatusNotFound || ce.StatusCode == http.StatusForbidden && ce.SubStatus == 5300):
		return fmt.Errorf("%w\n\n%s", err, provisionHint(db, container))
	}
	return err
}

// provisionHint says how to create the container outside the provider.
func provisionHint(db, container string) string {
	return fmt.Sprintf(`Entra ID identities cannot create databases or containers. Provision the container
once with ARM/Bicep/Terraform, the Azure CLI or a key (e.g. go run ./examples/quickstart with COSMOS_KEY):

  az cosmosdb sql database create -a ACCOUNT -g GROUP -n %[1]s
  az cosmosdb sql container create -a ACCOUNT -g GROUP -d %[1]s -n %[2]s \
      --partition-key-path %[3]s --idx @indexing.json

and give the identity the data-plane role "Cosmos DB Built-in Data Contributor"
(role definition 00000000-0000-0000-0000-000000000002).`, db, container, cdb.PartitionKeyPath)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
