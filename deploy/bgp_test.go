package deploy

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestHelmBaremetalBGP: with baremetal.bgp the chart passes the typed BGP
// values to tfccm (baremetal.json, never HCL), mounts the password Secret
// at /etc/tfccm/bgp in the CCM and the runner Jobs, and names the password
// only by that file; without bgp nothing of it is rendered.
func TestHelmBaremetalBGP(t *testing.T) {
	objs := objects(t, "baremetal-bgp")
	var cm *corev1.ConfigMap
	var spec corev1.PodSpec
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if v.Name == "tfccm-cloud-config" {
				cm = v
			}
		case *appsv1.Deployment:
			spec = v.Spec.Template.Spec
		}
	}
	if cm == nil {
		t.Fatal("no cloud config")
	}
	var values struct {
		BGP map[string]any `json:"bgp"`
	}
	if err := json.Unmarshal([]byte(cm.Data["baremetal.json"]), &values); err != nil {
		t.Fatalf("baremetal.json: %v", err)
	}
	if values.BGP["passwordFile"] != "/etc/tfccm/bgp/password" || values.BGP["asn"] != float64(64513) {
		t.Errorf("baremetal.json's bgp = %v, want asn 64513 and passwordFile /etc/tfccm/bgp/password", values.BGP)
	}
	if !strings.Contains(cm.Data["cloud.hcl"], `"/etc/tfccm/bgp" = "tfccm-bgp"`) {
		t.Errorf("the runner Jobs do not mount the password Secret (secret_mounts):\n%s", cm.Data["cloud.hcl"])
	}
	mounted := false
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == "bgp-password" && m.MountPath == "/etc/tfccm/bgp" && m.ReadOnly)
		}
	}
	secret := false
	for _, v := range spec.Volumes {
		secret = secret || (v.Name == "bgp-password" && v.Secret != nil && v.Secret.SecretName == "tfccm-bgp")
	}
	if !mounted || !secret {
		t.Errorf("the CCM does not mount Secret tfccm-bgp read-only at /etc/tfccm/bgp (mount %v, volume %v)", mounted, secret)
	}

	// The plain baremetal case: no bgp key, no mount.
	for _, o := range objects(t, "baremetal") {
		if v, ok := o.(*corev1.ConfigMap); ok && strings.Contains(v.Data["baremetal.json"], "bgp") {
			t.Errorf("baremetal.json without baremetal.bgp has a bgp key:\n%s", v.Data["baremetal.json"])
		}
		if d, ok := o.(*appsv1.Deployment); ok {
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "bgp-password" {
					t.Error("a bgp-password volume without baremetal.bgp")
				}
			}
		}
	}
}
