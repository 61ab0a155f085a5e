package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func vmiInPhase(phase kubevirtv1.VirtualMachineInstancePhase, conds ...kubevirtv1.VirtualMachineInstanceCondition) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: phase, Conditions: conds}}
}

func deletingVMI() *kubevirtv1.VirtualMachineInstance {
	v := vmiInPhase(kubevirtv1.Running)
	now := metav1.Now()
	v.DeletionTimestamp = &now
	return v
}

func TestDecideVMIAction(t *testing.T) {
	tests := []struct {
		name     string
		strategy kubevirtv1.VirtualMachineRunStrategy
		vmi      *kubevirtv1.VirtualMachineInstance
		blocked  bool
		want     vmiAction
		wantErr  bool
	}{
		{"always creates", kubevirtv1.RunStrategyAlways, nil, false, actionCreate, false},
		{"always blocked waits", kubevirtv1.RunStrategyAlways, nil, true, actionNone, false},
		{"always running keeps", kubevirtv1.RunStrategyAlways, vmiInPhase(kubevirtv1.Running), false, actionNone, false},
		{"always replaces succeeded", kubevirtv1.RunStrategyAlways, vmiInPhase(kubevirtv1.Succeeded), false, actionDelete, false},
		{"always waits for deletion", kubevirtv1.RunStrategyAlways, deletingVMI(), false, actionNone, false},
		{"rerun creates", kubevirtv1.RunStrategyRerunOnFailure, nil, false, actionCreate, false},
		{"rerun replaces failed", kubevirtv1.RunStrategyRerunOnFailure, vmiInPhase(kubevirtv1.Failed), false, actionDelete, false},
		{"rerun keeps succeeded", kubevirtv1.RunStrategyRerunOnFailure, vmiInPhase(kubevirtv1.Succeeded), false, actionNone, false},
		{"halted deletes", kubevirtv1.RunStrategyHalted, vmiInPhase(kubevirtv1.Running), false, actionDelete, false},
		{"halted deleting", kubevirtv1.RunStrategyHalted, deletingVMI(), false, actionNone, false},
		{"halted none", kubevirtv1.RunStrategyHalted, nil, false, actionNone, false},
		{"manual never creates", kubevirtv1.RunStrategyManual, nil, false, actionNone, false},
		{"manual keeps", kubevirtv1.RunStrategyManual, vmiInPhase(kubevirtv1.Running), false, actionNone, false},
		{"once unsupported", kubevirtv1.RunStrategyOnce, nil, false, actionNone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decideVMIAction(tt.strategy, tt.vmi, tt.blocked)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestComputeVMStatus(t *testing.T) {
	now := metav1.Now()
	readyTrue := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}
	unsched := kubevirtv1.VirtualMachineInstanceCondition{Type: condPodScheduled, Status: corev1.ConditionFalse,
		Reason: reasonUnschedulableC, Message: "0/3 nodes are available"}
	block := &startBlock{Printable: kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding, Reason: "ImageNotReady", Message: "image default/x does not exist"}
	tests := []struct {
		name          string
		in            vmStatusInput
		wantPrintable kubevirtv1.VirtualMachinePrintableStatus
		wantCreated   bool
		wantReady     bool
		wantCond      string // "Type=Status:Reason" that must be present
	}{
		{"stopped", vmStatusInput{Strategy: kubevirtv1.RunStrategyHalted}, kubevirtv1.VirtualMachineStatusStopped, false, false, "Ready=False:VMINotExists"},
		{"starting without vmi", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, WantRunning: true}, kubevirtv1.VirtualMachineStatusStarting, false, false, ""},
		{"starting scheduling", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, VMI: vmiInPhase(kubevirtv1.Scheduling)}, kubevirtv1.VirtualMachineStatusStarting, true, false, ""},
		{"unschedulable", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, VMI: vmiInPhase(kubevirtv1.Scheduling, unsched)},
			kubevirtv1.VirtualMachineStatusUnschedulable, true, false, "PodScheduled=False:Unschedulable"},
		{"running ready", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, VMI: vmiInPhase(kubevirtv1.Running, readyTrue)},
			kubevirtv1.VirtualMachineStatusRunning, true, true, "Ready=True:"},
		{"stopping halted", vmStatusInput{Strategy: kubevirtv1.RunStrategyHalted, VMI: vmiInPhase(kubevirtv1.Running, readyTrue)},
			kubevirtv1.VirtualMachineStatusStopping, true, true, ""},
		{"stopping deleting vmi", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, VMI: deletingVMI()},
			kubevirtv1.VirtualMachineStatusStopping, true, false, "Ready=False:"},
		{"terminating", vmStatusInput{Deleting: true, Strategy: kubevirtv1.RunStrategyAlways, VMI: vmiInPhase(kubevirtv1.Running, readyTrue)},
			kubevirtv1.VirtualMachineStatusTerminating, true, true, ""},
		{"blocked", vmStatusInput{Strategy: kubevirtv1.RunStrategyAlways, WantRunning: true, Block: block},
			kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding, false, false, "Ready=False:ImageNotReady"},
		{"invalid spec", vmStatusInput{SpecError: errors.New(`unknown field "spec.runStrtegy"`)},
			printableInvalidSpec, false, false, "Failure=True:InvalidSpec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			st := computeVMStatus(tt.in)
			if st.PrintableStatus != tt.wantPrintable || st.Created != tt.wantCreated || st.Ready != tt.wantReady {
				t.Errorf("printable=%s created=%v ready=%v; want %s %v %v", st.PrintableStatus, st.Created, st.Ready,
					tt.wantPrintable, tt.wantCreated, tt.wantReady)
			}
			if tt.wantCond == "" {
				return
			}
			var found []string
			for _, c := range st.Conditions {
				s := string(c.Type) + "=" + string(c.Status) + ":" + c.Reason
				found = append(found, s)
				if strings.HasPrefix(s, tt.wantCond) {
					return
				}
			}
			t.Errorf("conditions %v lack %s", found, tt.wantCond)
		})
	}
}

