package blobstore

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/duroxide-go/cdb/payload"
)

// DefaultThreshold is Config.Threshold's default: payloads of more than
// 256 KiB go to blobs. docs/costs.md says how to pick one.
const DefaultThreshold = 256 << 10

// DefaultCacheBytes is Config.CacheBytes's default.
const DefaultCacheBytes = 32 << 20

// MaxPayloadBytes is the largest payload Encode uploads: the most one Put
// Blob request takes (5000 MiB). Decode holds a payload in memory whole.
const MaxPayloadBytes int64 = 5000 << 20

// Environment variables read by ConfigFromEnv.
const (
	EnvConnectionString = "DUROXIDE_BLOB_CONNECTION_STRING"
	EnvContainerURL     = "DUROXIDE_BLOB_CONTAINER_URL"
	EnvAccountKey       = "DUROXIDE_BLOB_KEY"
	EnvContainer        = "DUROXIDE_BLOB_CONTAINER"
	EnvThreshold        = "DUROXIDE_BLOB_THRESHOLD"
	EnvPrefix           = "DUROXIDE_BLOB_PREFIX"
)

// DefaultContainer is the container a connection string's Config uses
// when Container is empty.
const DefaultContainer = "duroxide-payloads"

// Config says which container keeps the payloads and how to reach it. Set
// exactly one of Credential, AccountKey and ConnectionString.
type Config struct {
	// ContainerURL is the container's URL,
	// https://<account>.blob.core.windows.net/<container> (or, for
	// Azurite, http://127.0.0.1:10000/<account>/<container>). Not used
	// with ConnectionString, which names the account.
	ContainerURL string
	// Credential authenticates with Microsoft Entra ID.
	Credential azcore.TokenCredential
	// AccountKey is the storage account's shared key (base64); the
	// account name is taken from ContainerURL unless AccountName is set.
	AccountKey string
	// AccountName overrides the account name AccountKey signs for.
	AccountName string
	// ConnectionString is a storage connection string (an account key or
	// a shared access signature); Container names the container in it.
	ConnectionString string
	// Container is the container's name with ConnectionString; defaults
	// to DefaultContainer.
	Container string
	// Prefix, if set, begins every blob name (a "/" is added if it does
	// not end with one), so several stores can share a container.
	Prefix string
	// Threshold: payloads of more bytes than this go to blobs, smaller
	// ones stay inline. 0 means DefaultThreshold.
	Threshold int
	// CacheBytes bounds the memory kept of payloads read back; 0 means
	// DefaultCacheBytes, negative caches nothing.
	CacheBytes int
	// ClientOptions are passed to the azblob container client (retries,
	// transport, telemetry).
	ClientOptions *container.ClientOptions
}

// ConfigFromEnv builds a Config from the environment:
//   - DUROXIDE_BLOB_CONNECTION_STRING (with DUROXIDE_BLOB_CONTAINER), or
//   - DUROXIDE_BLOB_CONTAINER_URL with DUROXIDE_BLOB_KEY, or without it
//     DefaultAzureCredential (environment, workload identity, managed
//     identity, Azure CLI, ...);
//   - DUROXIDE_BLOB_THRESHOLD (bytes) and DUROXIDE_BLOB_PREFIX, optional.
func ConfigFromEnv() (Config, error) {
	cfg := Config{
		ConnectionString: os.Getenv(EnvConnectionString),
		ContainerURL:     os.Getenv(EnvContainerURL),
		AccountKey:       os.Getenv(EnvAccountKey),
		Container:        os.Getenv(EnvContainer),
		Prefix:           os.Getenv(EnvPrefix),
	}
	if v := os.Getenv(EnvThreshold); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Config{}, configError("%s=%q is not a size in bytes", EnvThreshold, v)
		}
		cfg.Threshold = n
	}
	switch {
	case cfg.ConnectionString != "":
		return cfg, nil
	case cfg.ContainerURL == "":
		return Config{}, configError("%s (or %s) is not set", EnvContainerURL, EnvConnectionString)
	case cfg.AccountKey == "":
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return Config{}, fmt.Errorf("blobstore: %s is not set and DefaultAzureCredential is unavailable: %w", EnvAccountKey, err)
		}
		cfg.Credential = cred
	}
	return cfg, nil
}

func configError(format string, args ...any) error {
	return fmt.Errorf("blobstore: "+format+": %w", append(args, payload.ErrInvalidCodec)...)
}

// client builds the container client cfg describes. Errors never hold the
// key, the connection string or the URL's query (a SAS).
func (cfg Config) client() (*container.Client, error) {
	n := 0
	for _, set := range []bool{cfg.Credential != nil, cfg.AccountKey != "", cfg.ConnectionString != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, configError("set exactly one of Credential, AccountKey and ConnectionString")
	}
	if cfg.ConnectionString != "" {
		if cfg.ContainerURL != "" {
			return nil, configError("ContainerURL is not used with ConnectionString (set Container)")
		}
		name := cfg.Container
		if name == "" {
			name = DefaultContainer
		}
		c, err := container.NewClientFromConnectionString(cfg.ConnectionString, name, cfg.ClientOptions)
		if err != nil {
			// azblob's parse errors name no part of the string.
			return nil, configError("connection string: %v", err)
		}
		return c, nil
	}
	u, err := containerURL(cfg.ContainerURL)
	if err != nil {
		return nil, err
	}
	if cfg.Credential != nil {
		return container.NewClient(cfg.ContainerURL, cfg.Credential, cfg.ClientOptions)
	}
	account := cfg.AccountName
	if account == "" {
		account = accountName(u)
	}
	if account == "" {
		return nil, configError("cannot tell the account name from %s: set AccountName", safeURL(u))
	}
	key, err := container.NewSharedKeyCredential(account, cfg.AccountKey)
	if err != nil {
		return nil, configError("AccountKey is not a valid base64 key")
	}
	return container.NewClientWithSharedKeyCredential(cfg.ContainerURL, key, cfg.ClientOptions)
}

// containerURL parses a container URL, refusing one without a container.
func containerURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, configError("ContainerURL is required")
	}
	if strings.Contains(strings.ToLower(s), "accountkey=") || strings.Contains(s, ";") {
		return nil, configError("ContainerURL holds a connection string: set it as ConnectionString")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, configError("ContainerURL is not an http(s) URL")
	}
	segs := pathSegments(u)
	if len(segs) == 0 || pathStyle(u) && len(segs) < 2 {
		return nil, configError("ContainerURL %s names no container", safeURL(u))
	}
	return u, nil
}

// accountName is the account of an https://<account>.blob... URL, or the
// first path segment of a path-style (Azurite, IP address) URL.
func accountName(u *url.URL) string {
	if pathStyle(u) {
		return pathSegments(u)[0]
	}
	name, _, _ := strings.Cut(u.Hostname(), ".")
	return name
}

// pathStyle reports whether the account is in the path, not the host:
// Azurite and the other emulators on localhost or an IP address.
func pathStyle(u *url.URL) bool {
	h := u.Hostname()
	return h == "localhost" || net.ParseIP(h) != nil
}

func pathSegments(u *url.URL) []string {
	var segs []string
	for _, s := range strings.Split(u.Path, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	return segs
}

// safeURL drops user information and the query (a SAS token) from u.
func safeURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.Path
}
