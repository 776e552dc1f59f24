// Command duroxide operates duroxide instances: it lists and searches
// them, shows one (status, custom status, KV, each execution's history as
// a timeline), starts, signals, cancels and purges them, serves the web
// dashboard, and exports stored histories:
//
//	duroxide list -status Failed -created-after 24h
//	duroxide show order-42
//	duroxide cancel -status Running -prefix test- -dry-run
//	duroxide ui -addr 127.0.0.1:8080
//	COSMOS_ENDPOINT=... duroxide export -o histories.json -status Running
//
// Start with `duroxide -h`. The commands live in package cmd/duroxide/cli,
// whose Main a program of your own calls to add `duroxide replay`.
//
// The store is the one embedded.Open opens: the Cosmos DB account the
// COSMOS_* variables name, else the in-process store in DUROXIDE_DATA_DIR
// (default .duroxide/default). `duroxide replay` needs your orchestration
// code, so it runs from a main of your own that exits with
// cli.Main(registry) (package cmd/duroxide/cli); this command has no
// registry and reports replay as a usage error saying so. See
// docs/operations.md.
package main

import (
	"os"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
)

func main() { os.Exit(cli.Main(nil)) }
