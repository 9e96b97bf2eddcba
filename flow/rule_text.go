package flow

import "fmt"

// Levels lists the levels a rule may have, in JSON order.
func Levels() []Level { return []Level{LevelGlobal, LevelUser, LevelIP, LevelParam} }

// Algorithms lists every algorithm.
func Algorithms() []Algorithm {
	out := make([]Algorithm, numAlgorithms)
	for i := range out {
		out[i] = Algorithm(i)
	}
	return out
}

// ParseLevel parses a level's JSON name ("global", "user", "ip", "param"). "system"
// is not a rule level and is refused.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels() {
		if levelNames[l] == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown level %q (want global, user, ip or param)", s)
}

// ParseAlgorithm parses an algorithm's JSON name, e.g. "token_bucket".
func ParseAlgorithm(s string) (Algorithm, error) {
	for i, n := range algorithmNames {
		if n == s {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want one of %v)", s, algorithmNames)
}

// MarshalText returns the level's JSON name.
func (l Level) MarshalText() ([]byte, error) {
	if l >= NumLevels {
		return nil, fmt.Errorf("invalid level %d", uint8(l))
	}
	return []byte(levelNames[l]), nil
}

// UnmarshalText parses a level's JSON name; see ParseLevel.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// MarshalText returns the algorithm's JSON name.
func (a Algorithm) MarshalText() ([]byte, error) {
	if a >= numAlgorithms {
		return nil, fmt.Errorf("invalid algorithm %d", uint8(a))
	}
	return []byte(algorithmNames[a]), nil
}

// UnmarshalText parses an algorithm's JSON name; see ParseAlgorithm.
func (a *Algorithm) UnmarshalText(b []byte) error {
	v, err := ParseAlgorithm(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
