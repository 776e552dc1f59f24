package cdb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The infrastructure templates must read the indexing policy the library
// embeds rather than carry a copy, or a new index would reach the library
// but not the containers provisioned by the templates.
func TestDeployTemplatesReadIndexingJSON(t *testing.T) {
	for file, ref := range map[string]string{
		"deploy/bicep/main.bicep":  "loadJsonContent('../../indexing.json')",
		"deploy/terraform/main.tf": `file("${path.module}/../../indexing.json")`,
	} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Contains(t, string(b), ref, file)
		require.Contains(t, string(b), "/instanceId", file)
		require.Contains(t, string(b), "00000000-0000-0000-0000-000000000002", file)
		rel := ref[strings.Index(ref, "../") : strings.LastIndex(ref, "json")+4]
		_, err = os.Stat(filepath.Join(filepath.Dir(file), rel))
		require.NoError(t, err, "%s refers to %s", file, rel)
	}
}
