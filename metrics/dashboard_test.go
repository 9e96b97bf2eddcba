package metrics

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const dashboardPath = "dashboards/flowgate.json"

type dashboard struct {
	ID         *int   `json:"id"`
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage
			Datasource *datasourceRef
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Datasource  *datasourceRef `json:"datasource"`
	Panels      []panel        `json:"panels"` // a row's panels
	FieldConfig struct {
		Defaults struct {
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(readFile(t, dashboardPath)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// flatPanels returns every panel, rows' panels included, rows left out.
func flatPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		if p.Type == "row" {
			out = append(out, flatPanels(p.Panels)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func TestDashboardImportable(t *testing.T) {
	d := loadDashboard(t)
	if d.ID != nil {
		t.Errorf("id = %d, want null so that import creates it", *d.ID)
	}
	if d.UID != "flowgate-overview" {
		t.Errorf("uid = %q, want the stable flowgate-overview", d.UID)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s: datasource %+v, want ${datasource}", v.Name, v.Datasource)
		}
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no datasource variable of type datasource: %v", vars)
	}
	if vars["resource"] != "query" {
		t.Errorf("no resource query variable: %v", vars)
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
	}
	for _, p := range flatPanels(d.Panels) {
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s: datasource %+v, want uid ${datasource}", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
}

// TestDashboardQueriesUseExportedMetrics: no panel can silently show
// nothing because of a misspelt metric or label.
func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	exp := exported(t)
	d := loadDashboard(t)
	panels := flatPanels(d.Panels)
	if len(panels) < 10 {
		t.Fatalf("%d panels, want the full dashboard", len(panels))
	}
	for _, p := range panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, prob := range checkQuery(exp, tg.Expr) {
				t.Errorf("panel %q target %s: %s\n\t%s", p.Title, tg.RefID, prob, tg.Expr)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query: %v", v.Name, err)
		}
		for _, prob := range checkQuery(exp, q.Query) {
			t.Errorf("variable %s: %s\n\t%s", v.Name, prob, q.Query)
		}
	}
}

// The rejection-ratio panel draws the alert rule's threshold.
func TestDashboardDrawsAlertThreshold(t *testing.T) {
	rules := alertRules(t)
	m := regexp.MustCompile(`\)\s*>\s*([0-9.]+)`).FindStringSubmatch(rules["FlowgateHighRejectionRatio"].expr)
	if m == nil {
		t.Fatalf("no threshold in FlowgateHighRejectionRatio: %s", rules["FlowgateHighRejectionRatio"].expr)
	}
	threshold, _ := strconv.ParseFloat(m[1], 64)
	for _, p := range flatPanels(loadDashboard(t).Panels) {
		if !strings.HasPrefix(p.Title, "Rejection ratio") {
			continue
		}
		for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
			if s.Color == "red" && s.Value != nil && *s.Value == threshold {
				return
			}
		}
		t.Fatalf("panel %q: thresholds %+v, want a red line at %v", p.Title, p.FieldConfig.Defaults.Thresholds.Steps, threshold)
	}
	t.Fatal("no rejection ratio panel")
}
