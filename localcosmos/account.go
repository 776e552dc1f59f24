package localcosmos

import (
	"encoding/json"
	"net/http"
	"strings"
)

// readAccount answers GET /: the database account properties. azcosmos
// reads writableLocations/readableLocations and sends every later request
// to the databaseAccountEndpoint advertised there, so it is the server's
// own address.
func (s *Server) readAccount(req *request) (*response, *apiError) {
	loc := []map[string]any{{"name": s.opts.Region, "databaseAccountEndpoint": s.endpoint}}
	host := strings.TrimSuffix(strings.TrimPrefix(s.endpoint, "http://"), "/")
	queryEngine, _ := json.Marshal(map[string]any{
		"maxSqlQueryInputLength": 262144, "maxJoinsPerSqlQuery": 5, "maxLogicalAndPerSqlQuery": 500,
		"maxLogicalOrPerSqlQuery": 500, "maxUdfRefPerSqlQuery": 10, "maxInExpressionItemsCount": 16000,
		"queryMaxInMemorySortDocumentCount": 500, "maxQueryRequestTimeoutFraction": 0.9,
		"sqlAllowNonFiniteNumbers": false, "sqlAllowAggregateFunctions": true, "sqlAllowSubQuery": true,
		"sqlAllowScalarSubQuery": true, "allowNewKeywords": true, "sqlAllowLike": true,
		"sqlAllowGroupByClause": true, "maxSpatialQueryCells": 12, "spatialMaxGeometryPointCount": 256,
		"sqlDisableOptimizationFlags": 0, "sqlAllowTop": true, "enableSpatialIndexing": true,
	})
	body := map[string]any{
		"_self":                          "",
		"id":                             "cosmostest-" + host,
		"_rid":                           host,
		"media":                          "//media/",
		"addresses":                      "//addresses/",
		"_dbs":                           "//dbs/",
		"writableLocations":              loc,
		"readableLocations":              loc,
		"enableMultipleWriteLocations":   false,
		"continuousBackupEnabled":        false,
		"enableNRegionSynchronousCommit": false,
		"userReplicationPolicy":          map[string]any{"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"userConsistencyPolicy":          map[string]any{"defaultConsistencyLevel": s.opts.ConsistencyLevel},
		"systemReplicationPolicy":        map[string]any{"minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"readPolicy":                     map[string]any{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration":       string(queryEngine),
	}
	resp := newResponse(http.StatusOK, marshalJSON(body))
	resp.header.Set("x-ms-max-media-storage-usage-mb", "10240")
	resp.header.Set("x-ms-media-storage-usage-mb", "0")
	resp.header.Set("x-ms-databaseaccount-consumed-mb", "0")
	resp.header.Set("x-ms-databaseaccount-reserved-mb", "0")
	resp.header.Set("x-ms-databaseaccount-provisioned-mb", "0")
	return resp, nil
}
