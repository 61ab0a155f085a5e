package harvesterapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Every Harvester API call of the driver is one method here, with the
// per-call deadline applied and errors named after the operation ("get VM
// default/m1: ..."; a 401 becomes the Options' credential-rejected error).
// Gets return the API's NotFound (test it with apierrors.IsNotFound, or use
// Absent); deletes count NotFound as done.

// do runs one API call with the per-call deadline and names its error.
// In fail-fast mode (pre-create), once a call failed at the connection
// level every later call returns that failure without trying.
func do[T any](ctx context.Context, a *API, op string, fn func(context.Context) (T, error)) (T, error) {
	if a.unreachable != nil {
		var zero T
		return zero, a.unreachable
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	v, err := fn(ctx)
	err = a.explain(op, err)
	a.noteUnreachable(err)
	return v, err
}

// Absent turns the NotFound of a get of the object called name into (nil,
// nil). Only the API server's answer that this object does not exist
// counts: a 404 without the object's name (a resource the server does not
// serve, a proxy's page) stays an error.
func Absent[T any](name string, obj *T, err error) (*T, error) {
	if ObjectNotFound(err, name) {
		return nil, nil
	}
	return obj, err
}

// ObjectNotFound reports whether err is the API server's NotFound for the
// object called name.
func ObjectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

func ref(ns, name string) string { return ns + "/" + name }

// update reads, changes and writes one object with the per-call deadline,
// retrying on conflicts; mutate reports whether it changed anything.
func update[T any](ctx context.Context, a *API, op string, get func(context.Context) (T, error), mutate func(T) (bool, error), put func(context.Context, T) (T, error)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
		defer cancel()
		obj, err := get(c)
		if err != nil {
			return err
		}
		if changed, err := mutate(obj); err != nil || !changed {
			return err
		}
		_, err = put(c, obj)
		return err
	})
	return a.explain(op, err)
}

// remove deletes the object kind ns/name, with a UID precondition when uid
// is set (so a new object of the same name is never hit) and grace when
// set. NotFound, and a UID conflict, mean the object is already gone: done
// (and NotFound is remembered, see Seen.Gone).
func remove(ctx context.Context, a *API, kind, ns, name string, uid types.UID, grace *int64, del func(context.Context, metav1.DeleteOptions) error) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: grace}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	a.seen.deleting(kind, ns, name)
	_, err := do(ctx, a, "delete "+kind+" "+ref(ns, name), func(c context.Context) (struct{}, error) { return struct{}{}, del(c, opts) })
	if apierrors.IsNotFound(a.seen.noteAbsent(kind, ns, name, err)) || (uid != "" && apierrors.IsConflict(err)) {
		return nil
	}
	return err
}

// VirtualMachines.

func (a *API) GetVM(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachine, error) {
	obj, err := do(ctx, a, "get VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindVM, ns, name, err)
}

func (a *API) CreateVM(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	a.seen.created(KindVM, vm.Namespace, vm.Name)
	return do(ctx, a, "create VM "+ref(vm.Namespace, vm.Name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(vm.Namespace).Create(c, vm, metav1.CreateOptions{})
	})
}

// UpdateVM changes the VM with mutate (retrying on conflicts); purpose
// names the change in the error.
func (a *API) UpdateVM(ctx context.Context, ns, name, purpose string, mutate func(*kubevirtv1.VirtualMachine) (bool, error)) error {
	vms := a.kube.VirtualMachines(ns)
	get := func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return vms.Get(c, name, metav1.GetOptions{})
	}
	put := func(c context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		return vms.Update(c, vm, metav1.UpdateOptions{})
	}
	a.seen.forgetMachine()
	return update(ctx, a, purpose+" (update VM "+ref(ns, name)+")", get, mutate, put)
}

// PatchVMAnnotations sets annotations on the VM of that UID with one merge
// patch (the UID in the patch makes it fail on any other VM of the name)
// and returns the patched VM.
func (a *API) PatchVMAnnotations(ctx context.Context, ns, name string, uid types.UID, annotations map[string]string) (*kubevirtv1.VirtualMachine, error) {
	a.seen.forgetMachine()
	patch, err := metaPatch(uid, map[string]any{"annotations": annotations})
	if err != nil {
		return nil, err
	}
	return do(ctx, a, "annotate VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
}

// metaPatch is a JSON merge patch of metadata fields that applies only to
// the object of that UID.
func metaPatch(uid types.UID, fields map[string]any) ([]byte, error) {
	meta := map[string]any{"uid": uid}
	for k, v := range fields {
		meta[k] = v
	}
	b, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return b, nil
}

func (a *API) DeleteVM(ctx context.Context, ns, name string, uid types.UID) error {
	a.seen.forgetMachine()
	return remove(ctx, a, KindVM, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.VirtualMachines(ns).Delete(c, name, o)
	})
}

// VirtualMachineInstances.

