// Package orch is a fixture for TestVetTool (nondeterministic on purpose): orchestrations on the real
// durable package, one nondeterministic in its own body and one through a
// helper of another package of the module.
package orch

import (
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/analysis/durablecheck/internal/vetfixture/helper"
	"github.com/duroxide-go/cdb/durable"
)

// Register registers the fixture's orchestrations.
func Register(r *durable.Registry) error {
	return durable.RegisterOrchestration(r, "Clock", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return time.Now().String(), nil
	})
}

// ViaHelper reaches time.Now through another package.
func ViaHelper(ctx *durable.OrchestrationContext, _ string) (string, error) {
	return fmt.Sprint(helper.Stamp()), nil
}
