// Stand-in for managed DHCP, vm-dhcp-controller main at c3042d6, the v1.9
// line: the IPPool, VM and vmnetcfg controllers for a pool's network. It
// follows
// https://github.com/harvester/vm-dhcp-controller/blob/c3042d6cff7d939b6d939d2f6ef2b019ba3a0870/pkg/controller/vm/controller.go.

package controllers

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// The simulated vm-dhcp-controller: one reconcile per managed-DHCP IPPool
// does what the add-on's IPPool, VM and vmnetcfg controllers do for that
// pool's network.
const (
	// AnnStaticIPSupport on an IPPool set to "unsupported" plays an add-on
	// before the v1.9 line: the static-ip annotation is ignored.
	AnnStaticIPSupport = "sim.harvesterhci.io/static-ip-annotation"
	// dhcpFinalizer releases a vmnetcfg's addresses before it goes.
	dhcpFinalizer = "wrangler.cattle.io/vm-dhcp-vmnetcfg-controller"
)

var gvrNAD = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// dhcpPoolKeys lists every managed-DHCP IPPool's key.
func (s *sim) dhcpPoolKeys(string) []string { return genericKeys(s.dhcpPools, "") }

// reconcileDHCPPool runs the add-on for one IPPool.
func (s *sim) reconcileDHCPPool(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.dhcpPools, ns, name)
	if u == nil || u.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	var pool dhcpapi.IPPool
	if err := fromUnstructured(u, &pool); err != nil {
		return 0, fmt.Errorf("decode IPPool %s: %w", key, err)
	}
	network := pool.Spec.NetworkName
	if err := s.labelNetwork(ctx, network, ns, name); err != nil {
		return 0, err
	}
	static := u.GetAnnotations()[AnnStaticIPSupport] != "unsupported"
	if err := s.ensureNetworkConfigs(ctx, network, static); err != nil {
		return 0, err
	}
	allocated, err := s.allocatePool(ctx, pool)
	if err != nil {
		return 0, err
	}
	st := copyPoolStatus(pool.Status)
	if allocated != nil {
		used := 0
		for _, v := range allocated {
			if v != dhcpapi.Excluded && v != dhcpapi.Reserved {
				used++
			}
		}
		addrs, _ := poolAddresses(pool.Spec.IPv4Config)
		st.IPv4 = &dhcpapi.IPv4Status{Allocated: allocated, Used: used, Available: len(addrs) - len(allocated)}
	}
	agent := "True"
	agentMsg := ""
	if s.faults().Match(fault.DHCPAgentDown, ns, name) != "" {
		agent, agentMsg = "False", "agent pod default/"+name+"-agent is not ready (fault "+fault.DHCPAgentDown+")"
	}
	st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondRegistered, "True", "")
	st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondCacheReady, "True", "")
	st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondAgentReady, agent, agentMsg)
	st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondStopped, "False", "")
	_, err = s.writeStatus(ctx, dhcpapi.GVRIPPool, u, pool.Status, st)
	return 0, err
}

