package harvester

// FinalizerVMCleanupPVCs is the finalizer of Harvester's VM OnRemove
// handler (pkg/controller/master/virtualmachine/register.go,
// VMController.CleanupPVCAndSnapshot; wrangler prefixes its handlers'
// names with wrangler.cattle.io/). That handler deletes the volumes the
// VM's harvesterhci.io/removedPersistentVolumeClaims annotation names.
// Wrangler adds the finalizer when the controller first sees the VM, and
// Kubernetes refuses a new finalizer on an object being deleted: a VM
// deleted before Harvester's controllers saw it (while they were down or
// restarting) goes without its volumes being deleted.
const FinalizerVMCleanupPVCs = "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot"
