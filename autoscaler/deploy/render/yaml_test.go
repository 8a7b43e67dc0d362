package render

// YAML renders p as one multi-document YAML stream (for `kubectl apply -f -`
// and for reading what would be applied).
func YAML(p Params) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	objs, err := Render(p)
	if err != nil {
		return nil, err
	}
	return ObjectsYAML(objs)
}