// labelNetwork puts the pool's labels on the network it serves.
func (s *sim) labelNetwork(ctx context.Context, network, poolNS, poolName string) error {
	netNS, netName, err := hv.ParseRef(network, "")
	if err != nil {
		return nil // an invalid networkName serves nothing
	}
	_, err = s.updateMeta(ctx, gvrNAD, netNS, netName, func(n *unstructured.Unstructured) bool {
		l := n.GetLabels()
		if l[dhcpapi.LabelIPPoolNamespace] == poolNS && l[dhcpapi.LabelIPPoolName] == poolName {
			return false
		}
		if l == nil {
			l = map[string]string{}
		}
		l[dhcpapi.LabelIPPoolNamespace], l[dhcpapi.LabelIPPoolName] = poolNS, poolName
		n.SetLabels(l)
		return true
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// vmNICsOn lists a VM's NICs on network with a known MAC: NIC name -> MAC.
func vmNICsOn(vm *kubevirtv1.VirtualMachine, network string) map[string]string {
	out := map[string]string{}
	if vm.Spec.Template == nil {
		return out
	}
	spec := vm.Spec.Template.Spec
	for _, n := range spec.Networks {
		if n.Multus == nil || qualify(n.Multus.NetworkName, vm.Namespace) != network {
			continue
		}
		for _, i := range spec.Domain.Devices.Interfaces {
			if i.Name == n.Name && i.MacAddress != "" {
				out[i.Name] = strings.ToLower(i.MacAddress)
			}
		}
	}
	return out
}

func qualify(network, ns string) string {
	if strings.Contains(network, "/") {
		return network
	}
	return ns + "/" + network
}

// ensureNetworkConfigs makes (or updates) the vmnetcfg of every VM with a
// NIC on network, named after the VM and owned by it.
func (s *sim) ensureNetworkConfigs(ctx context.Context, network string, static bool) error {
	list, _ := s.vms.List(labels.Everything())
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		var vm kubevirtv1.VirtualMachine
		if fromUnstructured(u, &vm) != nil {
			continue
		}
		nics := vmNICsOn(&vm, network)
		if len(nics) == 0 {
			continue
		}
		var want []dhcpapi.NetworkConfig
		for _, nic := range sortedNICs(nics) {
			c := dhcpapi.NetworkConfig{NetworkName: network, MACAddress: nics[nic]}
			if ip := vm.Annotations[dhcpapi.AnnotationStaticIPPrefix+nic]; ip != "" && static {
				c.IPAddress = &ip
			}
			want = append(want, c)
		}
		if err := s.ensureNetworkConfig(ctx, &vm, network, want); err != nil {
			return err
		}
	}
	return nil
}

func (s *sim) ensureNetworkConfig(ctx context.Context, vm *kubevirtv1.VirtualMachine, network string, want []dhcpapi.NetworkConfig) error {
	cur := getCached(s.netConfigs, vm.Namespace, vm.Name)
	if cur == nil {
		yes := true
		cfg := dhcpapi.VirtualMachineNetworkConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: dhcpapi.Group + "/" + dhcpapi.Version, Kind: "VirtualMachineNetworkConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, Labels: map[string]string{dhcpapi.LabelVMName: vm.Name},
				Finalizers: []string{dhcpFinalizer},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachine",
					Name: vm.Name, UID: vm.UID, Controller: &yes}}},
			Spec: dhcpapi.NetworkConfigSpec{VMName: vm.Name, NetworkConfigs: want},
		}
		m, err := toUnstructured(&cfg)
		if err != nil {
			return err
		}
		_, err = s.dyn.Resource(dhcpapi.GVRNetworkConfig).Namespace(vm.Namespace).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	_, err := s.updateMeta(ctx, dhcpapi.GVRNetworkConfig, vm.Namespace, vm.Name, func(u *unstructured.Unstructured) bool {
		var cfg dhcpapi.VirtualMachineNetworkConfig
		if fromUnstructured(u, &cfg) != nil || u.GetDeletionTimestamp() != nil {
			return false
		}
		var next []dhcpapi.NetworkConfig
		for _, c := range cfg.Spec.NetworkConfigs {
			if c.NetworkName != network {
				next = append(next, c)
			}
		}
		next = append(next, want...)
		if equality.Semantic.DeepEqual(next, cfg.Spec.NetworkConfigs) {
			return false
		}
		cfg.Spec.NetworkConfigs = next
		m, err := toUnstructured(&cfg.Spec)
		if err != nil {
			return false
		}
		u.Object["spec"] = m
		return true
	})
	return err
}

