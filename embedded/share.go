package embedded

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/duroxide-go/cdb"
)

// Sharing a running process's in-process store. The server behind the
// store already speaks the Cosmos DB API on a loopback port; the process
// that owns the data directory writes where that is, and the key it
// accepts, to the directory's endpoint file (readable by the owner's
// user only). Another process whose Open finds the directory in use
// (the CLI, `duroxide ui`, a second tool) connects to that endpoint
// with Options.JoinRunning instead of failing. The key is fresh for
// every Open, so the endpoint file of a process that died grants
// nothing, and a key never leaves the directory.

// EndpointFile is the file, in the data directory, naming the endpoint
// and key of the process that has the store open.
const EndpointFile = "endpoint.json"

// ErrNotShared is matched (errors.Is) by Open's error when JoinRunning
// finds the data directory in use but no endpoint file that reaches the
// process using it (an older version of this package, or a process still
// starting: try again).
var ErrNotShared = errors.New("embedded: the process using the data directory does not share its store")

// endpointInfo is the endpoint file's content.
type endpointInfo struct {
	Endpoint string `json:"endpoint"`
	Key      string `json:"key"`
	PID      int    `json:"pid"`
}

// newKey is a fresh master key for one Open of the in-process server.
func newKey() string {
	b := make([]byte, 64)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.StdEncoding.EncodeToString(b)
}

// writeEndpoint publishes the owner's endpoint and key in dir: written
// to a temporary file and renamed, so a reader never sees half of it.
func writeEndpoint(dir, endpoint, key string) error {
	b, err := json.Marshal(endpointInfo{Endpoint: endpoint, Key: key, PID: os.Getpid()})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, EndpointFile+".new")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("embedded: sharing the store: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, EndpointFile)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("embedded: sharing the store: %w", err)
	}
	return nil
}

// removeEndpoint removes dir's endpoint file if it still names key: a
// later owner's file is not ours to remove.
func removeEndpoint(dir, key string) {
	info, err := readEndpoint(dir)
	if err == nil && info.Key == key {
		_ = os.Remove(filepath.Join(dir, EndpointFile))
	}
}

func readEndpoint(dir string) (endpointInfo, error) {
	var info endpointInfo
	b, err := os.ReadFile(filepath.Join(dir, EndpointFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Endpoint == "" || info.Key == "" {
		return info, fmt.Errorf("embedded: %s: not an endpoint file", filepath.Join(dir, EndpointFile))
	}
	return info, nil
}

// joinRunning connects to the store the process owning dir serves.
func joinRunning(dir string) (*Store, error) {
	info, err := readEndpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrNotShared, dir, err)
	}
	cfg := cdb.Config{
		Endpoint:  info.Endpoint,
		Key:       info.Key,
		Database:  os.Getenv(cdb.EnvDatabase),
		Container: os.Getenv(cdb.EnvContainer),
	}
	return &Store{
		Config:      cfg,
		Description: fmt.Sprintf("the in-process store process %d serves from %s, at %s", info.PID, dir, cdb.SafeEndpoint(info.Endpoint)),
		DataDir:     dir,
		Shared:      true,
	}, nil
}
