# Provisions what github.com/duroxide-go/cdb needs on an existing Cosmos DB
# (NoSQL) account: the database, the container with partition key
# /instanceId and the library's indexing policy (read from the module's
# indexing.json, so the two cannot drift), and, optionally, the data-plane
# role assignment for a managed identity. Entra ID tokens cannot create
# databases or containers (403/5300): with a managed identity, provision here.
#
#   terraform init && terraform apply -var resource_group_name=<rg> \
#     -var account_name=<account> -var principal_id=<object id>

terraform {
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 3.100"
    }
  }
}

variable "resource_group_name" { type = string }
variable "account_name" { type = string }
variable "database_name" {
  type    = string
  default = "duroxide"
}
variable "container_name" {
  type    = string
  default = "duroxide"
}
variable "autoscale_max_throughput" {
  type        = number
  default     = 1000
  description = "0 for a serverless account or database-level throughput."
}
variable "principal_id" {
  type        = string
  default     = ""
  description = "Object id of a principal that gets Cosmos DB Built-in Data Contributor; empty for none."
}

locals {
  indexing = jsondecode(file("${path.module}/../../indexing.json"))
}

data "azurerm_cosmosdb_account" "this" {
  name                = var.account_name
  resource_group_name = var.resource_group_name
}

resource "azurerm_cosmosdb_sql_database" "this" {
  name                = var.database_name
  resource_group_name = var.resource_group_name
  account_name        = var.account_name
}

resource "azurerm_cosmosdb_sql_container" "this" {
  name                  = var.container_name
  resource_group_name   = var.resource_group_name
  account_name          = var.account_name
  database_name         = azurerm_cosmosdb_sql_database.this.name
  partition_key_paths   = ["/instanceId"]
  partition_key_version = 2

  dynamic "autoscale_settings" {
    for_each = var.autoscale_max_throughput > 0 ? [1] : []
    content {
      max_throughput = var.autoscale_max_throughput
    }
  }

  indexing_policy {
    indexing_mode = local.indexing.indexingMode
    dynamic "included_path" {
      for_each = local.indexing.includedPaths
      content {
        path = included_path.value.path
      }
    }
    dynamic "excluded_path" {
      for_each = local.indexing.excludedPaths
      content {
        path = excluded_path.value.path
      }
    }
    dynamic "composite_index" {
      for_each = local.indexing.compositeIndexes
      content {
        dynamic "index" {
          for_each = composite_index.value
          content {
            path  = index.value.path
            order = index.value.order
          }
        }
      }
    }
  }
}

# 00000000-0000-0000-0000-000000000002: "Cosmos DB Built-in Data Contributor".
resource "azurerm_cosmosdb_sql_role_assignment" "data_contributor" {
  count               = var.principal_id == "" ? 0 : 1
  resource_group_name = var.resource_group_name
  account_name        = var.account_name
  role_definition_id  = "${data.azurerm_cosmosdb_account.this.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002"
  principal_id        = var.principal_id
  scope               = "${data.azurerm_cosmosdb_account.this.id}/dbs/${var.database_name}"
}

output "endpoint" {
  value = data.azurerm_cosmosdb_account.this.endpoint
}
