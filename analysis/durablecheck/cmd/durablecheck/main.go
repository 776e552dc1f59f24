// Command durablecheck reports nondeterministic constructs in durable
// orchestration code. Run it on its own,
//
//	durablecheck ./...
//
// or as a vet tool:
//
//	go vet -vettool=$(command -v durablecheck) ./...
//
// See package github.com/duroxide-go/cdb/analysis/durablecheck for the rules.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/duroxide-go/cdb/analysis/durablecheck"
)

func main() { singlechecker.Main(durablecheck.Analyzer) }