// allocatePool recomputes the pool's allocation over the live vmnetcfgs
// of its network, writes each one's status and releases the addresses of
// those being deleted (removing their finalizer). It returns
// status.ipv4.allocated (nil when the pool's range is invalid).
func (s *sim) allocatePool(ctx context.Context, pool dhcpapi.IPPool) (map[string]string, error) {
	network := pool.Spec.NetworkName
	list, _ := s.netConfigs.List(labels.Everything())
	type ref struct {
		u   *unstructured.Unstructured
		cfg dhcpapi.VirtualMachineNetworkConfig
	}
	var live, gone []ref
	var reqs []dhcpRequest
	var owner []int
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		var cfg dhcpapi.VirtualMachineNetworkConfig
		if !ok || fromUnstructured(u, &cfg) != nil {
			continue
		}
		if u.GetDeletionTimestamp() != nil {
			gone = append(gone, ref{u, cfg})
			continue
		}
		for _, c := range cfg.Spec.NetworkConfigs {
			if c.NetworkName != network {
				continue
			}
			r := dhcpRequest{Config: u.GetNamespace() + "/" + u.GetName(), MAC: strings.ToLower(c.MACAddress)}
			if c.IPAddress != nil {
				r.Want = *c.IPAddress
			}
			for _, st := range cfg.Status.NetworkConfigs {
				if strings.EqualFold(st.MACAddress, c.MACAddress) && st.State == dhcpapi.StateAllocated {
					r.Had = st.AllocatedIPAddress
				}
			}
			reqs = append(reqs, r)
			owner = append(owner, len(live))
		}
		live = append(live, ref{u, cfg})
	}
	allocated, res, err := allocateDHCP(pool.Spec.IPv4Config, reqs)
	if err != nil {
		return nil, nil
	}
	for i, l := range live {
		st := &dhcpapi.NetworkConfigStatus{NetworkConfigs: append([]dhcpapi.NetworkConfigState(nil), l.cfg.Status.NetworkConfigs...), Conditions: append([]dhcpapi.Condition(nil), l.cfg.Status.Conditions...)}
		var kept []dhcpapi.NetworkConfigState
		for _, e := range st.NetworkConfigs {
			if e.NetworkName != network {
				kept = append(kept, e)
			}
		}
		var problems []string
		for j, r := range reqs {
			if owner[j] != i {
				continue
			}
			e := dhcpapi.NetworkConfigState{MACAddress: r.MAC, NetworkName: network, State: dhcpapi.StatePending}
			if res[j].Address != "" {
				e.AllocatedIPAddress, e.State = res[j].Address, dhcpapi.StateAllocated
			} else {
				problems = append(problems, res[j].Problem)
			}
			kept = append(kept, e)
		}
		st.NetworkConfigs = kept
		if len(problems) > 0 {
			st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondAllocated, "False", strings.Join(problems, "; "))
		} else {
			st.Conditions = setDHCPCondition(st.Conditions, dhcpapi.CondAllocated, "True", "")
		}
		if _, err := s.writeStatus(ctx, dhcpapi.GVRNetworkConfig, l.u, l.cfg.Status, st); err != nil {
			return nil, err
		}
	}
	for _, g := range gone {
		if _, err := s.updateMeta(ctx, dhcpapi.GVRNetworkConfig, g.u.GetNamespace(), g.u.GetName(), func(u *unstructured.Unstructured) bool {
			if !hasString(u.GetFinalizers(), dhcpFinalizer) {
				return false
			}
			u.SetFinalizers(without(u.GetFinalizers(), dhcpFinalizer))
			return true
		}); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return allocated, nil
}

// setDHCPCondition sets a condition, keeping its times when unchanged.
func setDHCPCondition(conds []dhcpapi.Condition, t, status, msg string) []dhcpapi.Condition {
	now := metav1.Now()
	for i, c := range conds {
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Message == msg {
			return conds
		}
		out := append([]dhcpapi.Condition(nil), conds...)
		out[i] = dhcpapi.Condition{Type: t, Status: status, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
		return out
	}
	return append(conds, dhcpapi.Condition{Type: t, Status: status, Message: msg, LastUpdateTime: now, LastTransitionTime: now})
}

func sortedNICs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// managedAddresses is what managed DHCP gives the VMI's NICs: for each
// interface on a network a pool serves, the address allocated to its MAC
// (nil entries elsewhere). With the pool's agent down, only a lease the
// guest already had stays.
func (s *sim) managedAddresses(c *vmiContext) map[int]string {
	pools, _ := s.dhcpPools.List(labels.Everything())
	if len(pools) == 0 {
		return nil
	}
	byNetwork := map[string]*dhcpapi.IPPool{}
	down := map[string]bool{}
	for _, o := range pools {
		u, ok := o.(*unstructured.Unstructured)
		var p dhcpapi.IPPool
		if !ok || fromUnstructured(u, &p) != nil {
			continue
		}
		byNetwork[p.Spec.NetworkName] = &p
		down[p.Spec.NetworkName] = s.faults().Match(fault.DHCPAgentDown, u.GetNamespace(), u.GetName()) != ""
	}
	had := map[string]string{}
	for _, i := range c.old.Interfaces {
		had[i.Name] = i.IP
	}
	out := map[int]string{}
	ns := c.u.GetNamespace()
	for i, name := range vmiInterfaceNames(&c.vmi.Spec) {
		network := ""
		for _, n := range c.vmi.Spec.Networks {
			if n.Name == name && n.Multus != nil {
				network = qualify(n.Multus.NetworkName, ns)
			}
		}
		p := byNetwork[network]
		if p == nil {
			continue
		}
		mac := strings.ToLower(macFor(&c.vmi.Spec, c.key, name))
		lease := ""
		if p.Status.IPv4 != nil {
			for ip, m := range p.Status.IPv4.Allocated {
				if hw, err := net.ParseMAC(m); err == nil && strings.EqualFold(hw.String(), mac) {
					lease = ip
				}
			}
		}
		if down[network] && had[name] != lease {
			lease = ""
		}
		out[i] = lease
	}
	return out
}

func copyPoolStatus(st dhcpapi.IPPoolStatus) *dhcpapi.IPPoolStatus {
	out := &dhcpapi.IPPoolStatus{Conditions: append([]dhcpapi.Condition(nil), st.Conditions...)}
	if st.IPv4 != nil {
		v := *st.IPv4
		out.IPv4 = &v
	}
	return out
}
