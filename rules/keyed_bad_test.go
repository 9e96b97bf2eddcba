package rules

// The fields of parameters, items, lists and associated resources, each
// where it does not belong or with a bad value. Added to badDocs, so the
// parser and the schema are both held to them.
func init() {
	const r = `{"rules": [{"id": "k", "resource": "r", `
	badDocs = append(badDocs, []struct {
		name string
		doc  string
		want []problem
	}{
		{"param without level param", r + `"param": "tenant", "algorithm": "fixed_window", "limit": 1}]}`,
			[]problem{{`rules[0] (id "k"): param`, "only for param level rules"}}},
		{"param level without param", r + `"level": "param", "algorithm": "fixed_window", "limit": 1}]}`,
			[]problem{{`rules[0] (id "k"): param`, "required for param level rules"}}},
		{"param empty", r + `"level": "param", "param": "", "algorithm": "fixed_window", "limit": 1}]}`,
			[]problem{{`rules[0] (id "k"): param`, "required for param level rules"}}},
		{"items on global", r + `"algorithm": "fixed_window", "limit": 1, "items": {"a": 2}}]}`,
			[]problem{{`rules[0] (id "k"): items`, "only for user, ip and param levels"}}},
		{"items empty", r + `"level": "user", "algorithm": "fixed_window", "limit": 1, "items": {}}]}`,
			[]problem{{`rules[0] (id "k"): items`, "must not be empty"}}},
		{"item limit zero", r + `"level": "user", "algorithm": "fixed_window", "limit": 1, "items": {"a": 0}}]}`,
			[]problem{{`rules[0] (id "k"): items["a"]`, "must be > 0"}}},
		{"item limit fraction on concurrency", r + `"level": "param", "param": "p", "algorithm": "concurrency", "limit": 1, "items": {"a": 2.5}}]}`,
			[]problem{{`rules[0] (id "k"): items["a"]`, "must be a whole number for concurrency"}}},
		{"item limit a string", r + `"level": "user", "algorithm": "fixed_window", "limit": 1, "items": {"a": "2"}}]}`,
			[]problem{{`rules[0] (id "k"): items["a"]`, "must be a number"}}},
		{"items on a list", r + `"level": "user", "algorithm": "deny", "values": ["a"], "items": {"a": 2}}]}`,
			[]problem{{`rules[0] (id "k"): items`, "not for allow and deny rules"}}},
		{"values on a limit", r + `"level": "user", "algorithm": "fixed_window", "limit": 1, "values": ["a"]}]}`,
			[]problem{{`rules[0] (id "k"): values`, "only for allow and deny rules"}}},
		{"list without values", r + `"level": "user", "algorithm": "allow"}]}`,
			[]problem{{`rules[0] (id "k"): values`, "required"}}},
		{"list with no values", r + `"level": "user", "algorithm": "allow", "values": []}]}`,
			[]problem{{`rules[0] (id "k"): values`, "required for allow rules (at least one value)"}}},
		{"list on global", r + `"algorithm": "deny", "values": ["a"]}]}`,
			[]problem{{`rules[0] (id "k"): level`, "deny rules need an identity"}}},
		{"list with limit", r + `"level": "ip", "algorithm": "deny", "values": ["10.0.0.0/8"], "limit": 5, "window": "1s"}]}`,
			[]problem{{`rules[0] (id "k"): limit`, "not for allow and deny rules"}, {`rules[0] (id "k"): window`, "not for allow and deny rules"}}},
		{"list with cluster", r + `"level": "ip", "algorithm": "deny", "values": ["10.0.0.0/8"], "cluster": {}}]}`,
			[]problem{{`rules[0] (id "k"): cluster`, "not for allow and deny rules"}}},
		{"ip list bad values", r + `"level": "ip", "algorithm": "deny", "values": ["10.0.0.1/8", "nope", "2001:db8::/32", "2001:db8::/32"]}]}`,
			[]problem{{`rules[0] (id "k"): values[0]`, "host bits set (did you mean 10.0.0.0/8?)"},
				{`rules[0] (id "k"): values[1]`, "not an IP address or CIDR prefix"},
				{`rules[0] (id "k"): values[3]`, "duplicate of values[2]"}}},
		{"values not strings", r + `"level": "user", "algorithm": "allow", "values": ["a", 3]}]}`,
			[]problem{{`rules[0] (id "k"): values[1]`, "must be a string"}}},
		{"refResource on user level", r + `"refResource": "o", "level": "user", "algorithm": "fixed_window", "limit": 1}]}`,
			[]problem{{`rules[0] (id "k"): refResource`, "only for global level rules"}}},
		{"refResource with maxWait and cluster", r + `"refResource": "o", "algorithm": "fixed_window", "limit": 1, "maxWait": "0s", "cluster": {}}]}`,
			[]problem{{`rules[0] (id "k"): maxWait`, "not for refResource rules"}, {`rules[0] (id "k"): cluster`, "not for refResource rules"}}},
		{"refResource on concurrency", r + `"refResource": "o", "algorithm": "concurrency", "limit": 1}]}`,
			[]problem{{`rules[0] (id "k"): refResource`, "only for rate rules"}}},
		{"refResource on a list", r + `"refResource": "o", "level": "user", "algorithm": "allow", "values": ["a"]}]}`,
			[]problem{{`rules[0] (id "k"): refResource`, "not for allow and deny rules"}}},
	}...)
}
