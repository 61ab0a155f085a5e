package tunables

import (
	"strings"
	"testing"
	"time"
)

func TestOver(t *testing.T) {
	start := Values{NodeMonitorGracePeriod: 50 * time.Second, MigrationDuration: time.Second, ScheduleDelay: 200 * time.Millisecond}
	cases := []struct {
		name    string
		data    map[string]string
		want    Values
		errHave []string // each must appear in the error; none: no error
	}{
		{"nothing set keeps the start", nil, start, nil},
		{"a key replaces its value only", map[string]string{NodeMonitorGracePeriod: "8s", IPDelay: " 1s "},
			Values{NodeMonitorGracePeriod: 8 * time.Second, MigrationDuration: time.Second, ScheduleDelay: 200 * time.Millisecond, IPDelay: time.Second}, nil},
		{"every problem at once", map[string]string{"grace": "8s", MigrationDuration: "-1s", NodeMonitorGracePeriod: "2s", BootDelay: "soon"},
			start, []string{`"grace" is no tunable: use one of node-monitor-grace-period, migration-duration`,
				`migration-duration="-1s": -1s is negative`, `node-monitor-grace-period="2s": 2s is too short: use 4s or more`,
				`boot-delay="soon": time: invalid duration`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Over(start, c.data)
			if len(c.errHave) == 0 {
				if err != nil || got != c.want {
					t.Fatalf("Over = %+v, %v; want %+v, nil", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Over = %+v, nil; want an error", got)
			}
			for _, s := range c.errHave {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestValidateNamesEachFlag(t *testing.T) {
	err := Values{NodeMonitorGracePeriod: time.Second, ScheduleDelay: -time.Second}.Validate()
	for _, s := range []string{"--node-monitor-grace-period: 1s is too short", "--schedule-delay: -1s is negative"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate: %v, want it to say %q", err, s)
		}
	}
}
