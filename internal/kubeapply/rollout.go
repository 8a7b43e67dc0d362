package kubeapply

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// RolledOut reports whether d's newest ReplicaSet has all of
// spec.replicas (default 1) updated and ready, with no old pods left and
// the controller having seen the latest spec (observedGeneration), and
// describes the status either way (for an error: generations, counts, and
// every condition that is not True). Availability, which minReadySeconds
// delays, is not required: a ready pod already serves.
func RolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	status := "observed generation " + strconv.FormatInt(s.ObservedGeneration, 10) + "/" + strconv.FormatInt(d.Generation, 10) +
		", updated " + strconv.Itoa(int(s.UpdatedReplicas)) + ", ready " + strconv.Itoa(int(s.ReadyReplicas)) +
		", replicas " + strconv.Itoa(int(s.Replicas)) + " of " + strconv.Itoa(int(want))
	for _, c := range s.Conditions {
		if c.Status != corev1.ConditionTrue {
			status += "; " + string(c.Type) + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message
		}
	}
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.Replicas == want, status
}
