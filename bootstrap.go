package cdb

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// indexingPolicyJSON is the container's indexing policy; docs/design.md
// explains every path in it.
//
//go:embed indexing.json
var indexingPolicyJSON []byte

// PartitionKeyPath is the container's partition key: every document of an
// instance lives in that instance's logical partition.
const PartitionKeyPath = "/instanceId"

// IndexingPolicy returns the indexing policy the provider's queries need,
// for provisioning the container with your own tooling.
func IndexingPolicy() azcosmos.IndexingPolicy {
	var p azcosmos.IndexingPolicy
	if err := json.Unmarshal(indexingPolicyJSON, &p); err != nil {
		panic("cdb: embedded indexing.json is invalid: " + err.Error())
	}
	return p
}

// ErrBootstrap is wrapped by every bootstrap failure.
var ErrBootstrap = errors.New("cdb: container bootstrap failed")

// bootstrap makes sure the database and container exist. It reads the
// container first, so a provisioned container costs one metadata read and
// no control-plane write, which is also what Entra ID principals are
// allowed to do. Creation treats 409 as "someone else created it".
func bootstrap(ctx context.Context, s *cosmos.Store, client *azcosmos.Client, database, container string, throughput int32) error {
	err := s.ReadContainer(ctx, func(p *azcosmos.ContainerProperties) error { return checkPartitionKey(p, container) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrConfig):
		return err
	case !errors.Is(err, cosmos.ErrNotFound):
		return bootstrapError(err, database, container)
	}
	err = s.CreateDatabase(ctx, client, database)
	if err != nil && !errors.Is(err, cosmos.ErrConflict) {
		return bootstrapError(err, database, container)
	}
	db, err := client.NewDatabase(database)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBootstrap, err)
	}
	policy := IndexingPolicy()
	props := azcosmos.ContainerProperties{
		ID:                     container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{PartitionKeyPath}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		IndexingPolicy:         &policy,
	}
	var opts *azcosmos.CreateContainerOptions
	if throughput > 0 {
		tp := azcosmos.NewManualThroughputProperties(throughput)
		opts = &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}
	}
	err = s.CreateContainer(ctx, db, props, opts)
	if err != nil && !errors.Is(err, cosmos.ErrConflict) {
		return bootstrapError(err, database, container)
	}
	return nil
}

func checkPartitionKey(p *azcosmos.ContainerProperties, container string) error {
	if p == nil {
		return nil
	}
	paths := p.PartitionKeyDefinition.Paths
	if len(paths) != 1 || paths[0] != PartitionKeyPath {
		return configError("container %q is partitioned by %v; duroxide needs a container partitioned by %s", container, paths, PartitionKeyPath)
	}
	return nil
}

// bootstrapError explains the failures operators actually hit. Cosmos
// refuses control-plane writes made with Entra ID tokens (403/5300) and
// answers 403/5301 to principals without a data-plane role assignment; a
// bare 403 would leave them guessing.
func bootstrapError(err error, database, container string) error {
	var ce *RequestError
	if !errors.As(err, &ce) || !errors.Is(ce, cosmos.ErrForbidden) {
		return fmt.Errorf("%w: database %q, container %q: %w", ErrBootstrap, database, container, err)
	}
	switch ce.SubStatus {
	case 5300:
		return fmt.Errorf("%w: container %q in database %q does not exist, and Cosmos DB does not let Entra ID (AAD) tokens create databases or containers (403, substatus 5300). "+
			"Provision it with ARM/Bicep/Terraform or `az cosmosdb sql container create --partition-key-path %s --idx @indexing.json ...` (policy: cdb.IndexingPolicy()), "+
			"or run the bootstrap once with key auth; then set SkipBootstrap or keep the check: %w", ErrBootstrap, container, database, PartitionKeyPath, err)
	case 5301:
		return fmt.Errorf("%w: the Entra ID principal has no Cosmos DB data-plane role assignment on this account (403, substatus 5301). "+
			"Assign \"Cosmos DB Built-in Data Contributor\" (role 00000000-0000-0000-0000-000000000002), e.g. `az cosmosdb sql role assignment create --role-definition-id 00000000-0000-0000-0000-000000000002 --principal-id <object id> --scope /`: %w", ErrBootstrap, err)
	}
	return fmt.Errorf("%w: access to database %q, container %q was refused (403): %w", ErrBootstrap, database, container, err)
}
