package envoyrls

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"
)

// Config is a loaded set of envoyproxy/ratelimit configuration files:
// one descriptor tree per domain. It is immutable once built, so a Service
// reads it without locks and Load swaps it whole.
type Config struct {
	domains map[string]*node
	files   []string
}

// node is one descriptor of the tree: its children by "key" or
// "key_value" (the form the matcher builds from a request entry), the
// wildcard patterns among them in file order, and its limit if any.
type node struct {
	children map[string]*node
	wild     []wildcard
	limit    *limit
	// share is, for a wildcard descriptor with share_threshold, the value
	// pattern ("files/*") that every value it matches counts under.
	share string
}

// wildcard is a child whose value holds '*', split on '*' at load time.
type wildcard struct {
	key   string
	parts []string
}

// limit is a descriptor's rate_limit after validation.
type limit struct {
	perUnit   uint32
	unit      rlspb.RateLimitResponse_RateLimit_Unit
	name      string
	unlimited bool
	shadow    bool
	quota     bool
	replaces  []string
	algo      *algoSpec // nil: envoyproxy/ratelimit's fixed window
	path      string    // "domain.key_value.key": where it sits, for metrics and messages
	detailed  bool      // detailed_metric
	// levels, when detailed_metric or a value_to_metric on the way asks
	// for per-value series: each level's composite key and whether the
	// request's own value names it in the series (nil: no such series).
	levels     []metricLevel
	current    *rlspb.RateLimitResponse_RateLimit
	unitLength int64 // seconds in unit
}

// File is one configuration file: its name (shown in errors) and content.
type File struct {
	Name string
	Data []byte
}

// Domains returns the configured domains, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Files returns the names of the files the Config was built from.
func (c *Config) Files() []string { return append([]string(nil), c.files...) }

// LoadPath reads a configuration file, or every *.yaml and *.yml file of a
// directory (not its subdirectories, not names starting with '.'), and
// builds a Config from them. A directory with no such file is an error.
func LoadPath(path string) (*Config, error) {
	names, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	files := make([]File, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: n, Data: b})
	}
	return Parse(files...)
}

// configFiles lists the files LoadPath reads for path, sorted.
func configFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !isYAMLName(n) {
			continue
		}
		names = append(names, filepath.Join(path, n))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml or *.yml file", path)
	}
	return names, nil
}

func isYAMLName(n string) bool {
	return strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")
}

// Parse builds a Config from files. Every problem of every file is
// reported (errors.Join of *ConfigError), and then no Config is returned.
func Parse(files ...File) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	var errs []error
	for _, f := range files {
		c.files = append(c.files, f.Name)
		p := &parser{file: f.Name}
		root, ok := p.decode(f.Data)
		if ok {
			p.domain(c, root)
		}
		errs = append(errs, p.errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// ConfigError is one problem of a configuration file: the file, where in
// it (a domain and descriptor path, or a line), and what is wrong.
type ConfigError struct {
	File  string
	Where string
	Msg   string
}

func (e *ConfigError) Error() string {
	if e.Where == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Where + ": " + e.Msg
}

// parser collects the problems of one file.
type parser struct {
	file string
	errs []error
}

func (p *parser) fail(where, format string, args ...any) {
	p.errs = append(p.errs, &ConfigError{File: p.file, Where: where, Msg: fmt.Sprintf(format, args...)})
}

// decode checks every mapping key of the document against the known
// field names (as envoyproxy/ratelimit does, at any depth), then decodes
// it. ok is false when the file cannot be read further.
func (p *parser) decode(data []byte) (root yamlRoot, ok bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.fail("", "not YAML: %v", err)
		return root, false
	}
	p.checkKeys(&doc)
	if len(p.errs) > 0 {
		return root, false
	}
	if err := doc.Decode(&root); err != nil {
		p.fail("", "%v", err)
		return root, false
	}
	return root, true
}

// checkKeys refuses an unknown key, a non-string key, and a list whose
// items are not mappings; metadata's content is free-form.
func (p *parser) checkKeys(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			p.checkKeys(c)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind != yaml.MappingNode {
				p.fail(fmt.Sprintf("line %d", c.Line), "a list holds %s; want mappings", kindName(c))
				continue
			}
			p.checkKeys(c)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				p.fail(fmt.Sprintf("line %d", k.Line), "key %q is not a string", k.Value)
				continue
			}
			if !knownKeys[k.Value] {
				p.fail(fmt.Sprintf("line %d", k.Line), "unknown key %q", k.Value)
				continue
			}
			if k.Value != "metadata" {
				p.checkKeys(v)
			}
		}
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	case yaml.SequenceNode:
		return "a list"
	}
	return "an alias"
}

// knownKeys are the field names a file may use, at any depth: those of
// envoyproxy/ratelimit and, inside rate_limit, flowgate's algorithm fields.
var knownKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true, "metadata": true,
	"algorithm": true, "burst": true, "warmup": true, "cold_factor": true, "buckets": true,
	"lease": true, "period": true, "max_batch": true, "settle": true, "max_debt": true,
}

type yamlRoot struct {
	Domain      string     `yaml:"domain"`
	Descriptors []yamlDesc `yaml:"descriptors"`
}

type yamlDesc struct {
	Key            string     `yaml:"key"`
	Value          string     `yaml:"value"`
	RateLimit      *yamlLimit `yaml:"rate_limit"`
	Descriptors    []yamlDesc `yaml:"descriptors"`
	ShadowMode     bool       `yaml:"shadow_mode"`
	QuotaMode      bool       `yaml:"quota_mode"`
	DetailedMetric bool       `yaml:"detailed_metric"`
	ValueToMetric  bool       `yaml:"value_to_metric"`
	ShareThreshold bool       `yaml:"share_threshold"`
	Metadata       yaml.Node  `yaml:"metadata"`
}

type yamlLimit struct {
	RequestsPerUnit uint32 `yaml:"requests_per_unit"`
	Unit            string `yaml:"unit"`
	Unlimited       bool   `yaml:"unlimited"`
	Name            string `yaml:"name"`
	Replaces        []struct {
		Name string `yaml:"name"`
	} `yaml:"replaces"`
	yamlAlgo `yaml:",inline"`
}
