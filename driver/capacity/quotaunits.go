package capacity

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// binaryUnits are the suffixes of powers of 1024.
var binaryUnits = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// figures shows the quantities of one quota resource as a user writes
// them: sizes in binary units with at most two decimals (9.9Gi, never
// 10630044057600m), in the unit the quota's hard limit is written in
// (3000Mi: the need as 3011.3Mi) or a smaller one a figure needs; CPU in
// whole cores or millicores; anything else (counts, extended resources) as
// Kubernetes prints it.
type figures struct {
	name corev1.ResourceName
	unit int // the largest binary unit for sizes
}

// figuresOf are the figures of name, sizes in the unit of hard.
func figuresOf(name corev1.ResourceName, hard resource.Quantity) figures {
	f := figures{name: name, unit: len(binaryUnits) - 1}
	if byteResource(name) && hard.Sign() > 0 {
		f.unit = magnitudeUnit(hard)
		if v, ok := hard.AsInt64(); ok {
			for f.unit > 0 && v%(int64(1)<<(10*f.unit)) != 0 {
				f.unit--
			}
		}
	}
	return f
}

// text is one quantity.
func (f figures) text(q resource.Quantity) string {
	switch {
	case q.IsZero():
		return "0"
	case byteResource(f.name):
		u := min(f.unit, magnitudeUnit(q))
		s := strconv.FormatFloat(q.AsApproximateFloat64()/math.Pow(1024, float64(u)), 'f', 2, 64)
		return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") + binaryUnits[u]
	case cpuResource(f.name):
		m := q.MilliValue()
		if m%1000 == 0 {
			return strconv.FormatInt(m/1000, 10)
		}
		return strconv.FormatInt(m, 10) + "m"
	}
	return q.String()
}

// magnitudeUnit is the largest binary unit of which q is at least one.
func magnitudeUnit(q resource.Quantity) int {
	v, u := math.Abs(q.AsApproximateFloat64()), 0
	for u < len(binaryUnits)-1 && v >= 1024 {
		v /= 1024
		u++
	}
	return u
}

// byteResource: the quota resource is a size (memory, storage,
// ephemeral storage, hugepages; also per storage class).
func byteResource(name corev1.ResourceName) bool {
	n := strings.TrimPrefix(strings.TrimPrefix(string(name), corev1.DefaultResourceRequestsPrefix), "limits.")
	if _, res, ok := strings.Cut(string(name), classQuotaInfix); ok {
		n = strings.TrimPrefix(res, corev1.DefaultResourceRequestsPrefix)
	}
	switch corev1.ResourceName(n) {
	case corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(n, corev1.ResourceHugePagesPrefix)
}

// cpuResource: the quota resource is CPU.
func cpuResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceRequestsCPU || name == corev1.ResourceLimitsCPU
}

// countResource: the quota resource counts objects.
func countResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims:
		return true
	}
	return strings.HasPrefix(string(name), "count/") || strings.HasSuffix(string(name), classQuotaInfix+string(corev1.ResourcePersistentVolumeClaims))
}
