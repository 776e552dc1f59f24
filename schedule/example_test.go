package schedule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
	"github.com/duroxide-go/cdb/schedule"
)

// A report every weekday at 09:00 New York time, run for a week of
// virtual time: five runs, each under the id of its fire time. A runtime
// that runs schedules registers schedule.Register beside the
// orchestrations the schedules start.
func Example() {
	reg := durable.NewRegistry()
	if err := schedule.Register(reg); err != nil {
		panic(err)
	}
	report := func(ctx *durable.OrchestrationContext, in string) (string, error) { return in, nil }
	wait := func(ctx *durable.OrchestrationContext, d time.Duration) (string, error) {
		_, err := durable.NewTimer(ctx, d).Await()
		return "", err
	}
	if err := durable.RegisterOrchestration(reg, "Report", report); err != nil {
		panic(err)
	}
	if err := durable.RegisterOrchestration(reg, "Wait", wait); err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, err := testenv.Start(ctx, reg, &testenv.Options{Start: time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	defer env.Close(ctx)

	c := schedule.NewClient(env.Client())
	err = c.Create(ctx, "daily-report", schedule.Options{
		Spec:   schedule.Spec{Cron: []string{"0 9 * * MON-FRI"}, TimeZone: "America/New_York"},
		Action: schedule.Action{Orchestration: "Report", Input: "sales", IDPrefix: "report"},
	})
	if err != nil {
		panic(err)
	}
	if err := env.StartOrchestration("a-week", "Wait", 7*24*time.Hour); err != nil {
		panic(err)
	}
	if _, err := env.WaitForOrchestration("a-week"); err != nil {
		panic(err)
	}
	d, err := c.Describe(ctx, "daily-report", schedule.DescribeOptions{NextFires: 1})
	if err != nil {
		panic(err)
	}
	for _, r := range d.Recent {
		fmt.Println(r.Kind, r.RunID)
	}
	fmt.Println("next", d.Next[0])
	// Output:
	// started report@2025-03-10T13:00:00Z
	// started report@2025-03-11T13:00:00Z
	// started report@2025-03-12T13:00:00Z
	// started report@2025-03-13T13:00:00Z
	// started report@2025-03-14T13:00:00Z
	// next 2025-03-17 13:00:00 +0000 UTC
}
