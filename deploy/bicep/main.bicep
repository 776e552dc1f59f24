// Provisions what github.com/duroxide-go/cdb needs on an existing Cosmos DB
// (NoSQL) account: the database, the container with partition key
// /instanceId and the library's indexing policy (loaded from the module's
// indexing.json, so the two cannot drift), and, optionally, the data-plane
// role assignment that lets a managed identity use it.
//
//   az deployment group create -g <rg> -f deploy/bicep/main.bicep \
//     -p accountName=<account> principalId=<object id of the identity>
//
// Entra ID tokens cannot create databases or containers (403/5300), so an
// application that authenticates with a managed identity relies on this
// template and runs with cdb.Config{SkipBootstrap: false} (it only reads the
// container then) or SkipBootstrap: true.

@description('Name of the existing Cosmos DB account (NoSQL API).')
param accountName string

@description('Database name (cdb.Config.Database; default "duroxide").')
param databaseName string = 'duroxide'

@description('Container name (cdb.Config.Container; default "duroxide").')
param containerName string = 'duroxide'

@description('Autoscale maximum RU/s for the container; 0 leaves throughput to the database or a serverless account.')
param autoscaleMaxThroughput int = 1000

@description('Object id of a principal (managed identity) that gets "Cosmos DB Built-in Data Contributor"; empty for none.')
param principalId string = ''

resource account 'Microsoft.DocumentDB/databaseAccounts@2024-05-15' existing = {
  name: accountName
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-05-15' = {
  parent: account
  name: databaseName
  properties: {
    resource: { id: databaseName }
  }
}

resource container 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-05-15' = {
  parent: database
  name: containerName
  properties: {
    resource: {
      id: containerName
      partitionKey: { paths: ['/instanceId'], kind: 'Hash', version: 2 }
      indexingPolicy: loadJsonContent('../../indexing.json')
    }
    options: autoscaleMaxThroughput > 0 ? { autoscaleSettings: { maxThroughput: autoscaleMaxThroughput } } : {}
  }
}

// 00000000-0000-0000-0000-000000000002 is the built-in data-plane role
// "Cosmos DB Built-in Data Contributor" (read and write items, no control
// plane). Scoped to the database so the identity cannot touch others.
resource dataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-05-15' = if (!empty(principalId)) {
  parent: account
  name: guid(account.id, database.id, principalId, 'data-contributor')
  properties: {
    roleDefinitionId: '${account.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'
    principalId: principalId
    scope: '${account.id}/dbs/${databaseName}'
  }
}

output endpoint string = account.properties.documentEndpoint
