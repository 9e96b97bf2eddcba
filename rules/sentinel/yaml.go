package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// isYAML tells a YAML rule file from a JSON one: by its extension, or by
// content that cannot start a JSON document (a YAML "- resource: ..."
// list). A JSON file keeps the JSON reader and its byte offsets.
func isYAML(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	return len(data) > 0 && data[0] != '[' && data[0] != '{'
}

// yamlToJSON turns a YAML rule array into the JSON the readers take, so
// that one set of readers (and one set of error messages) serves both.
// sentinel-golang's rule structs have JSON names only; YAML files use
// the same names.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return []byte("[]"), nil
	}
	if _, ok := v.([]any); !ok {
		return nil, fmt.Errorf("the document is a %s, not a sequence", yamlKind(v))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plain makes v encodable as JSON: mappings with non-string keys (a
// specificItems of numbers) get their keys as text.
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = plain(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	}
	return v
}

func yamlKind(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "mapping"
	}
	return "scalar"
}
