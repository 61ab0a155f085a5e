package sim

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Structural schemas of Harvester's loadbalancer.harvesterhci.io/v1beta1
// kinds: the apiserver prunes fields these do not list, as on Harvester.

func sString() apiextv1.JSONSchemaProps { return apiextv1.JSONSchemaProps{Type: "string"} }

func sEnum(values ...string) apiextv1.JSONSchemaProps {
	s := sString()
	for _, v := range values {
		s.Enum = append(s.Enum, apiextv1.JSON{Raw: []byte(`"` + v + `"`)})
	}
	return s
}

func sInt() apiextv1.JSONSchemaProps { return apiextv1.JSONSchemaProps{Type: "integer"} }

func sObject(props map[string]apiextv1.JSONSchemaProps, required ...string) apiextv1.JSONSchemaProps {
	return apiextv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
}

func sArray(items apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	return apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &items}}
}

func sMap(values apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	return apiextv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}}
}

func sConditions() apiextv1.JSONSchemaProps {
	return sArray(sObject(map[string]apiextv1.JSONSchemaProps{
		"type": sString(), "status": sString(), "lastUpdateTime": sString(), "lastTransitionTime": sString(),
		"reason": sString(), "message": sString(),
	}))
}

// topLevel wraps spec and status into an object schema.
func topLevel(spec, status apiextv1.JSONSchemaProps) *apiextv1.JSONSchemaProps {
	s := sObject(map[string]apiextv1.JSONSchemaProps{
		"apiVersion": sString(), "kind": sString(), "metadata": {Type: "object"},
		"spec": spec, "status": status,
	})
	return &s
}

func loadBalancerSchema() *apiextv1.JSONSchemaProps {
	spec := sObject(map[string]apiextv1.JSONSchemaProps{
		"description":  sString(),
		"workloadType": sEnum("vm", "cluster"),
		"ipam":         sEnum("pool", "dhcp"),
		"ipPool":       sString(),
		"listeners": sArray(sObject(map[string]apiextv1.JSONSchemaProps{
			"name": sString(), "port": sInt(), "protocol": sString(), "backendPort": sInt(),
		})),
		"backendServerSelector": sMap(sArray(sString())),
		"healthCheck": sObject(map[string]apiextv1.JSONSchemaProps{
			"port": sInt(), "successThreshold": sInt(), "failureThreshold": sInt(),
			"periodSeconds": sInt(), "timeoutSeconds": sInt(),
		}),
	})
	status := sObject(map[string]apiextv1.JSONSchemaProps{
		"address": sString(),
		"allocatedAddress": sObject(map[string]apiextv1.JSONSchemaProps{
			"ipPool": sString(), "ip": sString(), "mask": sString(), "gateway": sString(),
		}),
		"backendServers": sArray(sString()),
		"conditions":     sConditions(),
	})
	return topLevel(spec, status)
}

func ipPoolSchema() *apiextv1.JSONSchemaProps {
	spec := sObject(map[string]apiextv1.JSONSchemaProps{
		"description": sString(),
		"ranges": sArray(sObject(map[string]apiextv1.JSONSchemaProps{
			"subnet": sString(), "rangeStart": sString(), "rangeEnd": sString(), "gateway": sString(),
		}, "subnet")),
		"selector": sObject(map[string]apiextv1.JSONSchemaProps{
			"priority": sInt(), "network": sString(),
			"scope": sArray(sObject(map[string]apiextv1.JSONSchemaProps{
				"project": sString(), "namespace": sString(), "guestCluster": sString(),
			})),
		}),
	}, "ranges")
	status := sObject(map[string]apiextv1.JSONSchemaProps{
		"total": sInt(), "available": sInt(), "lastAllocated": sString(),
		"allocated": sMap(sString()), "allocatedHistory": sMap(sString()),
		"conditions": sConditions(),
	}, "total", "available")
	return topLevel(spec, status)
}
