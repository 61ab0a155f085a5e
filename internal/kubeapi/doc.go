// Package kubeapi is how every tool of this repository talks to a
// Kubernetes API server (Harvester's, a guest cluster's, the simulator's):
// a client configuration from a kubeconfig with the project's QPS and user
// agent, transient failures retried within each call's deadline, the error
// that explains a rejected credential (401), and waiting on one object by
// name with a watch.
package kubeapi
