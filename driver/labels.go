package driver

import "github.com/harvester-kit/harvester-machine/internal/harvester"

// Labels and annotations live in internal/harvester. These names keep the
// driver's files that are not restructured yet (create.go, remove.go,
// vmspec.go) readable; they are references, not copies.
const (
	LabelCreator      = harvester.LabelCreator
	CreatorValue      = harvester.CreatorValue
	LabelGuestCluster = harvester.LabelGuestCluster

	LabelMachineID = harvester.LabelMachineID
	LabelHotplug   = harvester.LabelHotplug

	AnnotationVolumeClaimTemplates = harvester.AnnotationVolumeClaimTemplates
	AnnotationImageID              = harvester.AnnotationImageID
	AnnotationRemovedPVCs          = harvester.AnnotationRemovedPVCs
	AnnotationRemoveAllPVCs        = harvester.AnnotationRemoveAllPVCs
	AnnotationReservedMemory       = harvester.AnnotationReservedMemory
	AnnotationSSHNames             = harvester.AnnotationSSHNames
)

// splitNamespaced splits "<namespace>/<name>" or "<name>" (in defaultNS).
var splitNamespaced = harvester.SplitNamespacedName
