// Command duroxide exports stored duroxide histories and explains how to
// replay them:
//
//	COSMOS_ENDPOINT=... COSMOS_KEY=... duroxide export -o histories.json -status Running
//
// `duroxide replay` needs your orchestration code, so it runs from a main
// of your own that calls cli.Main(registry) (package cmd/duroxide/cli);
// this command has no registry and reports replay as a usage error saying
// so.
package main

import "github.com/duroxide-go/cdb/cmd/duroxide/cli"

func main() { cli.Main(nil) }
