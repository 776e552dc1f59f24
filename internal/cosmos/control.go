package cosmos

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Control-plane requests of the bootstrap. They pass through Do like the
// data-plane ones, so they are counted, hooked, throttle-retried and
// classified the same way.

// ReadContainer reads the container's properties and hands them to check
// (nil when the service sent none); an error from check fails the request
// as if the service had, so it is counted and classified like one.
func (s *Store) ReadContainer(ctx context.Context, check func(*azcosmos.ContainerProperties) error) error {
	return s.Do(ctx, Call{Op: OpReadContainer}, func(ctx context.Context) (Result, error) {
		r, err := s.c.Read(ctx, nil)
		if err == nil {
			err = check(r.ContainerProperties)
		}
		return Result{Charge: r.RequestCharge}, err
	})
}

// CreateDatabase creates the database id with client; ErrConflict when it
// exists.
func (s *Store) CreateDatabase(ctx context.Context, client *azcosmos.Client, id string) error {
	return s.Do(ctx, Call{Op: OpCreateDatabase}, func(ctx context.Context) (Result, error) {
		r, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: id}, nil)
		return Result{Charge: r.RequestCharge}, err
	})
}

// CreateContainer creates a container in db; ErrConflict when it exists.
func (s *Store) CreateContainer(ctx context.Context, db *azcosmos.DatabaseClient, props azcosmos.ContainerProperties, opts *azcosmos.CreateContainerOptions) error {
	return s.Do(ctx, Call{Op: OpCreateContainer}, func(ctx context.Context) (Result, error) {
		r, err := db.CreateContainer(ctx, props, opts)
		return Result{Charge: r.RequestCharge}, err
	})
}
