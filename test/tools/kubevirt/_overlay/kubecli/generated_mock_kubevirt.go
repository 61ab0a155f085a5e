// Stands in, through `go build -overlay` (test/tools/build.sh), for
// kubevirt.io/client-go v1.7.0's kubecli/generated_mock_kubevirt.go: a
// gomock file in a non-test file, written against client-go v0.33's
// kubernetes.Interface, which does not compile with the v0.34 this module
// aligns on. virt-api and virt-controller never use the mock; the only
// other mention is kubecli's test helper MockKubevirtClientInstance, which
// needs the type. Embedding the interface is all it takes.

package kubecli

// MockKubevirtClient is a placeholder with no behaviour: every method
// panics on the nil embedded client.
type MockKubevirtClient struct {
	KubevirtClient
}
