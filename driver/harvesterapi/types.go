package harvesterapi

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The few fields of Harvester's objects (harvesterhci.io/v1beta1) the
// driver reads, decoded from the dynamic client's answers. They are
// declared here rather than imported: Harvester's API package links
// wrangler, lasso and the Prometheus client into the binary for types of
// which the driver reads a handful of fields.

// Condition is a Harvester status condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Setting is a Setting (cluster-scoped), e.g. server-version.
type Setting struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Value             string `json:"value,omitempty"`
	Default           string `json:"default,omitempty"`
}

// Current is the setting's value, or its default when none is set.
func (s *Setting) Current() string {
	if s.Value != "" {
		return s.Value
	}
	return s.Default
}

// Image is a VirtualMachineImage.
type Image struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		StorageClassName string      `json:"storageClassName,omitempty"`
		VirtualSize      int64       `json:"virtualSize,omitempty"`
		Conditions       []Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// KeyPair is a KeyPair.
type KeyPair struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PublicKey string `json:"publicKey"`
	} `json:"spec"`
	Status struct {
		Conditions []Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// ConditionTrue reports whether the condition of type t is True, and its
// message.
func ConditionTrue(conds []Condition, t string) (bool, string) {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == "True", c.Message
		}
	}
	return false, ""
}

// MessageSuffix is a condition's message (ConditionTrue) as the end of
// a sentence, ": message", or "" when it has none.
func MessageSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
