package vmspec

import (
	"encoding/json"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, append(b, '\n'))
}

// planOf parses c's JSON flags and plans the machine's VM.
func planOf(t *testing.T, c config.Config, machineName string, images map[string]ImageFacts) (VMPlan, error) {
	t.Helper()
	in, err := config.ParseInputs(c)
	if err != nil {
		t.Fatalf("parse inputs: %v", err)
	}
	return PlanFromConfig(c, in, machineName, images)
}