func (a *API) GetVMI(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	obj, err := do(ctx, a, "get VMI "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachineInstance, error) {
		return a.kube.VirtualMachineInstances(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindVMI, ns, name, err)
}

// DeleteVMI deletes the VMI of that UID (grace nil: the default period).
func (a *API) DeleteVMI(ctx context.Context, ns, name string, uid types.UID, grace *int64) error {
	a.seen.forgetMachine()
	return remove(ctx, a, KindVMI, ns, name, uid, grace, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.VirtualMachineInstances(ns).Delete(c, name, o)
	})
}

// Secrets.

func (a *API) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	obj, err := do(ctx, a, "get Secret "+ref(ns, name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindSecret, ns, name, err)
}

// GetServiceAccount reads a ServiceAccount.
func (a *API) GetServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return do(ctx, a, "get ServiceAccount "+ref(ns, name), func(c context.Context) (*corev1.ServiceAccount, error) {
		return a.kube.ServiceAccounts(ns).Get(c, name, metav1.GetOptions{})
	})
}

// GetRoleBinding reads a RoleBinding.
func (a *API) GetRoleBinding(ctx context.Context, ns, name string) (*rbacv1.RoleBinding, error) {
	return do(ctx, a, "get RoleBinding "+ref(ns, name), func(c context.Context) (*rbacv1.RoleBinding, error) {
		return a.kube.RoleBindings(ns).Get(c, name, metav1.GetOptions{})
	})
}

func (a *API) CreateSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	a.seen.created(KindSecret, s.Namespace, s.Name)
	return do(ctx, a, "create Secret "+ref(s.Namespace, s.Name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(s.Namespace).Create(c, s, metav1.CreateOptions{})
	})
}

