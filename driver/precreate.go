package driver

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rancher/machine/libmachine/log"
	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// permission is one verb on one resource the driver uses.
type permission struct {
	verb, group, resource string
	name                  string // one object only (for example bind on one ClusterRole)
	clusterScoped         bool
}

// requiredPermissions lists every verb the driver uses. Reads used only for
// checks and diagnostics (the server-version setting, namespaces, storage
// classes, events) are not required: when they are forbidden the check is
// skipped with a warning.
func requiredPermissions() []permission {
	var out []permission
	add := func(group, resource string, cluster bool, verbs ...string) {
		for _, v := range verbs {
			out = append(out, permission{verb: v, group: group, resource: resource, clusterScoped: cluster})
		}
	}
	add("kubevirt.io", "virtualmachines", false, "get", "list", "watch", "create", "update", "delete")
	add("kubevirt.io", "virtualmachineinstances", false, "get", "list", "watch", "delete")
	add("", "secrets", false, "get", "list", "watch", "create", "update", "delete")
	add("", "persistentvolumeclaims", false, "get", "list", "watch", "delete")
	add("harvesterhci.io", "virtualmachineimages", false, "get")
	add("harvesterhci.io", "keypairs", false, "get")
	add("k8s.cni.cncf.io", "network-attachment-definitions", false, "get")
	return out
}

// PreCreateCheck checks everything Create needs and reports every problem at
// once: server version, namespace, images (existing and Imported), storage
// classes, networks, key pair (validated), permissions, and that no VM,
// disk volume or cloud-init Secret of the machine's names exists. It
// records the cluster's identity in the machine's state.
func (d *Driver) PreCreateCheck() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	problems := d.recordCluster(ctx, api)
	if len(problems) == 1 && errors.Is(problems[0], ErrCredentialsRejected) {
		return problems[0]
	}
	problems = append(problems, d.checkPermissions(ctx, api)...)

	storageClasses := map[string]string{} // name -> who uses it
	for _, ref := range ImageRefs(d.Config) {
		ns, name, _ := splitNamespaced(ref, d.VMNamespace)
		img, err := api.image(ctx, ns, name)
		if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Sprintf("image %s does not exist (see --%s / --%s)", ref, FlagImageName, FlagDiskInfo), "get image "+ref))
			continue
		}
		if ok, msg := conditionTrue(img.Status.Conditions, "Imported"); !ok {
			problems = append(problems, fmt.Errorf("image %s is not imported yet (condition Imported is not True%s)", ref, suffix(msg)))
		} else if img.Status.StorageClassName == "" {
			problems = append(problems, fmt.Errorf("image %s has no storage class in its status", ref))
		} else {
			storageClasses[img.Status.StorageClassName] = "image " + ref
		}
	}
	if d.DiskInfo != "" {
		if info, err := ParseDiskInfo(d.DiskInfo); err == nil {
			for i, disk := range info.Disks {
				if disk.ImageName == "" && disk.StorageClassName != "" {
					storageClasses[disk.StorageClassName] = fmt.Sprintf("--%s disks[%d]", FlagDiskInfo, i)
				}
			}
		}
	}
	for sc, user := range storageClasses {
		if err := api.call(ctx, func(ctx context.Context) error {
			_, err := api.kube.StorageV1().StorageClasses().Get(ctx, sc, metav1.GetOptions{})
			return err
		}); apierrors.IsForbidden(err) {
			log.Warnf("cannot read storage class %s (forbidden); skipping that check", sc)
		} else if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Sprintf("storage class %q (used by %s) does not exist", sc, user), "get storage class "+sc))
		}
	}

	plan, err := PlanFromConfig(d.Config, d.MachineName, fakeImageFacts(d.Config))
	if err != nil {
		problems = append(problems, err)
	}
	for _, nic := range plan.NICs {
		ns, name, _ := splitNamespaced(nic.Network, d.VMNamespace)
		if err := api.networkExists(ctx, ns, name); err != nil {
			problems = append(problems, notFoundOr(err, fmt.Sprintf("network %s does not exist (see --%s / --%s)", nic.Network, FlagNetworkName, FlagNetworkInfo), "get network "+nic.Network))
		}
	}
	if plan.KeyPair != "" {
		ns, name, _ := splitNamespaced(plan.KeyPair, d.VMNamespace)
		kp, err := api.keyPair(ctx, ns, name)
		if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Sprintf("--%s: key pair %s does not exist", FlagKeyPairName, plan.KeyPair), "get key pair "+plan.KeyPair))
		} else if ok, msg := conditionTrue(kp.Status.Conditions, "validated"); !ok {
			problems = append(problems, fmt.Errorf("--%s: key pair %s is not validated%s", FlagKeyPairName, plan.KeyPair, suffix(msg)))
		}
	}

	if d.SSHPrivateKeyPath != "" {
		if _, err := os.ReadFile(d.SSHPrivateKeyPath); err != nil {
			problems = append(problems, fmt.Errorf("--%s: cannot read the private key: %w", FlagSSHPrivateKeyPath, err))
		}
	}

	problems = append(problems, d.checkNameFree(ctx, api, plan)...)
	return joinProblems("pre-create check failed", dedupeCredentialErrors(problems))
}

