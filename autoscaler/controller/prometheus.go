package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// PrometheusSource is the MetricSource of a Prometheus server, through
// client_golang's api/v1: an instant query at the time of the call. A vector
// gives one value per series, a scalar one value; a range vector or a
// string is an error (an hpa query must be an instant vector or a scalar,
// as KEDA's Prometheus scaler requires). Warnings are ignored.
type PrometheusSource struct {
	url string
	api promv1.API
	tr  *http.Transport
}

var _ MetricSource = (*PrometheusSource)(nil)

// NewPrometheusSource returns a source for the server at baseURL
// (http://HOST:PORT, with any path prefix).
func NewPrometheusSource(baseURL string) (*PrometheusSource, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	tr.IdleConnTimeout = 30 * time.Second
	c, err := api.NewClient(api.Config{Address: strings.TrimRight(baseURL, "/"), RoundTripper: tr})
	if err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", baseURL, err)
	}
	return &PrometheusSource{url: baseURL, api: promv1.NewAPI(c), tr: tr}, nil
}

// URL is the server's base URL.
func (p *PrometheusSource) URL() string { return p.url }

// Query runs query now.
func (p *PrometheusSource) Query(ctx context.Context, query string) ([]float64, error) {
	v, _, _, err := p.api.Query(ctx, query, time.Now())
	if err != nil {
		var pe *promv1.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("prometheus query: %s: %s", pe.Type, pe.Msg)
		}
		return nil, fmt.Errorf("prometheus query: %w", err)
	}
	return Values(v)
}

// Values flattens an instant query's result: one value per series of a
// vector, the value of a scalar.
func Values(v model.Value) ([]float64, error) {
	switch r := v.(type) {
	case model.Vector:
		out := make([]float64, 0, len(r))
		for _, s := range r {
			out = append(out, float64(s.Value))
		}
		return out, nil
	case *model.Scalar:
		return []float64{float64(r.Value)}, nil
	case nil:
		return nil, errors.New("prometheus query: empty result")
	default:
		return nil, fmt.Errorf("prometheus query: result type %s, want an instant vector or a scalar", v.Type())
	}
}

// Close releases idle connections.
func (p *PrometheusSource) Close() { p.tr.CloseIdleConnections() }

// CheckQuery asks the server whether query parses and gives an instant
// vector or a scalar (KEDA's Prometheus scaler takes nothing else): a
// *ValidationError (field hpa.query) with Prometheus' own message when the
// server answers bad_data or the result is of another type. It answers nil
// when the server cannot be asked (unreachable, timed out, another error):
// the query may be fine, and the hpa round reports a failing one anyway.
func (p *PrometheusSource) CheckQuery(ctx context.Context, query string) error {
	v, _, _, err := p.api.Query(ctx, query, time.Now())
	var pe *promv1.Error
	switch {
	case errors.As(err, &pe) && pe.Type == promv1.ErrBadData:
		return &ValidationError{Field: "hpa.query", Reason: "Prometheus refuses it: " + pe.Msg}
	case err != nil:
		return nil
	}
	if _, err := Values(v); err != nil {
		return &ValidationError{Field: "hpa.query", Reason: strings.TrimPrefix(err.Error(), "prometheus query: ")}
	}
	return nil
}
