package filestore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/filestore"
)

// A payload over the threshold becomes a file and a reference of a few
// hundred bytes; Decode reads the file back.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "payloads")
	defer os.RemoveAll(dir)
	codec, err := filestore.New(dir, &filestore.Options{Threshold: 1 << 10})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	scope := payload.Scope{Instance: "order-1", ExecutionID: 1}
	result := bytes.Repeat([]byte("x"), 1<<20)
	ref, _ := codec.Encode(ctx, scope, result)
	back, _ := codec.Decode(ctx, scope, ref)
	fmt.Println(len(ref) < 300, bytes.Equal(back, result))
	_ = codec.DeletePayloads(ctx, "order-1", nil)
	_, err = codec.Decode(ctx, scope, ref)
	fmt.Println(err != nil)
	// Output:
	// true true
	// true
}
