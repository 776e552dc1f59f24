package cdb

import (
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// ConnectionString holds the parts of a Cosmos DB connection string we use.
type ConnectionString struct {
	Endpoint string
	Key      string
	// DisableServerCertificateValidation is set by the emulator's
	// connection string; it turns on Config.InsecureSkipVerify.
	DisableServerCertificateValidation bool
}

// ParseConnectionString parses "AccountEndpoint=...;AccountKey=...;".
// Segments may come in any order and keys are case-insensitive; unknown
// segments are ignored. We parse it ourselves because azcosmos's parser
// reads only the first two segments and, for some orders, silently yields
// an empty key that fails only at request time.
func ParseConnectionString(s string) (ConnectionString, error) {
	var cs ConnectionString
	seen := map[string]bool{}
	for _, seg := range strings.Split(s, ";") {
		seg = strings.TrimSpace(seg)
		if seg == "" {
			continue
		}
		k, v, ok := strings.Cut(seg, "=")
		if !ok {
			return ConnectionString{}, configError("connection string segment without '=' (segments are Name=Value separated by ';')")
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if seen[k] {
			return ConnectionString{}, configError("connection string repeats %s", k)
		}
		seen[k] = true
		switch k {
		case "accountendpoint":
			cs.Endpoint = v
		case "accountkey":
			cs.Key = v
		case "disableservercertificatevalidation":
			cs.DisableServerCertificateValidation = strings.EqualFold(v, "true")
		}
	}
	if cs.Endpoint == "" {
		return ConnectionString{}, configError("connection string has no AccountEndpoint")
	}
	if u, err := url.Parse(cs.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ConnectionString{}, configError("connection string AccountEndpoint is not an http(s) URL")
	}
	if cs.Key == "" {
		return ConnectionString{}, configError("connection string has no AccountKey")
	}
	if _, err := base64.StdEncoding.DecodeString(cs.Key); err != nil {
		// Never echo the key itself.
		return ConnectionString{}, configError("connection string AccountKey is not valid base64")
	}
	return cs, nil
}

// setAudience makes azcosmos request tokens for audience instead of the
// account endpoint.
func setAudience(opts *azcosmos.ClientOptions, audience string) {
	c := opts.Cloud
	services := make(map[cloud.ServiceName]cloud.ServiceConfiguration, len(c.Services)+1)
	for k, v := range c.Services {
		services[k] = v
	}
	services[azcosmos.ServiceName] = cloud.ServiceConfiguration{Audience: strings.TrimRight(audience, "/")}
	c.Services = services
	opts.Cloud = c
}