func TestComputeVMStatusKeepsTransitionTime(t *testing.T) {
	earlier := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	in := vmStatusInput{Strategy: kubevirtv1.RunStrategyHalted, Now: earlier}
	first := computeVMStatus(in)
	in.Previous, in.Now = first, metav1.Now()
	second := computeVMStatus(in)
	if !second.Conditions[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("transition time moved to %v", second.Conditions[0].LastTransitionTime)
	}
}

func TestNextPhase(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Delays{Schedule: 2 * time.Second, Boot: 3 * time.Second}
	tests := []struct {
		phase    kubevirtv1.VirtualMachineInstancePhase
		elapsed  time.Duration
		want     kubevirtv1.VirtualMachineInstancePhase
		wantWait time.Duration
	}{
		{"", 0, kubevirtv1.Pending, 0},
		{kubevirtv1.Pending, 0, kubevirtv1.Scheduling, 0},
		{kubevirtv1.Scheduling, time.Second, kubevirtv1.Scheduling, time.Second},
		{kubevirtv1.Scheduling, 2 * time.Second, kubevirtv1.Scheduled, 0},
		{kubevirtv1.Scheduled, time.Second, kubevirtv1.Scheduled, 2 * time.Second},
		{kubevirtv1.Scheduled, 5 * time.Second, kubevirtv1.Running, 0},
		{kubevirtv1.Running, time.Hour, kubevirtv1.Running, 0},
		{kubevirtv1.Failed, 0, kubevirtv1.Failed, 0},
	}
	for _, tt := range tests {
		got, wait := nextPhase(tt.phase, base, base.Add(tt.elapsed), d)
		if got != tt.want || wait != tt.wantWait {
			t.Errorf("nextPhase(%q, +%v) = %q, %v; want %q, %v", tt.phase, tt.elapsed, got, wait, tt.want, tt.wantWait)
		}
	}
}

func TestPhaseSince(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))
	t2 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC))
	fallback := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Scheduled}
	enterPhase(st, kubevirtv1.Scheduling, t1)
	enterPhase(st, kubevirtv1.Scheduled, t2)
	if got := phaseSince(st, fallback); !got.Equal(t2.Time) {
		t.Errorf("since = %v, want %v", got, t2)
	}
	st.Phase = kubevirtv1.Running
	if got := phaseSince(st, fallback); !got.Equal(fallback) {
		t.Errorf("since without record = %v, want fallback", got)
	}
}

func TestPlanAddresses(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		agent      bool
		fault      string
		elapsed    time.Duration
		wantReport bool
		wantWait   time.Duration
		wantWhy    string
	}{
		{"agent after delay", true, "", 2 * time.Second, true, 0, ""},
		{"agent before delay", true, "", 500 * time.Millisecond, false, 1500 * time.Millisecond, ""},
		{"no agent", false, "", time.Hour, false, 0, "no agent"},
		{"fault", true, "default/x*", time.Hour, false, 0, "no-ip (pattern default/x*)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planAddresses(tt.agent, "no agent", tt.fault, start, start.Add(tt.elapsed), 2*time.Second)
			if p.Report != tt.wantReport || p.Wait != tt.wantWait || !strings.Contains(p.Why, tt.wantWhy) {
				t.Errorf("got %+v", p)
			}
		})
	}
}

func TestSetVMICondition(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	st := &kubevirtv1.VirtualMachineInstanceStatus{}
	c := kubevirtv1.VirtualMachineInstanceCondition{Type: condPodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "a"}
	if !setVMICondition(st, c, t0) {
		t.Fatal("adding reported no change")
	}
	if setVMICondition(st, c, t1) {
		t.Error("same condition reported a change")
	}
	c.Message = "b"
	if !setVMICondition(st, c, t1) || !st.Conditions[0].LastTransitionTime.Equal(&t0) {
		t.Errorf("message change: %+v", st.Conditions)
	}
	c.Status = corev1.ConditionTrue
	if !setVMICondition(st, c, t1) || !st.Conditions[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("status change: %+v", st.Conditions)
	}
	if !removeVMICondition(st, condPodScheduled) || len(st.Conditions) != 0 {
		t.Errorf("remove: %+v", st.Conditions)
	}
}
