package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
	"github.com/duroxide-go/cdb/duroxide"
)

func TestIntervalFiresOncePerDueTime(t *testing.T) {
	reg := durable.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := durable.RegisterOrchestration(reg, "Job", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return in, nil
	}); err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, nil)
	start := env.Now()
	c := NewClient(env.Client())
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: start.Add(10 * time.Minute)},
		Action: Action{Orchestration: "Job", IDPrefix: "job"}}
	if err := c.Create(t.Context(), "s1", o); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), "s1", o); !errors.Is(err, ErrScheduleExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := env.WaitForOrchestration(instanceID("s1")); !errors.Is(err, testenv.ErrStalled) {
		t.Fatalf("wait: %v", err)
	}
	page, err := env.Client().Search(t.Context(), duroxide.InstanceQuery{IDPrefix: "job@"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Instances) != 10 {
		t.Fatalf("runs: %d, want 10", len(page.Instances))
	}
	for i := 1; i <= 10; i++ {
		id := RunID("job", start.Add(time.Duration(i)*time.Minute))
		st, err := env.Client().Status(t.Context(), id)
		if err != nil || st.State != durable.StateCompleted {
			t.Fatalf("%s: %v %v", id, st, err)
		}
	}
	d, err := c.Describe(t.Context(), "s1")
	if err != nil || d.Started != 10 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if err := c.Delete(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Describe(t.Context(), "s1"); !errors.Is(err, ErrScheduleNotFound) {
		t.Fatalf("describe deleted: %v", err)
	}
}
