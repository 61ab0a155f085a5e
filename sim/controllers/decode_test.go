package controllers

import (
	"strings"
	"testing"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		into    func() any
		wantErr []string // substrings; none = success
	}{
		{"valid vm", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"a","creationTimestamp":null,"labels":{"x":"y"}},
			"spec":{"runStrategy":"Always","template":{"metadata":{"creationTimestamp":null},"spec":{"nodeSelector":{"a":"b"},
			"domain":{"resources":{"requests":{"memory":"1Gi"}},"devices":{"interfaces":[{"name":"n","bridge":{}}]}},
			"dnsConfig":{"nameservers":["10.0.0.1"]}}}}}`,
			func() any { return &kubevirtv1.VirtualMachine{} }, nil},
		{"unknown top-level spec field", `{"spec":{"runStrategyy":"Always"}}`,
			func() any { return &kubevirtv1.VirtualMachine{} }, []string{`unknown field "spec.runStrategyy"`}},
		{"unknown field behind a custom UnmarshalJSON", `{"spec":{"template":{"spec":{"nodeSelectr":{"a":"b"},"domain":{"devices":{}}}}}}`,
			func() any { return &kubevirtv1.VirtualMachine{} }, []string{`unknown field "spec.template.spec.nodeSelectr"`}},
		{"wrong case is unknown", `{"spec":{"NodeSelector":{"a":"b"},"domain":{"devices":{}}}}`,
			func() any { return &kubevirtv1.VirtualMachineInstance{} }, []string{`unknown field "spec.NodeSelector"`}},
		{"unknown inside a list", `{"spec":{"domain":{"devices":{"disks":[{"name":"d","disk":{"buss":"virtio"}}]}}}}`,
			func() any { return &kubevirtv1.VirtualMachineInstance{} }, []string{`unknown field "spec.domain.devices.disks[0].disk.buss"`}},
		{"all problems at once", `{"spec":{"a":1,"domain":{"b":2,"devices":{}}}}`,
			func() any { return &kubevirtv1.VirtualMachineInstance{} }, []string{`"spec.a"`, `"spec.domain.b"`}},
		{"wrong type", `{"spec":{"nodeSelector":"zone-a","domain":{"devices":{}}}}`,
			func() any { return &kubevirtv1.VirtualMachineInstance{} }, []string{"cannot unmarshal string", "map[string]string"}},
		{"duplicate field", `{"spec":{"publicKey":"a","publicKey":"b"}}`,
			func() any { return &harvesterv1.KeyPair{} }, []string{`duplicate field "spec.publicKey"`}},
		{"opaque values are not walked", `{"metadata":{"name":"x","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"domain":{"devices":{},
			"resources":{"requests":{"memory":"1Gi"}}},"volumes":[{"name":"c","cloudInitNoCloud":{"userData":"x"}}]}}`,
			func() any { return &kubevirtv1.VirtualMachineInstance{} }, nil},
		{"image", `{"metadata":{"name":"i"},"spec":{"displayName":"i","sourceType":"download","url":"http://x","urll":"y"}}`,
			func() any { return &harvesterv1.VirtualMachineImage{} }, []string{`unknown field "spec.urll"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeStrictJSON([]byte(tt.data), tt.into())
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Count(err.Error(), "unknown field") > len(tt.wantErr) {
				t.Errorf("unknown fields reported twice: %v", err)
			}
		})
	}
}
