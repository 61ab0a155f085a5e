package driver

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The few fields of Harvester's objects (harvesterhci.io/v1beta1) the
// driver reads, decoded from the dynamic client's answers. They are
// declared here rather than imported: Harvester's API package links
// wrangler, lasso and the Prometheus client into the binary for types of
// which the driver reads a handful of fields.

// hvCondition is a Harvester status condition.
type hvCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// hvSetting is a Setting (cluster-scoped), e.g. server-version.
type hvSetting struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Value             string `json:"value,omitempty"`
	Default           string `json:"default,omitempty"`
}

// hvImage is a VirtualMachineImage.
type hvImage struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		StorageClassName string        `json:"storageClassName,omitempty"`
		VirtualSize      int64         `json:"virtualSize,omitempty"`
		Conditions       []hvCondition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// hvKeyPair is a KeyPair.
type hvKeyPair struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PublicKey string `json:"publicKey"`
	} `json:"spec"`
	Status struct {
		Conditions []hvCondition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}
