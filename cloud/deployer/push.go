package deployer

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/scaleproof/scaleproof/cloud"
)

// push writes the image to reg.Repository:tag with reg.Auth
// (go-containerregistry remote.Write) and returns that reference.
func push(ctx context.Context, image ImageFunc, reg cloud.Registry) (string, error) {
	img, tag, err := image(ctx)
	if err != nil {
		return "", err
	}
	ref := reg.Repository + ":" + tag
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("push image: %q: %w", ref, err)
	}
	auth := reg.Auth
	if auth == nil {
		auth = authn.Anonymous
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	if err := remote.Write(t, img, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(tr)); err != nil {
		return "", fmt.Errorf("push image %s: %w", ref, err)
	}
	return ref, nil
}
