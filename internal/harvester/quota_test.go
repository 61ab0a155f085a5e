package harvester

import "testing"

func TestVMMemoryOverhead(t *testing.T) {
	const mi = 1 << 20
	cases := []struct {
		vcpus int64
		ratio string
		want  int64
	}{
		{2, "1", 276 * mi},             // 220Mi processes + 2*8Mi vCPUs + 8Mi IO thread + 32Mi video
		{2, "", 289406976 + 144703000}, // the default 1.5: KubeVirt adds 0.5 of the kilo-scaled value, truncated
		{2, "1.5", 289406976 + 144703000},
		{4, "1", 292 * mi},
		{0, "1", 268 * mi}, // at least one vCPU
		{2, "bad", 289406976 + 144703000},
		{1, "2", 268*mi + 281019000}, // the kilo-scaled value rounds up
	}
	for _, c := range cases {
		got := VMMemoryOverhead(c.vcpus, c.ratio)
		if got.Value() != c.want {
			t.Errorf("VMMemoryOverhead(%d, %q) = %d, want %d", c.vcpus, c.ratio, got.Value(), c.want)
		}
	}
}
