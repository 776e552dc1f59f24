package cosmostest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/cosmostest"
)

// Start a server, create a database and a container through azcosmos, and
// round-trip an item. In a test, use cosmostest.New(t, nil), which
// closes the server when the test ends.
func ExampleNewServer() {
	s, err := cosmostest.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	client := s.Client()

	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "app"}, nil); err != nil {
		log.Fatal(err)
	}
	db, _ := client.NewDatabase("app")
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     "orders",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/customer"}, Version: 2},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	orders, _ := client.NewContainer("app", "orders")

	pk := azcosmos.NewPartitionKeyString("alice")
	created, err := orders.CreateItem(ctx, pk, []byte(`{"id":"o1","customer":"alice","total":42}`), nil)
	if err != nil {
		log.Fatal(err)
	}
	read, err := orders.ReadItem(ctx, pk, "o1", nil)
	if err != nil {
		log.Fatal(err)
	}
	var order struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		ETag  string  `json:"_etag"`
	}
	_ = json.Unmarshal(read.Value, &order)
	fmt.Println(order.ID, order.Total, order.ETag == string(created.ETag))

	// The server refuses what the service refuses.
	_, err = orders.CreateItem(ctx, pk, []byte(`{"id":"o1","customer":"alice"}`), nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		fmt.Println(re.StatusCode)
	}
	// Output:
	// o1 42 true
	// 409
}

// Make the next write fail after it was applied, as a lost response would,
// and check what the client sees.
func ExampleServer_InjectFault() {
	s, err := cosmostest.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	client := s.Client()
	_, _ = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "app"}, nil)
	db, _ := client.NewDatabase("app")
	_, _ = db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	c, _ := client.NewContainer("app", "c")
	pk := azcosmos.NewPartitionKeyString("p")

	s.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Drop: cosmostest.DropAfterApply, Times: 1})
	_, err = c.CreateItem(ctx, pk, []byte(`{"id":"x","pk":"p"}`), nil)
	fmt.Println("create failed:", err != nil)

	// The write happened: a retry gets 409.
	_, err = c.CreateItem(ctx, pk, []byte(`{"id":"x","pk":"p"}`), nil)
	var re *azcore.ResponseError
	fmt.Println("retry:", errors.As(err, &re) && re.StatusCode == 409)
	fmt.Println("creates:", s.Counts()[cosmostest.OpCreateItem])
	// Output:
	// create failed: true
	// retry: true
	// creates: 2
}
