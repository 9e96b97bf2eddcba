package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Alert is one alert as /api/v1/alerts lists it.
type Alert struct {
	Labels map[string]string
	State  string // "pending" or "firing"
}

// envelope is the API's answer around every result.
type envelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func (s *Server) get(ctx context.Context, path string, q url.Values) (json.RawMessage, error) {
	u := s.URL + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d, not JSON: %.200s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, env.ErrorType, env.Error)
	}
	return env.Data, nil
}

// Query evaluates expr now. An expression Prometheus refuses (a syntax
// error, an unknown function) is an error; a vector or scalar result is
// returned as samples.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	data, err := s.get(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	switch res.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(res.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := number(v.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Labels: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(res.Result, &sc); err != nil {
			return nil, err
		}
		f, err := number(sc[1])
		if err != nil {
			return nil, err
		}
		return []Sample{{Value: f}}, nil
	}
	return nil, fmt.Errorf("query %q: result type %s", expr, res.ResultType)
}

// number reads a sample value, which the API sends as a string.
func number(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v: not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// Alerts lists the pending and firing alerts.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	data, err := s.get(ctx, "/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	return res.Alerts, nil
}

// RuleHealth returns, per rule name, the health Prometheus gives it after
// its last evaluation ("ok", "err" or "unknown") and the error if any.
func (s *Server) RuleHealth(ctx context.Context) (map[string]string, error) {
	data, err := s.get(ctx, "/api/v1/rules", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r.Health
			if r.LastError != "" {
				out[r.Name] += ": " + r.LastError
			}
		}
	}
	return out, nil
}

// QueryRange evaluates expr at every step from start to end and returns, per
// series, its values (NaN where the expression had no number). A refused
// expression is an error.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	data, err := s.get(ctx, "/api/v1/query_range", q)
	if err != nil {
		return nil, err
	}
	var res struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(res.Result))
	for _, r := range res.Result {
		sr := Series{Labels: r.Metric}
		for _, v := range r.Values {
			f, err := number(v[1])
			if err != nil {
				return nil, err
			}
			sr.Values = append(sr.Values, f)
		}
		out = append(out, sr)
	}
	return out, nil
}

// Series is one series of a range query.
type Series struct {
	Labels map[string]string
	Values []float64
}

// HasNumber reports whether any value of any series is a number (not NaN).
func HasNumber(ss []Series) bool {
	for _, s := range ss {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// WaitFiring polls Alerts until an alert named name is firing and returns
// it, or returns ctx's error (with the last answer) when ctx ends first.
func (s *Server) WaitFiring(ctx context.Context, name string) (Alert, error) {
	var last []Alert
	var lastErr error
	for {
		last, lastErr = s.Alerts(ctx)
		for _, a := range last {
			if a.Labels["alertname"] == name && a.State == "firing" {
				return a, nil
			}
		}
		select {
		case <-ctx.Done():
			return Alert{}, fmt.Errorf("%s not firing: %w (alerts %+v, last error %v)", name, ctx.Err(), last, lastErr)
		case <-time.After(250 * time.Millisecond): // polling an external evaluation
		}
	}
}
