// Package blobstore keeps payloads over a threshold in Azure Blob Storage
// (the official azblob SDK) and leaves a claim-check reference in the
// store in their place: an activity result of 50 MB becomes a reference of
// about 200 bytes in its Cosmos DB document, far under the 2 MB item
// limit. It is the only package of this module that imports azblob, so a
// program that does not keep large payloads outside the store does not
// link the SDK.
//
// A Codec is a payload.Codec and a payload.PayloadDeleter: give it to
// payload.Wrap with the other codecs. Encode uploads before it returns, so
// the turn that commits a reference never commits one to a blob that is
// not there yet. Blobs are named
//
//	[Prefix]<escaped instance>/<execution ID>/<SHA-256 of the content>
//
// so a retried turn or a second worker writing the same payload names
// the same blob (the upload is conditional, If-None-Match: *, and "already
// exists" is success), and deleting or pruning an instance removes its
// blobs by prefix. Decode reads a blob only when the payload is decoded,
// checks its size and SHA-256, and keeps recent ones in a small cache.
//
// Authenticate with Microsoft Entra ID (Config.Credential, e.g.
// azidentity.DefaultAzureCredential, with the Storage Blob Data
// Contributor role on the container), a shared key (Config.AccountKey) or
// a connection string (Config.ConnectionString), as the Cosmos DB account
// is. Keys are never logged or put in errors.
//
// Limits and request counts are in docs/costs.md.
package blobstore