// SetSecretOwners sets the owner references of the Secret of that UID
// with one merge patch (any other Secret of the name is not changed).
func (a *API) SetSecretOwners(ctx context.Context, ns, name string, uid types.UID, owners []metav1.OwnerReference) error {
	patch, err := metaPatch(uid, map[string]any{"ownerReferences": owners})
	if err != nil {
		return err
	}
	_, err = do(ctx, a, "set the owner of Secret "+ref(ns, name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	return err
}

func (a *API) DeleteSecret(ctx context.Context, ns, name string, uid types.UID) error {
	return remove(ctx, a, KindSecret, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.Secrets(ns).Delete(c, name, o)
	})
}

// PersistentVolumeClaims (the machine's volumes).

func (a *API) GetPVC(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	obj, err := do(ctx, a, "get volume "+ref(ns, name), func(c context.Context) (*corev1.PersistentVolumeClaim, error) {
		return a.kube.PersistentVolumeClaims(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindPVC, ns, name, err)
}

func (a *API) ListPVCs(ctx context.Context, ns, selector string) (*corev1.PersistentVolumeClaimList, error) {
	return do(ctx, a, "list volumes in "+ns+" labelled "+selector, func(c context.Context) (*corev1.PersistentVolumeClaimList, error) {
		return a.kube.PersistentVolumeClaims(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
}

// StreamPVCs reads the PVCs of ns matching selector with one watch that
// streams their state first and goes on with their changes (for
// Stream.WaitGone): a list and a watch in one request. The error wraps
// kubeapi.ErrWatchEnded when the server does not stream: use ListPVCs.
func (a *API) StreamPVCs(ctx context.Context, ns, selector string) (*kubeapi.Stream, []corev1.PersistentVolumeClaim, error) {
	initial := a.opts.CallTimeout
	if initial <= 0 {
		initial = 30 * time.Second
	}
	s, err := kubeapi.OpenStream(ctx, a.PVCs(ns), selector, initial)
	if err != nil {
		return nil, nil, err
	}
	out := make([]corev1.PersistentVolumeClaim, 0, len(s.Items))
	for _, it := range s.Items {
		if p, ok := it.(*corev1.PersistentVolumeClaim); ok {
			out = append(out, *p)
		}
	}
	return s, out, nil
}

func (a *API) DeletePVC(ctx context.Context, ns, name string, uid types.UID) error {
	return remove(ctx, a, KindPVC, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.PersistentVolumeClaims(ns).Delete(c, name, o)
	})
}

// Cluster-scoped objects, reviews and events.

func (a *API) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return do(ctx, a, "get namespace "+name, func(c context.Context) (*corev1.Namespace, error) {
		return a.kube.Namespaces().Get(c, name, metav1.GetOptions{})
	})
}

// ListResourceQuotas lists the namespace's ResourceQuotas (what a new VM
// must fit into).
func (a *API) ListResourceQuotas(ctx context.Context, ns string) (*corev1.ResourceQuotaList, error) {
	return do(ctx, a, "list resource quotas in "+ns, func(c context.Context) (*corev1.ResourceQuotaList, error) {
		return a.kube.ResourceQuotas(ns).List(c, metav1.ListOptions{})
	})
}

// ListNodes lists the hosts (their allocatable vGPU profiles).
func (a *API) ListNodes(ctx context.Context) (*corev1.NodeList, error) {
	return do(ctx, a, "list hosts", func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{})
	})
}

// GetHost reads one host by name with a list of one (the credential may
// list hosts, not get them); nil when there is none of that name.
func (a *API) GetHost(ctx context.Context, name string) (*corev1.Node, error) {
	list, err := do(ctx, a, "read host "+name, func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// HostArch is the hosts' architecture: the first host's
// kubernetes.io/arch label (a Harvester cluster's hosts share one), read
// with a list of one.
func (a *API) HostArch(ctx context.Context) (string, error) {
	list, err := do(ctx, a, "list hosts", func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{Limit: 1})
	})
	if err != nil || len(list.Items) == 0 {
		return "", err
	}
	return list.Items[0].Labels[corev1.LabelArchStable], nil
}

func (a *API) GetStorageClass(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	return do(ctx, a, "get storage class "+name, func(c context.Context) (*storagev1.StorageClass, error) {
		return a.kube.StorageClasses().Get(c, name, metav1.GetOptions{})
	})
}

// RulesReview asks with a SelfSubjectRulesReview what the credential may
// do in namespace ns.
func (a *API) RulesReview(ctx context.Context, ns string) (*authv1.SubjectRulesReviewStatus, error) {
	review := &authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	res, err := do(ctx, a, "review the credential's permissions in namespace "+ns, func(c context.Context) (*authv1.SelfSubjectRulesReview, error) {
		return a.kube.SelfSubjectRulesReviews().Create(c, review, metav1.CreateOptions{})
	})
	if err != nil {
		return nil, err
	}
	return &res.Status, nil
}

// Allowed asks with a SelfSubjectAccessReview whether the credential may do
// what attrs say; what names it in the error.
func (a *API) Allowed(ctx context.Context, attrs authv1.ResourceAttributes, what string) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := do(ctx, a, "check permission "+what, func(c context.Context) (*authv1.SelfSubjectAccessReview, error) {
		return a.kube.SelfSubjectAccessReviews().Create(c, review, metav1.CreateOptions{})
	})
	return err == nil && res.Status.Allowed, err
}

// ListEvents lists the events about objects called involved.
func (a *API) ListEvents(ctx context.Context, ns, involved string) ([]corev1.Event, error) {
	list, err := do(ctx, a, "list events of "+ref(ns, involved), func(c context.Context) (*corev1.EventList, error) {
		return a.kube.Events(ns).List(c, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", involved).String(),
		})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Harvester objects (through the dynamic client).

func getDynamic[T any](ctx context.Context, a *API, op string, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
	return do(ctx, a, op, func(c context.Context) (*T, error) {
		r := a.dyn.Resource(gvr)
		get := r.Get
		if ns != "" {
			get = r.Namespace(ns).Get
		}
		u, err := get(c, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var out T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &out); err != nil {
			return nil, fmt.Errorf("decode %s: %w", gvr.Resource, err)
		}
		return &out, nil
	})
}

// ServerVersion returns Harvester's Setting server-version: its value is
// the version, its UID identifies the cluster.
func (a *API) ServerVersion(ctx context.Context) (*Setting, error) {
	return getDynamic[Setting](ctx, a, "read Harvester setting "+ServerVerID, GVRSetting, "", ServerVerID)
}

// GetSetting reads a Harvester setting.
func (a *API) GetSetting(ctx context.Context, name string) (*Setting, error) {
	return getDynamic[Setting](ctx, a, "read Harvester setting "+name, GVRSetting, "", name)
}

// GetImage reads an image once per process (see Seen).
func (a *API) GetImage(ctx context.Context, ns, name string) (*Image, error) {
	op := "get image " + ref(ns, name)
	return readOnce(&a.seen, op, func() (*Image, error) { return getDynamic[Image](ctx, a, op, GVRImage, ns, name) })
}

// GetKeyPair reads a key pair once per process (see Seen).
func (a *API) GetKeyPair(ctx context.Context, ns, name string) (*KeyPair, error) {
	op := "get key pair " + ref(ns, name)
	return readOnce(&a.seen, op, func() (*KeyPair, error) { return getDynamic[KeyPair](ctx, a, op, GVRKeyPair, ns, name) })
}

// GetNetwork checks that the network attachment definition exists and
// returns its labels (managed DHCP labels the networks it serves).
func (a *API) GetNetwork(ctx context.Context, ns, name string) (map[string]string, error) {
	u, err := do(ctx, a, "get network "+ref(ns, name), func(c context.Context) (*unstructured.Unstructured, error) {
		return a.dyn.Resource(GVRNetwork).Namespace(ns).Get(c, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return u.GetLabels(), nil
}
