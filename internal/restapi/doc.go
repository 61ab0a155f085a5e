// Package restapi is the one typed REST client of the driver and of
// guest/credentials: the kinds they call (core/v1 Secrets, volumes,
// events, namespaces and ServiceAccounts with tokens; rbac/v1 bindings;
// authorization/v1 reviews; storage/v1 StorageClasses; KubeVirt VMs and
// VMIs), each behind a small interface (Resource) with the signatures of
// client-go's generated clients. Its scheme registers only those groups:
// client-go's clientset and KubeVirt's register every Kubernetes API group
// and link their generated clients, apply configurations and OpenAPI
// support, which made up about half of the driver binary.
//
// Unit tests use restapifake, which serves an Interface from client-go's
// and KubeVirt's fake clientsets.
package restapi
