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

// FinalizerBackfillMAC is the finalizer Harvester v1.8's VM instance
// handler VMController.BackfillObservedNetworkMacAddress keeps on every
// VMI: wrangler names an OnRemove handler's finalizer "wrangler.cattle.io/"
// and the handler's name (wrangler v3 pkg/generic/remove.go), and Harvester
// registers it in pkg/controller/master/virtualmachine/register.go
// (vmControllerBackfillObservedNetworkMac). Its one job, in
// vmi_network_controller.go (updateVMMacAddressFromAnnotation), is to copy
// the instance's MAC addresses onto the VM of the instance's name; it
// returns the VM's NotFound when that VM is gone, so the VM instance of a
// deleted VM keeps the finalizer for ever.
const FinalizerBackfillMAC = "wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress"
