// Package kubeapply server-side applies rendered objects with the dynamic
// client and tells whether a Deployment has rolled out: the two steps every
// installer of manifests here takes (the kubeconfig platform's system, the
// kind add-ons). It imports client-go only, never the harness's packages.
package kubeapply
