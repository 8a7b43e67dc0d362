package render

import "sigs.k8s.io/yaml"

func jsonToYAML(j []byte) ([]byte, error) { return yaml.JSONToYAML(j) }
