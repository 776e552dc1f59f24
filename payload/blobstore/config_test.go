package blobstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/blobstore"
)

type fakeCredential struct{}

func (fakeCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t"}, nil
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	const secret = "c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWs="
	for name, cfg := range map[string]blobstore.Config{
		"no credential":              {ContainerURL: "https://acct.blob.core.windows.net/c"},
		"two credentials":            {ContainerURL: "https://acct.blob.core.windows.net/c", AccountKey: secret, Credential: fakeCredential{}},
		"no container":               {ContainerURL: "https://acct.blob.core.windows.net/", AccountKey: secret},
		"azurite without container":  {ContainerURL: "http://127.0.0.1:10000/devstoreaccount1", AccountKey: secret},
		"not a URL":                  {ContainerURL: "acct.blob.core.windows.net/c", AccountKey: secret},
		"connection string as URL":   {ContainerURL: "AccountName=a;AccountKey=" + secret, Credential: fakeCredential{}},
		"bad key":                    {ContainerURL: "https://acct.blob.core.windows.net/c", AccountKey: "not base64 " + secret[:8]},
		"bad connection string":      {ConnectionString: "AccountKey=" + secret},
		"URL with connection string": {ConnectionString: "AccountName=a;AccountKey=" + secret, ContainerURL: "https://a.blob.core.windows.net/c"},
		"negative threshold":         {ContainerURL: "https://acct.blob.core.windows.net/c", AccountKey: secret, Threshold: -1},
	} {
		_, err := blobstore.New(cfg)
		if !errors.Is(err, payload.ErrInvalidCodec) {
			t.Errorf("%s: New = %v, want payload.ErrInvalidCodec", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:8])) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
	for name, cfg := range map[string]blobstore.Config{
		"entra id":          {ContainerURL: "https://acct.blob.core.windows.net/c", Credential: fakeCredential{}},
		"shared key":        {ContainerURL: "https://acct.blob.core.windows.net/c", AccountKey: secret},
		"azurite":           {ContainerURL: "http://127.0.0.1:10000/devstoreaccount1/c", AccountKey: secret},
		"connection string": {ConnectionString: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + secret + ";EndpointSuffix=core.windows.net"},
	} {
		if _, err := blobstore.New(cfg); err != nil {
			t.Errorf("%s: New = %v", name, err)
		}
	}
}