// checkNameFree reports every object the machine would create that already
// exists: the VM, a disk's volume (left from an earlier machine of this
// name, it would be booted again) or the cloud-init Secret.
func (d *Driver) checkNameFree(ctx context.Context, api *harvesterAPI, plan VMPlan) []error {
	type object struct {
		kind, name string
		get        func(ctx context.Context) error
	}
	objects := []object{{"VM", d.MachineName, func(c context.Context) error {
		_, err := api.virt.KubevirtV1().VirtualMachines(d.VMNamespace).Get(c, d.MachineName, metav1.GetOptions{})
		return err
	}}}
	for _, disk := range plan.Disks {
		objects = append(objects, object{"volume (PVC)", disk.ClaimName, func(c context.Context) error {
			_, err := api.kube.CoreV1().PersistentVolumeClaims(d.VMNamespace).Get(c, disk.ClaimName, metav1.GetOptions{})
			return err
		}})
	}
	secret := UserDataSecretName(d.MachineName)
	objects = append(objects, object{"cloud-init Secret", secret, func(c context.Context) error {
		_, err := api.kube.CoreV1().Secrets(d.VMNamespace).Get(c, secret, metav1.GetOptions{})
		return err
	}})
	var problems []error
	for _, o := range objects {
		err := api.call(ctx, o.get)
		switch {
		case err == nil:
			problems = append(problems, fmt.Errorf("a %s named %s already exists in namespace %s (left from an earlier machine of this name, or another's); "+
				"choose another machine name or remove it", o.kind, o.name, d.VMNamespace))
		case !apierrors.IsNotFound(err):
			problems = append(problems, apiError(fmt.Sprintf("check that the %s name %s is free", o.kind, o.name), err))
		}
	}
	return problems
}

// checkPermissions asks the API server, with SelfSubjectAccessReviews,
// whether the credential may do every verb the driver uses.
func (d *Driver) checkPermissions(ctx context.Context, api *harvesterAPI) []error {
	var problems []error
	perms := requiredPermissions()
	if d.CloudProvider != "" {
		perms = append(perms, cloudProviderPermissions()...)
	}
	for _, p := range perms {
		review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Verb: p.verb, Group: p.group, Resource: p.resource, Name: p.name},
		}}
		if !p.clusterScoped {
			review.Spec.ResourceAttributes.Namespace = d.VMNamespace
		}
		var res *authv1.SelfSubjectAccessReview
		err := api.call(ctx, func(ctx context.Context) error {
			var err error
			res, err = api.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			return err
		})
		where := "in namespace " + d.VMNamespace
		if p.clusterScoped {
			where = "cluster-wide"
		}
		resource := p.resource
		if p.group != "" {
			resource += "." + p.group
		}
		if p.name != "" {
			resource += " " + p.name
		}
		switch {
		case err != nil:
			problems = append(problems, apiError(fmt.Sprintf("check permission %s %s", p.verb, resource), err))
		case !res.Status.Allowed:
			problems = append(problems, fmt.Errorf("the credential may not %s %s %s", p.verb, resource, where))
		}
	}
	return problems
}

// fakeImageFacts lets PlanFromConfig run before images are resolved.
func fakeImageFacts(c Config) map[string]ImageFacts {
	m := map[string]ImageFacts{}
	for _, ref := range ImageRefs(c) {
		m[ref] = ImageFacts{StorageClassName: "unresolved"}
	}
	return m
}

func notFoundOr(err error, notFound, op string) error {
	if apierrors.IsNotFound(err) {
		return errors.New(notFound)
	}
	return apiError(op, err)
}

// dedupeCredentialErrors keeps a single credential error among problems.
func dedupeCredentialErrors(problems []error) []error {
	var out []error
	for _, p := range problems {
		if errors.Is(p, ErrCredentialsRejected) {
			return []error{p}
		}
		out = append(out, p)
	}
	return out
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
