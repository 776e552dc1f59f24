package cdb

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const testKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

func TestParseConnectionStringAnyOrder(t *testing.T) {
	for _, s := range []string{
		"AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey=" + testKey + ";",
		"AccountKey=" + testKey + ";AccountEndpoint=https://acct.documents.azure.com:443/",
		"accountendpoint=https://acct.documents.azure.com:443/; ApplicationName=x ;ACCOUNTKEY=" + testKey,
		// The order azcosmos's own parser turns into an empty key.
		"AccountEndpoint=https://acct.documents.azure.com:443/;DisableServerCertificateValidation=True;AccountKey=" + testKey,
	} {
		cs, err := ParseConnectionString(s)
		require.NoError(t, err, s)
		require.Equal(t, "https://acct.documents.azure.com:443/", cs.Endpoint)
		require.Equal(t, testKey, cs.Key, "base64 '=' padding survives")
	}
	cs, err := ParseConnectionString("AccountEndpoint=https://localhost:8081/;AccountKey=" + testKey + ";DisableServerCertificateValidation=True")
	require.NoError(t, err)
	require.True(t, cs.DisableServerCertificateValidation)
}

func TestParseConnectionStringErrorsAreClearAndNeverEchoTheKey(t *testing.T) {
	for _, s := range []string{
		"", "AccountKey=" + testKey, "AccountEndpoint=https://a/", "AccountEndpoint=ftp://a/;AccountKey=" + testKey,
		"AccountEndpoint=https://a/;AccountKey=not*base64!", "garbage", "AccountEndpoint=https://a/;AccountEndpoint=https://b/;AccountKey=" + testKey,
	} {
		_, err := ParseConnectionString(s)
		require.Error(t, err, s)
		require.True(t, errors.Is(err, ErrConfig), s)
		require.NotContains(t, err.Error(), testKey)
		require.NotContains(t, err.Error(), "not*base64")
	}
}

func TestConfigResolve(t *testing.T) {
	_, err := Config{Endpoint: "https://a/"}.resolve()
	require.ErrorIs(t, err, ErrConfig)
	cfg, err := Config{ConnectionString: "AccountEndpoint=https://a/;AccountKey=" + testKey}.resolve()
	require.NoError(t, err)
	require.Equal(t, "https://a/", cfg.Endpoint)
	require.Equal(t, DefaultDatabase, cfg.Database)
	require.Equal(t, DefaultContainer, cfg.Container)
	_, err = Config{ConnectionString: "AccountEndpoint=https://a/;AccountKey=" + testKey, Key: testKey}.resolve()
	require.ErrorIs(t, err, ErrConfig)
	_, err = Config{ConnectionString: "AccountEndpoint=https://a/;AccountKey=" + testKey, Endpoint: "https://b/"}.resolve()
	require.ErrorIs(t, err, ErrConfig)
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("COSMOS_CONNECTION_STRING", "")
	t.Setenv("COSMOS_ENDPOINT", "https://acct.documents.azure.com:443/")
	t.Setenv("COSMOS_KEY", testKey)
	t.Setenv("COSMOS_DATABASE", "")
	t.Setenv("COSMOS_CONTAINER", "orders")
	cfg, err := ConfigFromEnv()
	require.NoError(t, err)
	cfg, err = cfg.resolve()
	require.NoError(t, err)
	require.Equal(t, "duroxide", cfg.Database)
	require.Equal(t, "orders", cfg.Container)
	require.Nil(t, cfg.Credential)
	require.False(t, cfg.SkipBootstrap)
	require.False(t, cfg.InsecureSkipVerify)

	for v, want := range map[string]bool{"1": true, "TRUE": true, " true ": true, "0": false, "yes": false, "": false} {
		t.Setenv(EnvSkipBootstrap, v)
		t.Setenv(EnvInsecureTLS, v)
		cfg, err = ConfigFromEnv()
		require.NoError(t, err)
		require.Equal(t, want, cfg.SkipBootstrap, "%s=%q", EnvSkipBootstrap, v)
		require.Equal(t, want, cfg.InsecureSkipVerify, "%s=%q", EnvInsecureTLS, v)
	}

	// Without a key: DefaultAzureCredential (constructing it needs no network).
	t.Setenv("COSMOS_KEY", "")
	cfg, err = ConfigFromEnv()
	require.NoError(t, err)
	require.NotNil(t, cfg.Credential)
	require.Empty(t, cfg.Key)

	t.Setenv("COSMOS_ENDPOINT", "")
	_, err = ConfigFromEnv()
	require.True(t, errors.Is(err, ErrConfig) && strings.Contains(err.Error(), "COSMOS_ENDPOINT"))
}

// SafeEndpoint keeps what identifies the account and nothing a key or
// token can hide in.
func TestSafeEndpointShowsOnlySchemeAndHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://acct.documents.azure.com:443/":                    "https://acct.documents.azure.com:443/",
		"https://u:secret@acct.documents.azure.com/p?sig=secret#f": "https://acct.documents.azure.com/",
		"AccountEndpoint=https://a/;AccountKey=" + testKey:         "",
		testKey:                          "",
		"acct.documents.azure.com:443":   "",
		"ftp://acct.documents.azure.com": "",
	} {
		require.Equal(t, want, SafeEndpoint(in), in)
	}
}
