package blobstore_test

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/duroxide-go/cdb/payload/blobstore"
)

// A codec on a container, authenticated with Microsoft Entra ID. Give it
// to payload.Wrap with the provider; payloads over 256 KiB then live in
// the container.
func ExampleNew() {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		panic(err)
	}
	codec, err := blobstore.New(blobstore.Config{
		ContainerURL: "https://myaccount.blob.core.windows.net/duroxide-payloads",
		Credential:   cred,
	})
	if err != nil {
		panic(err)
	}
	_ = codec
}
